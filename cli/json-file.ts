/**
 * Config files the CLI edits (`host add`, `agent add`, …): read as plain JSON, so what the file
 * leaves to defaults stays unwritten, and written back readable and atomically.
 *
 * The written form is what a person would write: two-space indent (or the file's own), and any
 * array or object that fits on one line within 100 columns kept on one line, so an agent's
 * `"servers": ["files", "docs"]` does not become four lines. The new text goes to a temporary
 * file beside the target, with the target's mode, and is renamed over it: a reader (a worker
 * reloading its config) sees the old file or the new one, never half of one.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { jsonSyntaxProblem } from '../shared/json-syntax-problem.ts';
import { duplicateKeyIssue } from '../shared/json-duplicate-key.ts';
import { formatIssue } from '../shared/validation.ts';
import { closeSync, fchmodSync, fsyncSync, lstatSync, openSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { LocalError } from '../shared/errors.ts';

const WIDTH = 100;

/** The indent unit of a JSON text: the whitespace of its first indented line, two spaces by default. */
export function indentOf(text: string): string {
  const match = /\n([ \t]+)\S/.exec(text);
  return match?.[1] ?? '  ';
}

function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** JSON as a person writes it (see the module comment); ends with a newline. */
export function formatJson(value: unknown, indent = '  '): string {
  const format = (v: unknown, depth: number, prefix: number): string => {
    if (typeof v !== 'object' || v === null) return JSON.stringify(v) ?? 'null';
    const entries: [string | null, unknown][] = Array.isArray(v) ? v.map((item) => [null, item]) : Object.entries(v);
    if (entries.length === 0) return Array.isArray(v) ? '[]' : '{}';
    const flat = inline(v);
    if (depth > 0 && prefix + flat.length <= WIDTH) return flat;
    const pad = indent.repeat(depth + 1);
    const lines = entries.map(([key, item]) => {
      const head = key === null ? '' : `${JSON.stringify(key)}: `;
      return `${pad}${head}${format(item, depth + 1, pad.length + head.length)}`;
    });
    const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
    return `${open}\n${lines.join(',\n')}\n${indent.repeat(depth)}${close}`;
  };
  return format(value, 0, 0) + '\n';
}

export type JsonRead = { readonly exists: false } | { readonly exists: true; readonly value: unknown; readonly text: string };

/** Reads a JSON file; a file that is there but not JSON is an error naming it. */
export function readJson(path: string): JsonRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { exists: false };
    throw new LocalError('invalid-config', `Cannot read ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new LocalError('invalid-config', `${path}: ${jsonSyntaxProblem(error, text)}`);
  }
  // A rewrite would keep only the last of the two, and so drop the other without a word.
  const duplicate = duplicateKeyIssue(text);
  if (duplicate !== undefined) throw new LocalError('invalid-config', `${path}: ${formatIssue(duplicate)}`);
  return { exists: true, value, text };
}

/**
 * Replaces `path` with `text` atomically, keeping its mode (new files: `mode`). A config reached
 * through a symlink is written where the link points, so the link stays. `secret`: the file gets
 * exactly `mode` whatever it had, and a symlink at `path` is replaced, never written through.
 */
export function writeFileAtomic(path: string, text: string, mode = 0o644, options: { secret?: boolean } = {}): void {
  let keep = mode;
  if (!options.secret) {
    try {
      if (lstatSync(path).isSymbolicLink()) path = realpathSync(path);
      keep = statSync(path).mode & 0o777;
    } catch {
      // a new file (or a link to none)
    }
  }
  // Created anew, never an existing file or a link someone planted under a name they could guess.
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(temp, 'wx', keep);
    try {
      fchmodSync(fd, keep); // whatever the umask took away
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw new LocalError('write-failed', `Cannot write ${path}: ${(error as Error).message}`);
  }
}
