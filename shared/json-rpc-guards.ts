/**
 * JSON-RPC message guards by shape, in place of the SDK's `isJSONRPCRequest` & co., which each
 * run a zod `safeParse` of the whole message (15–20 µs for the first check of a fresh message in
 * the worker's CPU profile, issue 17) and pull the SDK's schema module into the worker bundle.
 *
 * `isJsonRpcMessage` accepts exactly what the SDK's `JSONRPCMessageSchema` accepts: four strict
 * objects (no key beyond their own), `"jsonrpc": "2.0"`, an id that is a string or a safe integer,
 * `params` and `result` objects whose `_meta`, when present, is an object with a string or integer
 * `progressToken`. The four are told apart by which keys are present, so each message is looked at
 * once, key by key, and never copied. `isRequest` / `isResponse` are the cheap classifiers for a
 * message already known to be one.
 *
 * @module
 */
import type {
  InitializeRequest, JSONRPCErrorResponse, JSONRPCMessage, JSONRPCRequest, JSONRPCResultResponse, RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { isRecord as isObject } from './records.ts';

type Fields = Record<string, unknown>;

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const NOTIFICATION_KEYS = new Set(['jsonrpc', 'method', 'params']);
const RESULT_KEYS = new Set(['jsonrpc', 'id', 'result']);
const ERROR_KEYS = new Set(['jsonrpc', 'id', 'error']);
const RELATED_TASK_KEY = 'io.modelcontextprotocol/related-task';

/**
 * A string or a safe integer, as the SDK's `z.number().int()` (zod 4) takes it: past 2^53 a
 * number is no longer the id that was sent, and an SDK server drops the whole message, so a request
 * let through with one would never be answered and hold its session open.
 */
export function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || Number.isSafeInteger(value);
}

function onlyKeys(message: Fields, allowed: ReadonlySet<string>): boolean {
  for (const key in message) if (!allowed.has(key)) return false;
  return true;
}

/** A `params` or `result` object, with the `_meta` the SDK's schemas check. */
function isMetaHolder(value: unknown): boolean {
  if (!isObject(value)) return false;
  const meta = value._meta;
  if (meta === undefined) return true;
  if (!isObject(meta)) return false;
  if (meta.progressToken !== undefined && !isRequestId(meta.progressToken)) return false;
  const task = meta[RELATED_TASK_KEY];
  return task === undefined || (isObject(task) && typeof task.taskId === 'string');
}

/** Whether `value` is one JSON-RPC 2.0 message, by the SDK's `JSONRPCMessageSchema`. */
export function isJsonRpcMessage(value: unknown): value is JSONRPCMessage {
  if (!isObject(value) || value.jsonrpc !== '2.0') return false;
  if ('method' in value) {
    if (typeof value.method !== 'string' || (value.params !== undefined && !isMetaHolder(value.params))) return false;
    return 'id' in value ? isRequestId(value.id) && onlyKeys(value, REQUEST_KEYS) : onlyKeys(value, NOTIFICATION_KEYS);
  }
  if ('result' in value) return isRequestId(value.id) && isMetaHolder(value.result) && onlyKeys(value, RESULT_KEYS);
  if (!('error' in value) || (value.id !== undefined && !isRequestId(value.id)) || !onlyKeys(value, ERROR_KEYS)) return false;
  const error = value.error;
  return isObject(error) && Number.isSafeInteger(error.code) && typeof error.message === 'string';
}

/** A message (already known to be one) that asks for an answer. */
export function isRequest(message: JSONRPCMessage): message is JSONRPCRequest {
  return 'method' in message && 'id' in message;
}

/**
 * A result or error response, checked far enough to route it by id: no `method`, a `result` with
 * an id or an `error` object, and a string or number id when it has one.
 */
export function isResponse(message: JSONRPCMessage): message is JSONRPCResultResponse | JSONRPCErrorResponse {
  if ('method' in message) return false;
  const m = message as { id?: unknown; result?: unknown; error?: unknown };
  const id = m.id;
  if (id !== undefined && typeof id !== 'string' && typeof id !== 'number') return false;
  return (typeof m.result === 'object' && m.result !== null && id !== undefined) || (typeof m.error === 'object' && m.error !== null);
}

/**
 * An `initialize` request as far as a gateway needs to know one: the method, a string
 * `protocolVersion`, a `capabilities` object and a `clientInfo` with a string name and version
 * (the SDK's `isInitializeRequest` checks those, and every capability inside too; what a
 * capability holds is for the server that reads it to judge). Not the envelope: see
 * `isJsonRpcMessage`.
 */
export function isInitializeRequest(value: unknown): value is InitializeRequest {
  if (!isObject(value) || value.method !== 'initialize' || !isObject(value.params)) return false;
  const { protocolVersion, capabilities, clientInfo } = value.params;
  return typeof protocolVersion === 'string' && isObject(capabilities) && isObject(clientInfo)
    && typeof clientInfo.name === 'string' && typeof clientInfo.version === 'string';
}

/** A `notifications/cancelled` that names the request it cancels (a task's cancellation names none). */
export function isCancellation(value: unknown): value is { method: 'notifications/cancelled'; params: { requestId: RequestId } } {
  return isObject(value) && value.method === 'notifications/cancelled' && !('id' in value) && isObject(value.params) && isRequestId(value.params.requestId);
}
