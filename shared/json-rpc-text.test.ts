import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readJsonRpcText } from './json-rpc-text.ts';
import { RAW_TEXT_MIN_CHARS, rawTextOf } from './raw-message-text.ts';

/** The four JSON-RPC shapes, with wrong values now and then, and now and then a key of another shape or a stray. */
const id = fc.oneof(fc.integer(), fc.string(), fc.double(), fc.constant(null));
const jsonrpc = fc.constantFrom('2.0', '2.0', '2.0', '1.0');
const params = fc.oneof(fc.object(), fc.record({ _meta: fc.oneof(fc.object(), fc.record({ progressToken: fc.oneof(fc.string(), fc.integer(), fc.double()) })) }), fc.constant(null), fc.array(fc.integer()));
const shapes = fc.oneof(
  fc.record({ jsonrpc, id, method: fc.oneof(fc.string(), fc.integer()), params }, { requiredKeys: ['jsonrpc', 'id', 'method'] }),
  fc.record({ jsonrpc, method: fc.oneof(fc.string(), fc.integer()), params }, { requiredKeys: ['jsonrpc', 'method'] }),
  fc.record({ jsonrpc, id, result: fc.oneof(fc.object(), fc.record({ _meta: fc.object() }), fc.string(), fc.constant(null)) }),
  fc.record(
    { jsonrpc, id, error: fc.oneof(fc.record({ code: fc.oneof(fc.integer(), fc.double()), message: fc.oneof(fc.string(), fc.integer()), data: fc.jsonValue(), extra: fc.string() }, { requiredKeys: ['code', 'message'] }), fc.string()) },
    { requiredKeys: ['jsonrpc', 'error'] },
  ),
);
const extra = fc.option(fc.constantFrom('id', 'method', 'result', 'error', 'stray'), { freq: 4 });
const nearMessage = fc.tuple(shapes, extra, fc.jsonValue()).map(([shape, key, value]) => (key === null ? shape : { ...shape, [key]: value }));

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

  it("accepts and returns exactly what the SDK's message union does", () => {
    const accepted = new Set<string>();
    fc.assert(
      fc.property(fc.oneof(nearMessage, fc.jsonValue()), (generated) => {
        const text = JSON.stringify(generated);
        // zod drops an own "__proto__" key where the reader keeps it: tested on its own below.
        fc.pre(!text.includes('"__proto__"'));
        const value: unknown = JSON.parse(text);
        const expected = JSONRPCMessageSchema.safeParse(value);
        const read = readJsonRpcText(text);
        if (expected.success) {
          expect(read).toEqual({ kind: 'message', message: expected.data });
          accepted.add(['id', 'method', 'result', 'error'].filter((k) => k in (value as object)).join('+'));
        } else expect(read.kind).toBe('not-json-rpc');
      }),
      // One of each shape always runs, so the check below never hangs on the draw (an error response with an id is the rarest).
      {
        numRuns: 2000,
        examples: [
          [{ jsonrpc: '2.0', id: 1, method: 'm' }],
          [{ jsonrpc: '2.0', method: 'm' }],
          [{ jsonrpc: '2.0', id: 'a', result: {} }],
          [{ jsonrpc: '2.0', id: 2, error: { code: -1, message: 'm' } }],
        ],
      },
    );
    // The run reached every one of the four shapes, not only refusals.
    expect([...accepted].sort()).toEqual(expect.arrayContaining(['id+error', 'id+method', 'id+result', 'method']));
  });

  it('keeps an own "__proto__" key as data, never as a prototype', () => {
    const read = readJsonRpcText('{"jsonrpc":"2.0","id":1,"result":{"_meta":{"__proto__":{"polluted":true}}}}');
    expect(read.kind).toBe('message');
    const meta = (read as { message: { result: { _meta: object } } }).message.result._meta;
    expect(Object.getPrototypeOf(meta)).toBe(Object.prototype);
    expect(Object.keys(meta)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('the text a large result was read from', () => {
  const large = (extra: string) => `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"${'x'.repeat(RAW_TEXT_MIN_CHARS)}"}]${extra}}}`;

  it('is kept for that message object, and it holds what the parse holds', () => {
    const text = large(',"_meta":{"k":1}');
    const read = readJsonRpcText(text);
    if (read.kind !== 'message') throw new Error('expected a message');
    expect(rawTextOf(read.message)).toBe(text);
    expect(JSON.parse(text)).toEqual(read.message);
    expect(rawTextOf({ ...read.message })).toBeUndefined();
  });

  it('is not kept for a small message or an error response', () => {
    const small = readJsonRpcText('{"jsonrpc":"2.0","id":1,"result":{}}');
    const error = readJsonRpcText(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"${'m'.repeat(RAW_TEXT_MIN_CHARS)}","extra":1}}`);
    for (const read of [small, error]) {
      if (read.kind !== 'message') throw new Error('expected a message');
      expect(rawTextOf(read.message)).toBeUndefined();
    }
  });
});
