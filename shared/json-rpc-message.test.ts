import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { jsonRpcMessageOf } from './json-rpc-message.ts';

/** Values the generated comparison in `json-rpc-text.test.ts` seldom or never builds. */
const CASES: unknown[] = [
  { jsonrpc: '2.0', id: 2 ** 53, result: {} },
  { jsonrpc: '2.0', id: 1.5, method: 'ping' },
  { jsonrpc: '2.0', method: 'tools/call', params: { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't-1', extra: 1 }, other: true } } },
  { jsonrpc: '2.0', id: 1, result: { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 7 } } } },
  { jsonrpc: '2.0', id: 1, result: { _meta: { progressToken: null } } },
  { jsonrpc: '2.0', error: { code: -32600, message: 'no id', data: null, stray: 1 } },
  { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'null id' } },
  { jsonrpc: '2.0', id: 1, result: [] },
  { jsonrpc: '2.0', id: 1, method: 'x', params: [] },
  [{ jsonrpc: '2.0', id: 1, result: {} }],
];

describe('jsonRpcMessageOf', () => {
  it.each(CASES.map((value) => [JSON.stringify(value), value]))('agrees with the SDK\'s message union on %s', (_name, value) => {
    const expected = JSONRPCMessageSchema.safeParse(value);
    expect(jsonRpcMessageOf(value)).toEqual(expected.success ? expected.data : null);
  });

  it('returns the value itself when nothing is dropped, so no large result is copied', () => {
    const value = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'x' }] } };
    expect(jsonRpcMessageOf(value)).toBe(value);
  });
});
