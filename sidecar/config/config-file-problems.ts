/**
 * One wording for a config file's problems, whoever finds them: `switchyard check` prints it, and
 * a command that cannot start because of a file (the sidecar's `sidecar.json`) fails with it, so
 * what a user sees when the sidecar refuses its config is what `check` would have told them.
 *
 * ```text
 * /etc/switchyard/sidecar.json: 2 problems (sidecar config)
 *   worker: must be an absolute URL
 *   extra: unknown key
 * ```
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { jsonSyntaxProblem } from '../../shared/json-syntax-problem.ts';
import { duplicateKeyIssue } from '../../shared/json-duplicate-key.ts';
import { LocalError } from '../../shared/errors.ts';
import { fileReadProblem } from '../../shared/file-read-problem.ts';
import type { ValidationIssue } from '../../shared/validation.ts';
import { describeFileProblems } from '../../shared/file-problems-report.ts';


/** A config file that cannot be used; its message is the {@link describeFileProblems} report. */
export class ConfigFileError extends LocalError {
  override readonly name = 'ConfigFileError';

  constructor(
    readonly file: string,
    readonly kind: string,
    readonly issues: readonly ValidationIssue[],
  ) {
    super('invalid-config', describeFileProblems(file, kind, issues));
  }
}

export type JsonFileRead = { readonly ok: true; readonly text: string; readonly json: unknown } | { readonly ok: false; readonly missing: boolean; readonly issue: ValidationIssue };

/** Reads and parses a JSON file; a file that cannot be read or parsed is one `(root)` problem. */
export function readJsonFile(file: string): JsonFileRead {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const problem = fileReadProblem(error);
    return { ok: false, missing: problem === 'not found', issue: { path: '(root)', message: `cannot read "${file}": ${problem}` } };
  }
  return parsedJsonText(file, text);
}

/** A JSON file's text as `readJsonFile` reads it; `undefined`: the file is not there. */
export function parsedJsonText(file: string, text: string | undefined): JsonFileRead {
  if (text === undefined) return { ok: false, missing: true, issue: { path: '(root)', message: `cannot read "${file}": not found` } };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, missing: false, issue: { path: '(root)', message: jsonSyntaxProblem(error, text) } };
  }
  const duplicate = duplicateKeyIssue(text);
  return duplicate === undefined ? { ok: true, text, json } : { ok: false, missing: false, issue: duplicate };
}
