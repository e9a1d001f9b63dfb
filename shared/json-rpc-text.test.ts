import { describe, expect, it } from 'vitest';
import { readJsonRpcText } from './json-rpc-text.ts';

const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('readJsonRpcText', () => {
  it('reads a message, and tells bad JSON from JSON that is no JSON-RPC message', () => {
    expect(readJsonRpcText('{"jsonrpc":"2.0","id":1,"result":{}}')).toEqual({ kind: 'message', message: { jsonrpc: '2.0', id: 1, result: {} } });
    expect(readJsonRpcText('{"jsonrpc":')).toEqual({ kind: 'not-json' });
    expect(readJsonRpcText('{"hello":"world"}')).toEqual({ kind: 'not-json-rpc' });
  });

  it('refuses 100,000 levels without overflowing, still saying whom the message answered or asked', () => {
    expect(readJsonRpcText(`{"jsonrpc":"2.0","id":"r-1","result":{"x":${nest(100_000)}}}`)).toEqual({ kind: 'too-deep', id: 'r-1', request: false });
    expect(readJsonRpcText(`{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"x":${nest(200)}}}`)).toEqual({ kind: 'too-deep', id: 4, request: true });
    expect(readJsonRpcText(`{"jsonrpc":"2.0","method":"notifications/message","params":{"x":${nest(200)}}}`)).toEqual({ kind: 'too-deep', id: null, request: true });
  });

  it('passes 128 levels exactly', () => {
    expect(readJsonRpcText(`{"jsonrpc":"2.0","id":1,"result":{"x":${nest(126)}}}`).kind).toBe('message');
    expect(readJsonRpcText(`{"jsonrpc":"2.0","id":1,"result":{"x":${nest(127)}}}`).kind).toBe('too-deep');
  });
});
