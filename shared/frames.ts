/**
 * Link frames: what travels between the worker and a sidecar on one link. Text frames, one JSON
 * object each, with a protocol version. The worker opens channels; the sidecar answers them.
 *
 * The JSON-RPC payload of `channel-message` is checked only for being an object here: the MCP
 * endpoint at either end validates it with the SDK's schema, so it is parsed once per hop.
 * Frames are read by `link/frame-reader.ts` and sent by `link/link-endpoint.ts`; both count the
 * size limit in UTF-8 bytes (`exceeds`).
 *
 * A link opens with the handshake of `link/link-handshake.ts`: the worker's `link-challenge`, the
 * host's `link-proof`, the worker's `link-accepted` (or a `link-close` with reason
 * `unauthorized`). Only then do channel and keepalive frames flow; a handshake frame after it is
 * malformed.
 *
 * @module
 */
import * as z from './zod.ts';
import { FAILURE_REASONS } from './errors.ts';
import { mcpConnectionRequestSchema } from './connection-request.ts';
import { hostExpectationsSchema } from './link/host-expectations.ts';
import { hostRosterSchema } from './link/host-roster.ts';
import { NONCE_PATTERN, SIGNATURE_PATTERN } from './link/link-identity.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export const LINK_PROTOCOL_VERSION = 1;
/** Largest frame either side sends or accepts, in UTF-8 bytes; a larger message fails loudly, never truncated. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** Longest `message` a frame carries; longer ones are clipped before they are sent (`clipFrameMessage`). */
export const MAX_FRAME_MESSAGE_CHARS = 2000;

/** The pieces the frame schemas share, built with the first of them. */
const parts = z.lazily(() => ({
  V: z.literal(LINK_PROTOCOL_VERSION),
  ChannelId: z.number().check(z.int(), z.gte(1), z.lte(2 ** 31)),
  Reason: z.enum(FAILURE_REASONS),
  Message: z.string().check(z.maxLength(MAX_FRAME_MESSAGE_CHARS)),
  /** A worker origin as signed (`canonicalOrigin`): a host name or bracketed IPv6 literal, maybe a port. */
  Origin: z.string().check(z.regex(/^[a-z0-9.\-[\]:]{1,300}$/, 'must be a lowercase host[:port]')),
  JsonRpcObject: z.custom<JSONRPCMessage>((m) => typeof m === 'object' && m !== null && !Array.isArray(m), 'must be a JSON-RPC message object'),
  /**
   * On a `channel-message` or `channel-reply` from the host: the host wrote this answer itself, in
   * the server's place (`link/link-features.ts`, `host-answers`); only on a channel whose open asked
   * for it. A server writes the message, never the frame, so it cannot set this.
   */
  Own: z.literal(true),
}));

export const frameSchema = z.lazily(() => {
  const { V, ChannelId, Reason, Message, Origin, JsonRpcObject, Own } = parts();
  return z.discriminatedUnion('type', [
    // `first`: the channel's first message in the open's own frame, sent only to a host that
    // announced `open-first` (`link/link-features.ts`): an older host's strict schema refuses it.
    // `reply`: the worker reads `channel-reply` on this channel, asked only of a host that announced
    // `open-reply`, and only with `first`.
    // `own`: the worker reads `own` on this channel's messages, asked only of a host that announced
    // `host-answers`.
    z.strictObject({ v: V, type: z.literal('channel-open'), channel: ChannelId, request: z.unknown(), first: z.optional(JsonRpcObject), reply: z.optional(z.literal(true)), own: z.optional(Own) }),
    z.strictObject({ v: V, type: z.literal('channel-open-ack'), channel: ChannelId }),
    // The channel's last message and its orderly close, acking its open if that has not gone: one
    // frame where three went (`open-reply`).
    z.strictObject({ v: V, type: z.literal('channel-reply'), channel: ChannelId, message: JsonRpcObject, own: z.optional(Own) }),
    z.strictObject({ v: V, type: z.literal('channel-open-error'), channel: ChannelId, reason: Reason, message: Message }),
    z.strictObject({
      v: V,
      type: z.literal('channel-message'),
      channel: ChannelId,
      message: JsonRpcObject,
      own: z.optional(Own),
    }),
    z.strictObject({ v: V, type: z.literal('channel-close'), channel: ChannelId, reason: z.optional(Reason), message: z.optional(Message) }),
    z.strictObject({ v: V, type: z.literal('keepalive'), id: z.number().check(z.int(), z.nonnegative()) }),
    z.strictObject({ v: V, type: z.literal('keepalive-reply'), id: z.number().check(z.int(), z.nonnegative()) }),
    z.strictObject({ v: V, type: z.literal('link-close'), reason: z.optional(Reason), message: Message }),
    z.strictObject({ v: V, type: z.literal('link-challenge'), nonce: z.string().check(z.regex(NONCE_PATTERN, 'must be 32 bytes, base64url')) }),
    // `origin` is what the host signed, sent so a refusal can say so; the worker checks its own.
    z.strictObject({ v: V, type: z.literal('link-proof'), origin: Origin, signature: z.string().check(z.regex(SIGNATURE_PATTERN, 'must be a 64-byte Ed25519 signature, base64url')) }),
    // `expects` only on a doctor's probe: what the worker expects of this host (`link/host-expectations.ts`).
    // `paced`: both ends send large frames in pieces (`channel-part`) and acknowledge what they read
    // (`link-ack`), said only to a host that announced `paced` (`link/link-features.ts`): an older
    // host's strict schema refuses the key.
    z.strictObject({ v: V, type: z.literal('link-accepted'), expects: z.optional(hostExpectationsSchema()), paced: z.optional(z.literal(true)) }),
    // Either end of a paced link: it has read `frames` more of the other's frames since its last ack
    // (`link/link-sender.ts`). A count since the last, not since the start: a Durable Object's
    // endpoint is rebuilt when it wakes, and acks all it read before it may sleep.
    z.strictObject({ v: V, type: z.literal('link-ack'), frames: z.number().check(z.int(), z.gte(1), z.lte(2 ** 31)) }),
    // Worker → host, to a host that announced `roster`: the agents it routes to this host, each
    // with the servers it may open there (`link/host-roster.ts`); the host ends what it keeps
    // ready for anyone else.
    z.strictObject({ v: V, type: z.literal('link-roster'), agents: hostRosterSchema() }),
  ]);
});

export type Frame = z.infer<ReturnType<typeof frameSchema>>;

/**
 * A piece of the text of one large `channel-open`, `channel-message` or `channel-reply` frame on
 * `channel`, in order; `last` on the final one, after which the pieces joined are read as that
 * frame. Sent only where the worker's `link-accepted` said `paced` (`link/link-sender.ts`).
 *
 * Not a JSON object as other frames are: this header, as JSON, then a newline, then the piece as
 * it is, which no other frame holds (JSON.stringify writes none). Carried inside a JSON string,
 * every quote of the JSON it is a piece of was escaped and read back: 45 ms more on the host and
 * 38 ms more on the worker for a 15 MB answer, more than the answer's own parse.
 */
export const channelPartSchema = z.lazily(() => {
  const { V, ChannelId } = parts();
  return z.strictObject({ v: V, type: z.literal('channel-part'), channel: ChannelId, last: z.optional(z.literal(true)) });
});
export type ChannelPartHeader = z.infer<ReturnType<typeof channelPartSchema>>;
/** How a piece frame begins (its header as the sender writes it), which the reader looks for. */
export const CHANNEL_PART_PREFIX = `{"v":${LINK_PROTOCOL_VERSION},"type":"channel-part",`;

/** How a frame carrying a piece of a frame on `channel` begins: its header and the newline, the piece follows. */
export function channelPartHeader(channel: number, last: boolean): string {
  return `${CHANNEL_PART_PREFIX}"channel":${channel}${last ? ',"last":true' : ''}}\n`;
}

/** `message` cut to what the frame schema accepts. */
export function clipFrameMessage(message: string): string {
  return message.length <= MAX_FRAME_MESSAGE_CHARS ? message : `${message.slice(0, MAX_FRAME_MESSAGE_CHARS - 3)}...`;
}
export type FrameOf<T extends Frame['type']> = Extract<Frame, { type: T }>;

/** The request inside a channel-open frame is validated separately, by the host that answers it. */
export { mcpConnectionRequestSchema };
