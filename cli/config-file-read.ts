/**
 * How the CLI words a config file it cannot use as JSON, in plain words:
 *
 * - a file that cannot be read says why: `not found`, `not a file` or `not readable`, never an
 *   errno;
 * - a syntax error names its line and column after the position, `at position 20 (line 3
 *   column 3)`, as the worker's own log does: under Deno, V8 adds them to `JSON.parse`'s message;
 *   Node 20's V8 does not, so they are added here, in V8's words, and only where missing.
 *
 * @module
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { fileReadProblem, type FileReadProblem } from '../shared/file-read-problem.ts';
import type { ValidationIssue } from '../shared/validation.ts';
import { lineAndColumn } from '../shared/text-position.ts';


/** Why `path` cannot be read as a file, or `undefined` when it can. */
export function unreadable(path: string): FileReadProblem | undefined {
  try {
    if (!statSync(path).isFile()) return 'not a file';
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (error) {
    return fileReadProblem(error);
  }
}

/**
 * `JSON.parse`'s message with the line and column of its position, 1-based, as Deno's V8 words
 * them; unchanged when it names no position or already has them.
 *
 * @example Node 20's message, completed
 * ```ts
 * withLineAndColumn('Expected double-quoted property name in JSON at position 11', '{\n "a": 1,\n}');
 * // 'Expected double-quoted property name in JSON at position 11 (line 3 column 1)'
 * ```
 */
export function withLineAndColumn(message: string, text: string): string {
  const match = /at position (\d+)(?!\d| \(line)/.exec(message);
  if (match === null) return message;
  const { line, column } = lineAndColumn(text, Number(match[1]));
  return message.replace(match[0], `${match[0]} (line ${line} column ${column})`);
}

/** Problems with a syntax error's line and column added, from the text that was parsed. */
export function locateSyntaxError(issues: readonly ValidationIssue[], text: string): ValidationIssue[] {
  return issues.map((issue) => (issue.path === '(root)' ? { ...issue, message: withLineAndColumn(issue.message, text) } : issue));
}

/** {@link locateSyntaxError} for a file whose text the parser did not hand back: it is read again. */
export function locateSyntaxErrorInFile(file: string, issues: readonly ValidationIssue[]): ValidationIssue[] {
  try {
    return locateSyntaxError(issues, readFileSync(file, 'utf8'));
  } catch {
    return [...issues];
  }
}
