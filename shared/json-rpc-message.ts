/**
 * Whether a parsed JSON value is one JSON-RPC message, by the rules of the SDK's
 * `JSONRPCMessageSchema`, written out by hand so reading a message needs no schema library at
 * run time (issue 17: the worker's bundle, the sidecar's CPU per line).
 *
 * The SDK's union is of four strict objects, mutually exclusive on which keys are present: a
 * request has `method` and `id`, a notification `method` without `id`, a result response
 * `result` and no `method`, an error response `error` and neither. So the keys pick the one shape
 * to check. What each accepts, and what it returns, is what the SDK's does
 * (`json-rpc-text.test.ts` compares the two on generated input): ids and progress tokens are
 * strings or safe integers, `params` and `result` are objects that keep every key, their `_meta`
 * an object whose `progressToken` and `io.modelcontextprotocol/related-task` (`{ taskId }`, other
 * keys dropped) are checked, and an error's `error` is `{ code, message, data? }` (other keys
 * dropped). The value is returned as it is unless a key had to be dropped.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from './records.ts';

export const JSONRPC_VERSION = '2.0';
const RELATED_TASK_KEY = 'io.modelcontextprotocol/related-task';

type Json = Record<string, unknown>;

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const NOTIFICATION_KEYS = new Set(['jsonrpc', 'method', 'params']);
const RESULT_KEYS = new Set(['jsonrpc', 'id', 'result']);
const ERROR_KEYS = new Set(['jsonrpc', 'id', 'error']);

/** The message `value` is (a copy when keys were dropped), or null when it is none. */
export function jsonRpcMessageOf(value: unknown): JSONRPCMessage | null {
  if (!isRecord(value) || value.jsonrpc !== JSONRPC_VERSION) return null;
  if ('method' in value) {
    const isRequest = 'id' in value;
    if (!onlyKeys(value, isRequest ? REQUEST_KEYS : NOTIFICATION_KEYS) || typeof value.method !== 'string') return null;
    if (isRequest && !isIdLike(value.id)) return null;
    if (value.params === undefined) return value as JSONRPCMessage;
    const params = withMetaOf(value.params);
    return params === null ? null : ((params === value.params ? value : { ...value, params }) as JSONRPCMessage);
  }
  if ('result' in value) {
    if (!onlyKeys(value, RESULT_KEYS) || !isIdLike(value.id)) return null;
    const result = withMetaOf(value.result);
    return result === null ? null : ((result === value.result ? value : { ...value, result }) as JSONRPCMessage);
  }
  if (!onlyKeys(value, ERROR_KEYS) || (value.id !== undefined && !isIdLike(value.id))) return null;
  const error = value.error;
  if (!isRecord(error) || !Number.isSafeInteger(error.code) || typeof error.message !== 'string') return null;
  if (Object.keys(error).every((key) => key === 'code' || key === 'message' || key === 'data')) return value as JSONRPCMessage;
  return { ...value, error: { code: error.code, message: error.message, ...('data' in error ? { data: error.data } : {}) } } as JSONRPCMessage;
}

/** Whether `value` is a request id (or progress token): a string or a safe integer. */
export function isIdLike(value: unknown): value is string | number {
  return typeof value === 'string' || Number.isSafeInteger(value);
}

/** `holder` (params or a result) when its `_meta` is fine, a copy when a key had to be dropped, null when it is wrong. */
function withMetaOf(holder: unknown): Json | null {
  if (!isRecord(holder)) return null;
  const meta = holder._meta;
  if (meta === undefined) return holder;
  if (!isRecord(meta) || (meta.progressToken !== undefined && !isIdLike(meta.progressToken))) return null;
  const task = meta[RELATED_TASK_KEY];
  if (task === undefined) return holder;
  if (!isRecord(task) || typeof task.taskId !== 'string') return null;
  if (Object.keys(task).length === 1) return holder;
  return { ...holder, _meta: { ...meta, [RELATED_TASK_KEY]: { taskId: task.taskId } } };
}

function onlyKeys(value: Json, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}
