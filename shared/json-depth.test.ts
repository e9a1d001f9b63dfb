import { describe, expect, it } from 'vitest';
import { exceedsDepth, MAX_JSON_DEPTH, parseJsonWithinDepth, shallowRequestId } from './json-depth.ts';

const arrays = (n: number) => '['.repeat(n) + ']'.repeat(n);
const objects = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

describe('exceedsDepth', () => {
  it.each<[string, unknown, number, boolean]>([
    ['a scalar has no depth', 'text', 0, false],
    ['null has no depth', null, 0, false],
    ['an empty object is one level', {}, 1, false],
    ['an empty object exceeds zero levels', {}, 0, true],
    ['two levels fit in two', { a: [] }, 2, false],
    ['three levels exceed two', { a: [[]] }, 2, true],
    ['scalars inside add no level', { a: [1, 'x', null, true] }, 2, false],
    ['the deepest branch counts, not the first', { a: 1, b: [2, [3, { c: {} }]] }, 3, true],
  ])('%s', (_name, value, max, expected) => {
    expect(exceedsDepth(value, max)).toBe(expected);
  });

  it('accepts exactly MAX_JSON_DEPTH levels and refuses one more, for arrays and objects', () => {
    for (const nest of [arrays, objects]) {
      expect(exceedsDepth(JSON.parse(nest(MAX_JSON_DEPTH)), MAX_JSON_DEPTH)).toBe(false);
      expect(exceedsDepth(JSON.parse(nest(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH)).toBe(true);
    }
  });

  it('walks 100,000 levels without recursing (JSON.stringify of the same value overflows the stack)', () => {
    const value = JSON.parse(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":${arrays(100_000)}}}}`);
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    expect(exceedsDepth(value, MAX_JSON_DEPTH)).toBe(true);
    expect(exceedsDepth(value, 200_000)).toBe(false);
  });

  it('counts a cycle as too deep instead of looping', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(exceedsDepth(cyclic, MAX_JSON_DEPTH)).toBe(true);
  });
});

describe('shallowRequestId', () => {
  it('reads a string or number id off the top level only', () => {
    expect(shallowRequestId({ id: 3, method: 'x' })).toBe(3);
    expect(shallowRequestId({ id: 'a' })).toBe('a');
    expect(shallowRequestId({ id: { nested: 1 } })).toBeNull();
    expect(shallowRequestId([{ id: 1 }])).toBeNull();
    expect(shallowRequestId('x')).toBeNull();
  });
});

describe('parseJsonWithinDepth', () => {
  it('parses, refuses text that is not JSON, and reads a too-deep message only far enough to name its id', () => {
    expect(parseJsonWithinDepth('{"id":1,"result":{}}')).toEqual({ kind: 'json', value: { id: 1, result: {} } });
    expect(parseJsonWithinDepth('{"id":')).toEqual({ kind: 'not-json' });
    const deep = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(parseJsonWithinDepth(deep)).toEqual({ kind: 'too-deep', id: 7, request: true });
    expect(parseJsonWithinDepth('{"id":"a","result":[[[]]]}', 3)).toEqual({ kind: 'too-deep', id: 'a', request: false });
  });
});
