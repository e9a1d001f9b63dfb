/**
 * One JSON-RPC message from text someone else wrote (a server's stdout line): `JSON.parse`, the
 * nesting check, then the SDK's message schema, in that order, so nothing recursive sees a value
 * nested deeper than `MAX_JSON_DEPTH` (see `json-depth.ts`). A too-deep message is still read
 * far enough to say whom it answered or asked, so the caller can turn it into an error for that
 * id instead of dropping it and leaving the other side waiting.
 *
 * @module
 */
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { parseJsonWithinDepth } from './json-depth.ts';

export type ReadJsonRpc =
  | { kind: 'message'; message: JSONRPCMessage }
  /** `id` is null for a notification or a batch; `request` tells a request (it has a method) from a response. */
  | { kind: 'too-deep'; id: string | number | null; request: boolean }
  | { kind: 'not-json' }
  | { kind: 'not-json-rpc' };

export function readJsonRpcText(text: string): ReadJsonRpc {
  const read = parseJsonWithinDepth(text);
  if (read.kind !== 'json') return read;
  const parsed = JSONRPCMessageSchema.safeParse(read.value);
  return parsed.success ? { kind: 'message', message: parsed.data } : { kind: 'not-json-rpc' };
}
