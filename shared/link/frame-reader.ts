/**
 * Reads one inbound link frame: one `JSON.parse`, then the zod frame schema for every frame type
 * but a well-formed `channel-message`, `channel-open` (with its `first` message or not), `channel-open-ack` or bare `channel-close`,
 * which the same rules check by hand (the hot path: see `wellFormedChannelMessage`). The JSON-RPC payload inside is only checked for being an object
 * here; the MCP endpoint at each end validates it. Also the UTF-8 size test used for both
 * directions.
 *
 * A frame nested deeper than a JSON-RPC message may be (`MAX_JSON_DEPTH`, plus the frame's own
 * level) is refused right after the parse, before zod or anything else recursive sees it, as
 * `too-deep`, with what the endpoint needs to answer whoever waits: the channel, and the id of the
 * message inside and whether it asked or answered.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { CHANNEL_PART_PREFIX, channelPartSchema, frameSchema, LINK_PROTOCOL_VERSION, type Frame, type FrameOf } from '../frames.ts';
import { exceedsDepth, MAX_JSON_DEPTH, shallowRequestId } from '../json-depth.ts';

export type ReadFrame =
  /** `own`: the host marked the message as its own answer (`host-answers`); absent when it did not. */
  | { kind: 'message'; channel: number; message: JSONRPCMessage; own?: true }
  /** A `channel-reply`: the channel's last message, then its close (and its ack, if the open still waits). */
  | { kind: 'reply'; channel: number; message: JSONRPCMessage; own?: true }
  | { kind: 'frame'; frame: Frame }
  /** A piece of a large frame (`channel-part`, `frames.ts`): `text` is the piece. */
  | { kind: 'part'; channel: number; last: boolean; text: string }
  | { kind: 'too-large' }
  | { kind: 'wrong-version'; version: string }
  /** `channel` and `id` are null when unreadable; `request`: the message inside has a method. */
  | { kind: 'too-deep'; type: string; channel: number | null; id: string | number | null; request: boolean }
  | { kind: 'malformed'; problem: string };

export function readFrame(text: string, maxBytes: number): ReadFrame {
  if (exceeds(text, maxBytes)) return { kind: 'too-large' };
  if (text.startsWith(CHANNEL_PART_PREFIX)) return readPart(text);
  let frame: Record<string, unknown> & { v?: unknown; type?: unknown; channel?: unknown; message?: unknown };
  try {
    frame = JSON.parse(text);
  } catch {
    return { kind: 'malformed', problem: 'not valid JSON' };
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return { kind: 'malformed', problem: 'not a JSON object' };
  if (frame.v !== LINK_PROTOCOL_VERSION) return { kind: 'wrong-version', version: versionText(frame.v) };
  // The frame adds one level around the message (or the channel-open request) it carries.
  if (exceedsDepth(frame, MAX_JSON_DEPTH + 1)) {
    const message = frame.message;
    return {
      kind: 'too-deep',
      type: typeof frame.type === 'string' ? frame.type.slice(0, 32) : 'unknown',
      channel: Number.isInteger(frame.channel) ? (frame.channel as number) : null,
      id: shallowRequestId(message),
      request: typeof message === 'object' && message !== null && 'method' in message,
    };
  }
  if (frame.type === 'channel-message' || frame.type === 'channel-reply') {
    const fast = wellFormedChannelMessage(frame, frame.type === 'channel-message' ? 'message' : 'reply');
    if (fast !== null) return fast;
  } else if (frame.type === 'channel-open-ack' || frame.type === 'channel-close') {
    const fast = bareChannelFrame(frame, frame.type);
    if (fast !== null) return fast;
  } else if (frame.type === 'channel-open') {
    const fast = wellFormedChannelOpen(frame);
    if (fast !== null) return fast;
  }
  const parsed = frameSchema().safeParse(frame);
  if (!parsed.success) return { kind: 'malformed', problem: problemOf(parsed.error.issues, 'not a link frame') };
  if (parsed.data.type === 'channel-message' || parsed.data.type === 'channel-reply') {
    const { channel, message, own } = parsed.data;
    const kind = parsed.data.type === 'channel-message' ? 'message' : 'reply';
    return own === true ? { kind, channel, message: message as JSONRPCMessage, own } : { kind, channel, message: message as JSONRPCMessage };
  }
  return { kind: 'frame', frame: parsed.data };
}

/** The first issue a schema found, where it is (`path: message`), or `otherwise`. */
function problemOf(issues: readonly { path: readonly PropertyKey[]; message: string }[], otherwise: string): string {
  const issue = issues[0];
  if (issue === undefined) return otherwise;
  return issue.path.length === 0 ? issue.message : `${issue.path.map(String).join('.')}: ${issue.message}`;
}

/** A `channel-part`: its JSON header, checked by its schema, then a newline and the piece. */
function readPart(text: string): ReadFrame {
  const end = text.indexOf('\n');
  if (end === -1) return { kind: 'malformed', problem: 'a channel-part without the newline after its header' };
  let header: unknown;
  try {
    header = JSON.parse(text.slice(0, end));
  } catch {
    return { kind: 'malformed', problem: 'a channel-part whose header is not valid JSON' };
  }
  const parsed = channelPartSchema().safeParse(header);
  if (!parsed.success) return { kind: 'malformed', problem: `channel-part header: ${problemOf(parsed.error.issues, 'not a channel-part header')}` };
  return { kind: 'part', channel: parsed.data.channel, last: parsed.data.last === true, text: text.slice(end + 1) };
}

/**
 * A `channel-message` frame (or a `channel-reply`, of the same shape) that the schema's branch for
 * it accepts, checked by hand: it is all but every frame on a busy link, and zod's strict object
 * walk was a third of this function's time (issue 17). The same rules as `frameSchema`'s branch: exactly the keys `v`, `type`,
 * `channel`, `message`, maybe `own`; a channel id that is a whole number in 1…2³¹; a message that is an object
 * and not an array; `own`, true. Anything else (null) goes to the schema, which also words the problem.
 */
function wellFormedChannelMessage(frame: Record<string, unknown>, kind: 'message' | 'reply'): ReadFrame | null {
  const { channel, message } = frame;
  const keys = Object.keys(frame).length;
  if (!('channel' in frame) || !('message' in frame)) return null;
  if (!validChannelId(channel)) return null;
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null;
  if (keys === 4) return { kind, channel, message: message as JSONRPCMessage };
  return keys === 5 && frame.own === true ? { kind, channel, message: message as JSONRPCMessage, own: true } : null;
}

/**
 * A `channel-open-ack`, or a `channel-close` with no reason: just `v`, `type` and a valid channel.
 * A modern request's channel sees one of each per call, so they are checked by hand too (zod's
 * walk of the frame union was ~20 µs each in Deno, issue 17). Anything else goes to the schema.
 */
function bareChannelFrame(frame: Record<string, unknown>, type: 'channel-open-ack' | 'channel-close'): ReadFrame | null {
  const { channel } = frame;
  if (Object.keys(frame).length !== 3 || !validChannelId(channel)) return null;
  return { kind: 'frame', frame: { v: LINK_PROTOCOL_VERSION, type, channel } };
}

/**
 * A `channel-open` with its request: a modern request opens a channel of its own, so this is one
 * frame per call on the host, and zod's walk of the frame union cost as much as the rest of the
 * read (issue 17). Exactly the keys `v`, `type`, `channel`, `request`, maybe `first` (and `reply`),
 * maybe `own`, and a valid channel; the request is any value here, as in the schema: the host
 * validates it (`connection-request.ts`); `first`, as a `channel-message`'s message, an object;
 * `reply`, only beside `first`, true; `own`, true. Built with the schema's keys in its order.
 */
function wellFormedChannelOpen(frame: Record<string, unknown>): ReadFrame | null {
  const { channel, first } = frame;
  let keys = Object.keys(frame).length;
  if (!('request' in frame) || !validChannelId(channel)) return null;
  const own = 'own' in frame;
  if (own) {
    if (frame.own !== true) return null;
    keys--;
  }
  let open: FrameOf<'channel-open'>;
  if (keys === 4) open = { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel, request: frame.request };
  else if (typeof first !== 'object' || first === null || Array.isArray(first)) return null;
  else if (keys === 5) open = { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel, request: frame.request, first: first as JSONRPCMessage };
  else if (keys !== 6 || frame.reply !== true) return null;
  else open = { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel, request: frame.request, first: first as JSONRPCMessage, reply: true };
  if (own) open.own = true;
  return { kind: 'frame', frame: open };
}

function validChannelId(channel: unknown): channel is number {
  return typeof channel === 'number' && Number.isInteger(channel) && channel >= 1 && channel <= 2 ** 31;
}

/** True when `text` is longer than `max` UTF-8 bytes; exact, and without encoding short frames. */
export function exceeds(text: string, max: number): boolean {
  if (text.length > max) return true;
  if (text.length * 3 <= max) return false;
  return new TextEncoder().encode(text).byteLength > max;
}

/** A peer's version as text for the log: only a number or a string is printed (an object's own `toString` may not be callable). */
function versionText(v: unknown): string {
  return typeof v === 'number' || typeof v === 'string' ? String(v).slice(0, 16) : typeof v;
}
