/**
 * A key given twice in one JSON object, as a config problem. `JSON.parse` keeps the last without a
 * word, so a config with two `"files"` servers ran whichever came second while `check` said ok: a
 * pasted block could move a server, or an agent's token, behind the operator's back.
 *
 * Run on text `JSON.parse` has already taken, it reads only the structure: one pass, no values
 * built, a key's escapes decoded only when it has any.
 *
 * @module
 */
import { lineAndColumn } from './text-position.ts';
import { joinPath, type ValidationIssue } from './validation.ts';

interface ObjectFrame {
  readonly keys: Map<string, number>;
  /** The key whose value is being read: the path's step into this object. */
  key: string;
  /** After `{` or `,`, the next string is a key. */
  expectKey: boolean;
}

interface ArrayFrame {
  readonly keys: null;
  index: number;
}

/**
 * The first key some object in `text` holds twice, as `path: defined twice (lines A and B): …`,
 * or undefined when there is none.
 *
 * @param text JSON text that `JSON.parse` accepts.
 * @example
 * ```ts
 * duplicateKeyIssue('{"servers": {"files": {}, "files": {}}}');
 * // { path: 'servers.files', message: 'defined twice (line 1 and line 1): JSON keeps only the last, so remove one' }
 * ```
 */
export function duplicateKeyIssue(text: string): ValidationIssue | undefined {
  const stack: Array<ObjectFrame | ArrayFrame> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      const top = stack.at(-1);
      if (top?.keys === null || top === undefined || !top.expectKey) continue;
      const raw = text.slice(start, i + 1);
      const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      const first = top.keys.get(key);
      top.key = key;
      top.expectKey = false;
      if (first !== undefined) return { path: pathOf(stack), message: `defined twice (line ${lineAndColumn(text, first).line} and line ${lineAndColumn(text, start).line}): JSON keeps only the last, so remove one` };
      top.keys.set(key, start);
    } else if (c === 0x7b) {
      stack.push({ keys: new Map(), key: '', expectKey: true });
    } else if (c === 0x5b) {
      stack.push({ keys: null, index: 0 });
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
    } else if (c === 0x2c) {
      const top = stack.at(-1)!;
      if (top.keys === null) top.index++;
      else top.expectKey = true;
    }
  }
  return undefined;
}

function pathOf(stack: ReadonlyArray<ObjectFrame | ArrayFrame>): string {
  return joinPath(stack.map((frame) => (frame.keys === null ? frame.index : frame.key)));
}
