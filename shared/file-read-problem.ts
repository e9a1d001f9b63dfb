/**
 * Why a file could not be read, in the words every config reader uses, whichever runtime read it:
 * `check` and each start said `not found` of a missing file where a reload, the sidecar's
 * reading of `sidecar.json` and of `mcp.json` said `ENOENT` or threw the runtime's error. Node's
 * and Deno's errors both carry the errno as `code`; Deno's permission refusal (`NotCapable`) has
 * none and is `not readable`.
 *
 * @module
 */

export type FileReadProblem = 'not found' | 'not a file' | 'not readable';

/** What a failed read of a file means to its user. */
export function fileReadProblem(error: unknown): FileReadProblem {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'not found';
  if (code === 'EISDIR') return 'not a file';
  return 'not readable';
}

/**
 * Why a file could not be opened to write (an audit file), in the same words on Node and Deno:
 * Node said `ENOENT` where Deno said `No such file or directory (os error 2): open '…'`.
 */
export function fileWriteProblem(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const name = (error as { name?: unknown } | null)?.name;
  if (code === 'ENOENT') return 'its folder does not exist';
  if (code === 'ENOTDIR') return 'a part of its path is not a folder';
  if (code === 'EISDIR') return 'it is a folder';
  if (code === 'EROFS') return 'its file system is read-only';
  if (code === 'EACCES' || code === 'EPERM' || name === 'PermissionDenied' || name === 'NotCapable') return 'not writable';
  return typeof code === 'string' ? code : String((error as Error | null)?.message ?? error);
}
