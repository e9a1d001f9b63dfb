/**
 * A character offset in a text as the line and column a reader looks for, 1-based, as Deno's V8
 * words a `JSON.parse` error (`at position 20 (line 3 column 3)`).
 *
 * @module
 */

export function lineAndColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, position);
  return { line: before.split('\n').length, column: before.length - before.lastIndexOf('\n') };
}
