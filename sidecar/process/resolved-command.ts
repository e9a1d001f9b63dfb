/**
 * What command resolution takes and gives, shared by the POSIX and Windows resolvers.
 *
 * @module
 */
import { LocalError } from '../../shared/errors.ts';

export interface ResolveContext {
  readonly platform: NodeJS.Platform;
  /** The environment whose PATH / PATHEXT / ComSpec apply (names are case-insensitive on Windows). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Directory a relative command (one with a path separator) is resolved against. */
  readonly cwd: string;
  /** Whether `path` is an existing file the process may execute. */
  readonly isFile: (path: string) => boolean;
}

/** What to spawn; `verbatim` means: pass `args` to CreateProcess unquoted (Windows only). */
export interface ResolvedCommand {
  readonly file: string;
  readonly args: readonly string[];
  readonly verbatim?: boolean;
}

/** The error for a command that resolves to no file, before any launch. */
export function commandNotFound(command: string, onPath: boolean): LocalError {
  const where = onPath ? ' on PATH' : '';
  return new LocalError('command-not-found', `Cannot launch server: command "${command}" not found${where}`);
}
