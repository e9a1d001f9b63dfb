/**
 * One JSON-RPC message from text someone else wrote (a server's stdout line): `JSON.parse`, the
 * nesting check, then the message check, in that order, so nothing recursive sees a value
 * nested deeper than `MAX_JSON_DEPTH` (see `json-depth.ts`). A too-deep message is still read
 * far enough to say whom it answered or asked, so the caller can turn it into an error for that
 * id instead of dropping it and leaving the other side waiting.
 *
 * The message check is `jsonRpcMessageOf` (`json-rpc-message.ts`), the SDK's message union by
 * hand: zod tried the union's four strict object schemas in turn, and a server's response, the
 * commonest line, failed two before the third matched (about 45 µs of the sidecar's CPU per
 * proxied call, issue 17).
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { parseJsonWithinDepth } from './json-depth.ts';
import { jsonRpcMessageOf } from './json-rpc-message.ts';
import { keepRawText } from './raw-message-text.ts';

export type ReadJsonRpc =
  | { kind: 'message'; message: JSONRPCMessage }
  /** `id` is null for a notification or a batch; `request` tells a request (it has a method) from a response. */
  | { kind: 'too-deep'; id: string | number | null; request: boolean }
  | { kind: 'not-json' }
  | { kind: 'not-json-rpc' };

export function readJsonRpcText(text: string): ReadJsonRpc {
  const read = parseJsonWithinDepth(text);
  if (read.kind !== 'json') return read;
  const message = jsonRpcMessageOf(read.value);
  if (message === null) return { kind: 'not-json-rpc' };
  // A result keeps every key it was given; an error drops unknown ones, so only a result's text is its content.
  if ('result' in message) keepRawText(message, text);
  return { kind: 'message', message };
}
