/**
 * StdioCommandResolver: turns a server entry's `command` (`npx`, `./server`, `C:\tools\x.exe`)
 * into the file the executor spawns, before anything is launched.
 *
 * The executor never uses a shell, so PATH (and PATHEXT on Windows) is searched here; the Windows
 * rules, `.cmd` / `.bat` shims through `%ComSpec%` included, live in `windows/`. Pure: the platform,
 * environment, working directory and a file-exists probe come in as arguments, so both
 * platforms are tested on any machine.
 *
 * @module
 */
import { posix } from 'node:path';
import { LocalError } from '../../shared/errors.ts';
import { commandNotFound, type ResolveContext, type ResolvedCommand } from './resolved-command.ts';
import { resolveWindowsCommand } from './windows/windows-command-resolver.ts';

export type { ResolveContext, ResolvedCommand } from './resolved-command.ts';

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
  return context.platform === 'win32' ? resolveWindowsCommand(command, args, context) : resolvePosix(command, args, context);
}

function resolvePosix(command: string, args: readonly string[], { env, cwd, isFile }: ResolveContext): ResolvedCommand {
  if (command.includes('/')) {
    const file = posix.resolve(cwd, command);
    if (isFile(file)) return { file, args: [...args] };
    throw commandNotFound(command, false);
  }
  for (const dir of (env.PATH ?? '').split(':')) {
    if (dir === '') continue;
    const file = posix.resolve(cwd, dir, command);
    if (isFile(file)) return { file, args: [...args] };
  }
  throw commandNotFound(command, true);
}

