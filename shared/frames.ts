/**
 * Link frames: what travels between the worker and a sidecar on one link. Text frames, one JSON
 * object each, with a protocol version. The worker opens channels; the sidecar answers them.
 *
 * The JSON-RPC payload of `channel-message` is checked only for being an object here: the MCP
 * endpoint at either end validates it with the SDK's schema, so it is parsed once per hop.
 * Frames are read by `link/frame-reader.ts` and sent by `link/link-endpoint.ts`; both count the
 * size limit in UTF-8 bytes (`exceeds`).
 *
 * @module
 */
import { z } from 'zod';
import { FAILURE_REASONS } from './errors.ts';
import { McpConnectionRequestSchema } from './connection-request.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export const LINK_PROTOCOL_VERSION = 1;
/** Largest frame either side sends or accepts, in UTF-8 bytes; a larger message fails loudly, never truncated. */
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
