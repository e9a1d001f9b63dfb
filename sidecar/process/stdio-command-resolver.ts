/**
 * StdioCommandResolver: turns a server entry's `command` (`npx`, `./server`, `C:\tools\x.exe`)
 * into the file the executor spawns, before anything is launched.
 *
 * The executor never uses a shell, so PATH (and PATHEXT on Windows) is searched here. A Windows
 * `.cmd` / `.bat` file, such as npm's `npx.cmd`, cannot be spawned directly: it runs through
 * `%ComSpec% /d /s /c "<line>"` with a line from the tested quoting helper. Pure: the platform,
 * environment, working directory and a file-exists probe come in as arguments, so both
 * platforms are tested on any machine.
 *
 * @module
 */
import { posix, win32 } from 'node:path';
import { LocalError } from '../../shared/errors.ts';
import { cmdShimArguments } from './windows/windows-command-line.ts';

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

const DEFAULT_PATHEXT = '.COM;.EXE;.BAT;.CMD';
const DEFAULT_COMSPEC = 'C:\\Windows\\System32\\cmd.exe';
const DIRECT = new Set(['.exe', '.com']);
const BATCH = new Set(['.cmd', '.bat']);

/**
 * Resolves `command` to a spawnable file, or throws LocalError `'command-not-found'`.
 *
 * POSIX: a command with a `/` is resolved against `cwd`; otherwise each PATH entry is tried in
 * order (empty entries are skipped rather than meaning the current directory). Windows: PATH
 * entries in order, each with the PATHEXT extensions in order; the current directory is never
 * searched implicitly; `.exe`/`.com` are spawned directly and `.cmd`/`.bat` through ComSpec.
 *
 * @example
 * ```ts
 * resolveStdioCommand('npx', ['-y', 'pkg'], { platform: 'linux', env: { PATH: '/usr/bin' }, cwd: '/', isFile: (p) => p === '/usr/bin/npx' });
 * // => { file: '/usr/bin/npx', args: ['-y', 'pkg'] }
 * ```
 */
export function resolveStdioCommand(command: string, args: readonly string[], context: ResolveContext): ResolvedCommand {
  if (command.trim() === '') throw new LocalError('command-not-found', 'Cannot launch server: the command is empty');
  return context.platform === 'win32' ? resolveWindows(command, args, context) : resolvePosix(command, args, context);
}

function notFound(command: string, onPath: boolean): LocalError {
  const where = onPath ? ' on PATH' : '';
  return new LocalError('command-not-found', `Cannot launch server: command "${command}" not found${where}`);
}

function resolvePosix(command: string, args: readonly string[], { env, cwd, isFile }: ResolveContext): ResolvedCommand {
  if (command.includes('/')) {
    const file = posix.resolve(cwd, command);
    if (isFile(file)) return { file, args: [...args] };
    throw notFound(command, false);
  }
  for (const dir of (env.PATH ?? '').split(':')) {
    if (dir === '') continue;
    const file = posix.resolve(cwd, dir, command);
    if (isFile(file)) return { file, args: [...args] };
  }
  throw notFound(command, true);
}

/** Windows environment names are case-insensitive: `Path`, `PATH` and `path` are one variable. */
function windowsEnv(env: ResolveContext['env'], name: string): string | undefined {
  const key = Object.keys(env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : env[key];
}

function resolveWindows(command: string, args: readonly string[], context: ResolveContext): ResolvedCommand {
  const { env, cwd, isFile } = context;
  const extensions = (windowsEnv(env, 'PATHEXT') || DEFAULT_PATHEXT)
    .split(';')
    .map((ext) => ext.trim().toLowerCase())
    .filter((ext) => ext.startsWith('.'));
  const launchable = (file: string) => {
    const ext = win32.extname(file).toLowerCase();
    return (DIRECT.has(ext) || BATCH.has(ext)) && isFile(file);
  };
  // A name that already has an extension is tried as it is first, then with each PATHEXT extension.
  const candidates = (base: string) => [...(win32.extname(base) ? [base] : []), ...extensions.map((ext) => base + ext)];
  const hasDirectory = /[\\/]/.test(command) || /^[a-zA-Z]:/.test(command);
  const dirs = hasDirectory
    ? [win32.resolve(cwd, win32.dirname(command))]
    : (windowsEnv(env, 'PATH') ?? '')
        .split(';')
        .map((dir) => dir.trim().replace(/^"(.*)"$/, '$1'))
        .filter((dir) => win32.isAbsolute(dir) && !/^[\\/](?![\\/])/.test(dir)); // no cwd-relative entries
  const name = hasDirectory ? win32.basename(command) : command;
  for (const dir of dirs) {
    const file = candidates(win32.join(dir, name)).find(launchable);
    if (file === undefined) continue;
    if (DIRECT.has(win32.extname(file).toLowerCase())) return { file, args: [...args] };
    const comSpec = windowsEnv(env, 'ComSpec') || DEFAULT_COMSPEC;
    return { file: comSpec, args: cmdShimArguments(file, args), verbatim: true };
  }
  throw notFound(command, !hasDirectory);
}
