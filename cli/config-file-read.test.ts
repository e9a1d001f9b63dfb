import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unreadable, withLineAndColumn } from './config-file-read.ts';

/** Each text's JSON.parse message under Deno 2.9 (V8 14), the runtime of the worker's own log. */
const UNDER_DENO: Array<[string, string]> = [
  ['{\n  "agents": [],\n  x\n}', 'Expected double-quoted property name in JSON at position 20 (line 3 column 3)'],
  ['{\n "a": 1,\n}', 'Expected double-quoted property name in JSON at position 11 (line 3 column 1)'],
  ['{"a": 1', "Expected ',' or '}' after property value in JSON at position 7 (line 1 column 8)"],
  ['{"a": 1}}', 'Unexpected non-whitespace character after JSON at position 8 (line 1 column 9)'],
  ['{\n "a": "x\ny"}', 'Bad control character in string literal in JSON at position 10 (line 2 column 9)'],
  ['', 'Unexpected end of JSON input'],
  ['[1,]', 'Unexpected token \']\', "[1,]" is not valid JSON'],
];

function parseError(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('parsed');
}

describe('withLineAndColumn', () => {
  it('words a syntax error on this runtime as Deno\'s V8 does, line and column after the position', () => {
    for (const [text, deno] of UNDER_DENO) expect(withLineAndColumn(parseError(text), text)).toBe(deno);
  });

  it('leaves a message that has them already as it is', () => {
    for (const [text, deno] of UNDER_DENO) expect(withLineAndColumn(deno, text)).toBe(deno);
  });
});

describe('unreadable', () => {
  it('says why in plain words: not found (the folder missing too), not a file, or nothing for a readable file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sy-unreadable-'));
    try {
      writeFileSync(join(dir, 'a.json'), '{}');
      expect(unreadable(join(dir, 'a.json'))).toBeUndefined();
      expect(unreadable(join(dir, 'b.json'))).toBe('not found');
      expect(unreadable(join(dir, 'nope', 'b.json'))).toBe('not found');
      expect(unreadable(join(dir, 'a.json', 'c.json'))).toBe('not found');
      expect(unreadable(dir)).toBe('not a file');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
