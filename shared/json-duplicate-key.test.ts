import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { duplicateKeyIssue } from './json-duplicate-key.ts';

describe('duplicateKeyIssue', () => {
  it('names the first key an object holds twice, with its path and both lines', () => {
    const text = '{\n  "servers": {\n    "files": {"executor": {"type": "local"}},\n    "files": {"executor": {"type": "http"}}\n  }\n}';
    expect(duplicateKeyIssue(text)).toEqual({ path: 'servers.files', message: 'defined twice (line 3 and line 4): JSON keeps only the last, so remove one' });
    expect(duplicateKeyIssue('{"a": 1, "a": 2}')).toEqual({ path: 'a', message: 'defined twice (line 1 and line 1): JSON keeps only the last, so remove one' });
  });

  it('follows arrays and nested objects into the path, and counts keys per object', () => {
    expect(duplicateKeyIssue('{"agents": [{"name": "a"}, {"name": "b", "token-sha256": "x", "token-sha256": "y"}]}')?.path).toBe('agents[1].token-sha256');
    expect(duplicateKeyIssue('[[1, {"a": {"b": [0, {"c": 1, "c": 2}]}}]]')?.path).toBe('[0][1].a.b[1].c');
    // The same key in sibling objects, or as a value, is no duplicate.
    expect(duplicateKeyIssue('{"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 1}], "d": "a", "e": ["a", "a"]}')).toBeUndefined();
  });

  it('reads keys as JSON does: escapes decoded, braces and quotes inside strings ignored', () => {
    expect(duplicateKeyIssue('{"ab": 1, "a\\u0062": 2}')?.path).toBe('ab');
    expect(duplicateKeyIssue('{"a": "}{\\"a\\": ,[", "b": "\\\\", "c": 1}')).toBeUndefined();
    expect(duplicateKeyIssue('{"a\\"b": 1, "a\\"b": 2}')?.path).toBe('a"b');
    expect(duplicateKeyIssue('{}')).toBeUndefined();
    expect(duplicateKeyIssue(' "x" ')).toBeUndefined();
  });

  it('finds a duplicate exactly when JSON.parse drops a key, on any JSON', () => {
    // Objects written out by hand from entries, so that some keys repeat; JSON.parse keeps the last of each.
    const text = fc.letrec<{ value: string }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom('1', 'null', '"s"', '"{\\"k\\":"'),
        fc.array(tie('value'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'a\\u0062'), tie('value')), { maxLength: 4 }).map((entries) => `{${entries.map(([k, v]) => `"${k}": ${v}`).join(', ')}}`),
      ),
    })).value;
    fc.assert(
      fc.property(text, (json) => {
        const drops = (value: unknown, written: string): boolean => countKeys(written) !== countParsed(value);
        expect(duplicateKeyIssue(json) !== undefined).toBe(drops(JSON.parse(json), json));
      }),
      { numRuns: 300 },
    );
  });
});

/** How many keys the text writes, over every object in it. */
function countKeys(json: string): number {
  return (json.match(/"(a|b|c|a\\u0062)": /g) ?? []).length;
}

/** How many keys the parsed value holds, over every object in it. */
function countParsed(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + countParsed(v), 0);
  if (typeof value === 'object' && value !== null) return Object.values(value).reduce((n: number, v) => n + 1 + countParsed(v), 0);
  return 0;
}
