/**
 * What shows on disk of an `audit.file` before it is opened: a start opens the file before it
 * serves anything and refuses to start when it cannot, so a folder that is not there, or a path
 * that is a folder, is a problem of the config as the next start will find it. `switchyard check`
 * reports it (`cli/check-audit-file.ts`), and a live reload that changes `audit.file` refuses it
 * (`worker/config/config-reloader.ts`): put in force, it would only show at that next start, as a worker that no
 * longer starts. Web-standard: each runtime says what a path is.
 *
 * @module
 */

/** What is at a path: a folder, something else, nothing (`undefined`), or what this process may not look at. */
export type PathKind = 'folder' | 'other' | 'unknown' | undefined;

/**
 * Why the start could not open `path` (already resolved against the config file's folder), or
 * `undefined` when nothing on disk says so.
 */
export function auditFileProblem(path: string, kindOf: (path: string) => PathKind): string | undefined {
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  const folder = cut <= 0 ? (cut === 0 ? path.slice(0, 1) : '.') : path.slice(0, cut);
  const folderKind = kindOf(folder);
  // A worker under Deno may read only its own files: what it cannot see, it does not judge.
  if (folderKind === 'unknown') return undefined;
  if (folderKind === undefined) return `the folder "${folder}" does not exist, so the start would refuse to open "${path}": create the folder`;
  if (folderKind !== 'folder') return `"${folder}" is not a folder, so the start would refuse to open "${path}"`;
  if (kindOf(path) === 'folder') return `"${path}" is a folder: name a file in it`;
  return undefined;
}
