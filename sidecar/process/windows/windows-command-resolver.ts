/**
 * Windows command resolution: PATH entries in order, each with the PATHEXT extensions in order;
 * the current directory is never searched implicitly; `.exe`/`.com` are spawned directly and
 * `.cmd`/`.bat` (npm's `npx.cmd`) through `%ComSpec% /d /s /c "<line>"` with a line from the
 * quoting helper (`windows-command-line.ts`). Pure, so it is tested on Linux.
 *
 * @module
 */
import { win32 } from 'node:path';
import { commandNotFound, type ResolveContext, type ResolvedCommand } from '../resolved-command.ts';
import { cmdShimArguments } from './windows-command-line.ts';

const DEFAULT_PATHEXT = '.COM;.EXE;.BAT;.CMD';
const DEFAULT_COMSPEC = 'C:\\Windows\\System32\\cmd.exe';
const DIRECT = new Set(['.exe', '.com']);
const BATCH = new Set(['.cmd', '.bat']);

/** Windows environment names are case-insensitive: `Path`, `PATH` and `path` are one variable. */
function windowsEnv(env: ResolveContext['env'], name: string): string | undefined {
  const key = Object.keys(env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : env[key];
}

/** Resolves `command` on Windows, or throws LocalError `'command-not-found'`. */
export function resolveWindowsCommand(command: string, args: readonly string[], context: ResolveContext): ResolvedCommand {
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
  throw commandNotFound(command, !hasDirectory);
}
