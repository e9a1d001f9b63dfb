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
