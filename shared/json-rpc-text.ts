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
import { exceedsDepth, MAX_JSON_DEPTH, shallowRequestId } from './json-depth.ts';

export type ReadJsonRpc =
  | { kind: 'message'; message: JSONRPCMessage }
  /** `id` is null for a notification or a batch; `request` tells a request (it has a method) from a response. */
  | { kind: 'too-deep'; id: string | number | null; request: boolean }
  | { kind: 'not-json' }
  | { kind: 'not-json-rpc' };

export function readJsonRpcText(text: string): ReadJsonRpc {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'not-json' };
  }
  if (exceedsDepth(value, MAX_JSON_DEPTH)) {
    const request = typeof value === 'object' && value !== null && !Array.isArray(value) && 'method' in value;
    return { kind: 'too-deep', id: shallowRequestId(value), request };
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  return parsed.success ? { kind: 'message', message: parsed.data } : { kind: 'not-json-rpc' };
}
