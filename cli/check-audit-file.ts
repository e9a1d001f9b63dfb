/**
 * What `check` can tell of an `audit.file` without opening it (`auditFileProblem`), on this
 * machine's disk.
 *
 * @module
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ValidationIssue } from '../shared/validation.ts';
import { auditFileProblem, type PathKind } from '../shared/audit/audit-file-problem.ts';

/** Why the start could not open `file` (relative to `base`), or none that shows without opening it. */
export function auditFileIssues(file: string, base: string): ValidationIssue[] {
  const problem = auditFileProblem(resolve(base, file), nodePathKind);
  return problem === undefined ? [] : [{ path: 'audit.file', message: problem }];
}

/** What is at `path` on this machine (`PathKind`). */
export function nodePathKind(path: string): PathKind {
  try {
    return statSync(path).isDirectory() ? 'folder' : 'other';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? undefined : 'unknown';
  }
}
