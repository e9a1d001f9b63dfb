/**
 * What `check` can tell of an `audit.file` without opening it: a start opens the file before it
 * serves anything and refuses to start when it cannot (`audit.file: cannot open …`), so the
 * reasons that show on disk, a folder that is not there or a path that is a folder, are problems
 * of the config as the start will find it.
 *
 * @module
 */
import { statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { ValidationIssue } from '../shared/validation.ts';

/** Why the start could not open `file` (relative to `base`), or none that shows without opening it. */
export function auditFileIssues(file: string, base: string): ValidationIssue[] {
  const path = resolve(base, file);
  const folder = dirname(path);
  const folderStat = statOrUndefined(folder);
  if (folderStat === undefined) return [{ path: 'audit.file', message: `the folder "${folder}" does not exist, so the start would refuse to open "${path}": create the folder` }];
  if (!folderStat.isDirectory()) return [{ path: 'audit.file', message: `"${folder}" is not a folder, so the start would refuse to open "${path}"` }];
  if (statOrUndefined(path)?.isDirectory() === true) return [{ path: 'audit.file', message: `"${path}" is a folder: name a file in it` }];
  return [];
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
