import { describe, expect, it } from 'vitest';
import { jsonSyntaxProblem } from './json-syntax-problem.ts';

const problemOf = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (error) {
    return jsonSyntaxProblem(error, text);
  }
  throw new Error('parsed');
};

describe('jsonSyntaxProblem', () => {
  it('quotes none of the text around an unexpected token (a credential typed without quotes), and names where it is (review s21)', () => {
    const secret = 'ghp_0123456789abcdefSECRET';
    const middle = `{\n  "headers": {"Authorization": Bearer ${secret}}\n}`;
    const at = middle.indexOf('Bearer');
    expect(problemOf(middle)).toBe(`not valid JSON: Unexpected token in JSON at position ${at} (line 2 column ${at - 1})`);
    const near = `{"a": ${secret}, "padding": "long enough to quote"}`;
    expect(problemOf(near)).toBe(`not valid JSON: Unexpected token in JSON at position 6 (line 1 column 7)`);
    const end = `{"padding": "long enough to quote", "a": ${secret}}`;
    expect(problemOf(end)).toBe(`not valid JSON: Unexpected token in JSON at position ${end.indexOf('ghp')} (line 1 column ${end.indexOf('ghp') + 1})`);
    for (const text of [middle, near, end, 'hunter2', secret]) expect(problemOf(text)).not.toMatch(/ghp|SECRET|hunter/);
  });

  it('places the token right when the same text comes earlier inside a string, and one on a line separator (review of s21)', () => {
    const text = '{"note": "x, 1, 2, 3, 4, y, 5, 6, 7, 8", "a": [1, 2, 3, 4, y, 5, 6, 7, 8]}';
    expect(problemOf(text)).toBe(`not valid JSON: Unexpected token in JSON at position ${text.lastIndexOf('y')} (line 1 column ${text.lastIndexOf('y') + 1})`);
    const separated = '{"padding": "long enough", "a": \u2028 1}';
    expect(problemOf(separated)).toBe(`not valid JSON: Unexpected token in JSON at position ${separated.indexOf('\u2028')} (line 1 column ${separated.indexOf('\u2028') + 1})`);
  });

  it('keeps what V8 says when it quotes nothing, with the line and column of its position', () => {
    expect(problemOf('{"a": 1,\n}')).toBe('not valid JSON: Expected double-quoted property name in JSON at position 9 (line 2 column 1)');
    expect(problemOf('{"a": 1')).toBe("not valid JSON: Expected ',' or '}' after property value in JSON at position 7 (line 1 column 8)");
    expect(problemOf('')).toBe('not valid JSON: Unexpected end of JSON input');
  });

  it('says what a byte-order mark or a comment is, which V8 calls an unexpected token', () => {
    expect(problemOf('\uFEFF{"a": 1}')).toBe('not valid JSON: the file starts with a byte-order mark: save it as UTF-8 without one');
    expect(problemOf('// my servers\n{"a": 1}')).toBe('not valid JSON: Unexpected token in JSON at position 0 (line 1 column 1): comments are not allowed in JSON');
    expect(problemOf('{\n  "a": 1, /* old */\n  "b": 2\n}')).toBe('not valid JSON: Expected double-quoted property name in JSON at position 12 (line 2 column 11): comments are not allowed in JSON');
    expect(problemOf('{"a": 1 / 2}')).not.toContain('comments');
  });
});
