/**
 * Reads one inbound link frame, cheaply. `channel-message` frames are the hot path: one
 * `JSON.parse` and a few type checks, no schema walk over the JSON-RPC payload (the MCP endpoint
 * at each end validates that). Every other frame is rare and checked with the zod frame schema,
 * reusing the parsed value. Also the UTF-8 size test used for both directions.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { FrameSchema, LINK_PROTOCOL_VERSION, type Frame } from '../frames.ts';

export type ReadFrame =
  | { kind: 'message'; channel: number; message: JSONRPCMessage }
  | { kind: 'frame'; frame: Frame }
  | { kind: 'too-large' }
  | { kind: 'wrong-version'; version: string }
  | { kind: 'malformed'; problem: string };

export function readFrame(text: string, maxBytes: number): ReadFrame {
  if (exceeds(text, maxBytes)) return { kind: 'too-large' };
  let frame: { v?: unknown; type?: unknown; channel?: unknown; message?: unknown };
  try {
    frame = JSON.parse(text);
  } catch {
    return { kind: 'malformed', problem: 'not valid JSON' };
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return { kind: 'malformed', problem: 'not a JSON object' };
  if (frame.v !== LINK_PROTOCOL_VERSION) return { kind: 'wrong-version', version: String(frame.v).slice(0, 16) };
  if (frame.type === 'channel-message') {
    const { channel, message } = frame;
    if (typeof channel !== 'number' || typeof message !== 'object' || message === null || Array.isArray(message)) {
      return { kind: 'malformed', problem: 'channel-message without a channel number and a message object' };
    }
    return { kind: 'message', channel, message: message as JSONRPCMessage };
  }
  const parsed = FrameSchema.safeParse(frame);
  if (!parsed.success) return { kind: 'malformed', problem: parsed.error.issues[0]?.message ?? 'not a link frame' };
  return { kind: 'frame', frame: parsed.data };
}

/** True when `text` is longer than `max` UTF-8 bytes; exact, and without encoding short frames. */
export function exceeds(text: string, max: number): boolean {
  if (text.length > max) return true;
  if (text.length * 3 <= max) return false;
  return new TextEncoder().encode(text).byteLength > max;
}
