/**
 * One JSON-RPC message from text someone else wrote (a server's stdout line): `JSON.parse`, the
 * nesting check, then the SDK's message schema, in that order, so nothing recursive sees a value
 * nested deeper than `MAX_JSON_DEPTH` (see `json-depth.ts`). A too-deep message is still read
 * far enough to say whom it answered or asked, so the caller can turn it into an error for that
 * id instead of dropping it and leaving the other side waiting.
 *
 * The SDK's `JSONRPCMessageSchema` is a union of four strict object schemas, which zod tries in
 * turn; a server's response, the commonest line, failed two before the third matched (about 45 µs
 * of the sidecar's CPU per proxied call, issue 17). The four are mutually exclusive on which keys
 * are present (strict objects: a request has `method` and `id`, a notification `method` without
 * `id`, a result response `result` and no `method`, an error response `error` and neither), so the
 * one branch those keys pick is run alone: what it accepts, and how, is exactly what the union does.
 *
 * @module
 */
import {
  JSONRPCErrorResponseSchema,
  JSONRPCMessageSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResultResponseSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { parseJsonWithinDepth } from './json-depth.ts';
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
  const parsed = schemaFor(read.value).safeParse(read.value);
  if (!parsed.success) return { kind: 'not-json-rpc' };
  const message = parsed.data as JSONRPCMessage;
  // A result's schema keeps every key it was given; the error schema drops unknown ones, so only a result's text is its content.
  if ('result' in message) keepRawText(message, text);
  return { kind: 'message', message };
}

/** The one branch of the SDK's message union that `value` could match (the union itself when none could). */
function schemaFor(value: unknown) {
  if (typeof value !== 'object' || value === null) return JSONRPCMessageSchema;
  if ('method' in value) return 'id' in value ? JSONRPCRequestSchema : JSONRPCNotificationSchema;
  if ('result' in value) return JSONRPCResultResponseSchema;
  if ('error' in value) return JSONRPCErrorResponseSchema;
  return JSONRPCMessageSchema;
}
