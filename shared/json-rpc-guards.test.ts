import { describe, expect, it } from 'vitest';
import { InitializeRequestSchema, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest, isJsonRpcMessage, isRequest, isResponse } from './json-rpc-guards.ts';

const meta = [undefined, {}, { progressToken: 't' }, { progressToken: 1 }, { progressToken: 1.5 }, { progressToken: 2 ** 53 }, { progressToken: null }, [], 'x', { 'io.modelcontextprotocol/related-task': { taskId: 't' } }, { 'io.modelcontextprotocol/related-task': {} }];
// 2^53 and past: not the number that was sent (9007199254740993 reads as 2^53), and refused by the SDK.
const ids = [undefined, 1, 'a', 1.5, null, {}, true, -0, Number.MAX_SAFE_INTEGER, 2 ** 53, -(2 ** 53), 1e300];
const holders = [undefined, null, [], 'x', {}, { a: 1 }, ...meta.map((_meta) => ({ _meta, a: 1 }))];

/** Every combination of the fields a message's shape hangs on, and a few broken ones. */
function* samples(): Generator<unknown> {
  yield* [null, 1, 'x', [], {}, { jsonrpc: '2.0' }, { jsonrpc: '1.0', id: 1, method: 'm' }];
  for (const id of ids) {
    for (const params of holders) {
      yield { jsonrpc: '2.0', id, method: 'm', params };
      yield { jsonrpc: '2.0', method: 'n', params };
      yield { jsonrpc: '2.0', id, result: params };
    }
    yield { jsonrpc: '2.0', id, method: 5 };
    yield { jsonrpc: '2.0', id, method: 'm', extra: 1 };
    yield { jsonrpc: '2.0', id, result: {}, extra: 1 };
    for (const error of [{ code: 1, message: 'm' }, { code: 1.5, message: 'm' }, { code: 2 ** 53, message: 'm' }, { code: 1 }, { code: 1, message: 'm', data: [1] }, null, []]) {
      yield { jsonrpc: '2.0', id, error };
      yield { jsonrpc: '2.0', id, error, result: {} };
    }
  }
}

describe('JSON-RPC guards', () => {
  it('accepts exactly what the SDK message schema accepts', () => {
    const differences = [...samples()].filter((value) => isJsonRpcMessage(value) !== JSONRPCMessageSchema.safeParse(value).success);
    expect(differences).toEqual([]);
  });

  it('classifies messages as requests and responses', () => {
    const messages = [...samples()].filter(isJsonRpcMessage);
    for (const message of messages) {
      expect(isRequest(message)).toBe('method' in message && 'id' in message);
      expect(isResponse(message)).toBe('result' in message || 'error' in message);
    }
  });

  it('recognises an initialize by method, version, capabilities and client info', () => {
    const params = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } };
    const cases: unknown[] = [
      { method: 'initialize', params },
      { method: 'initialize', params: { ...params, protocolVersion: 1 } },
      { method: 'initialize', params: { ...params, capabilities: null } },
      { method: 'initialize', params: { ...params, clientInfo: { name: 'c' } } },
      { method: 'initialize' },
      { method: 'ping', params },
      null,
    ];
    expect(cases.map(isInitializeRequest)).toEqual(cases.map((value) => InitializeRequestSchema.safeParse(value).success));
  });
});
