/**
 * Link frames: what travels between the worker and a sidecar on one link. Text frames, one JSON
 * object each, with a protocol version. The worker opens channels; the sidecar answers them.
 *
 * The JSON-RPC payload of `channel-message` is checked only for being an object here: the MCP
 * endpoint at either end validates it with the SDK's schema, so it is parsed once per hop.
 *
 * @module
 */
import { z } from 'zod';
import { FAILURE_REASONS, WireError } from './errors.ts';
import { McpConnectionRequestSchema } from './connection-request.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { parseWith, ValidationError } from './validation.ts';

export const LINK_PROTOCOL_VERSION = 1;
/** Largest frame either side sends or accepts; a larger message fails loudly, never truncated. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

const V = z.literal(LINK_PROTOCOL_VERSION);
const ChannelId = z.number().int().min(1).max(2 ** 31);
const Reason = z.enum(FAILURE_REASONS);
const Message = z.string().max(2000);

export const FrameSchema = z.discriminatedUnion('type', [
  z.strictObject({ v: V, type: z.literal('channel-open'), channel: ChannelId, request: z.unknown() }),
  z.strictObject({ v: V, type: z.literal('channel-open-ack'), channel: ChannelId }),
  z.strictObject({ v: V, type: z.literal('channel-open-error'), channel: ChannelId, reason: Reason, message: Message }),
  z.strictObject({
    v: V,
    type: z.literal('channel-message'),
    channel: ChannelId,
    message: z.custom<JSONRPCMessage>((m) => typeof m === 'object' && m !== null && !Array.isArray(m), 'must be a JSON-RPC message object'),
  }),
  z.strictObject({ v: V, type: z.literal('channel-close'), channel: ChannelId, reason: Reason.optional(), message: Message.optional() }),
  z.strictObject({ v: V, type: z.literal('keepalive'), id: z.number().int().nonnegative() }),
  z.strictObject({ v: V, type: z.literal('keepalive-reply'), id: z.number().int().nonnegative() }),
  z.strictObject({ v: V, type: z.literal('link-close'), reason: Reason.optional(), message: Message }),
]);

export type Frame = z.infer<typeof FrameSchema>;
export type FrameOf<T extends Frame['type']> = Extract<Frame, { type: T }>;

/** The request inside a channel-open frame is validated separately, by the host that answers it. */
export { McpConnectionRequestSchema };

/** Decodes one text frame. Throws `ValidationError` for bad JSON, bad shape, or an oversized frame. */
export function decodeFrame(text: string): Frame {
  if (text.length > MAX_FRAME_BYTES) {
    throw new ValidationError('link frame', [{ path: '(root)', message: `frame of ${text.length} characters exceeds the ${MAX_FRAME_BYTES} byte limit` }]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ValidationError('link frame', [{ path: '(root)', message: 'not valid JSON' }]);
  }
  return parseWith(FrameSchema, json, 'link frame');
}

/** Encodes one frame. Throws `WireError('invalid-request')` when it would exceed the frame limit. */
export function encodeFrame(frame: Frame): string {
  const text = JSON.stringify(frame);
  if (text.length > MAX_FRAME_BYTES) {
    throw new WireError('invalid-request', `Message too large for the link: ${text.length} bytes exceeds the ${MAX_FRAME_BYTES} byte limit`);
  }
  return text;
}
