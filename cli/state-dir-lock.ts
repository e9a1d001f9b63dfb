/**
 * One process per state dir. `switchyard start` rewrites the configs, the client config and the
 * OAuth state under its state dir, and `switchyard worker` the OAuth state under its own: a second
 * process on the same dir would run beside the first and rewrite its files under it (the first
 * one's printed client config then names the wrong port; each makes its own sealing key and the
 * last write wins). The second is refused instead, naming the first.
 *
 * The lock is a file, `<dir>/switchyard.lock`, created exclusively and holding the owner's pid
 * and, on Linux, the pid's start time: a lock whose process is gone (killed, the machine
 * restarted) or whose pid now belongs to another process is taken over.
 *
 * @module
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalError } from '../shared/errors.ts';

export const LOCK_FILE = 'switchyard.lock';

export interface LockOwner {
  pid: number;
  /** What holds it, for the refusal: `switchyard start on http://127.0.0.1:8787`. */
  what: string;
  /** The pid's start time in clock ticks after boot (`/proc/PID/stat`), where there is one. */
  started?: string;
}

export interface StateDirLock {
  readonly file: string;
  /** Says what holds the dir, once it is known (the port, after the worker listens). */
  describe(what: string): void;
  release(): void;
}

/** The process's start time, from `/proc/PID/stat` (field 22), or undefined off Linux. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function isRunning(owner: LockOwner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (owner.started === undefined) return true;
  const started = processStart(owner.pid);
  return started === undefined || started === owner.started;
}

function readOwner(file: string): LockOwner | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined; // gone since, or half-written by a process that died: no owner
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { pid, what, started } = value as Record<string, unknown>;
  if (!Number.isInteger(pid) || typeof what !== 'string') return undefined;
  return { pid: pid as number, what, ...(typeof started === 'string' ? { started } : {}) };
}

/**
 * Takes `dir`'s lock for this process, or throws `LocalError('state-dir-in-use')` naming the
 * process that holds it. Released by `release()`, and at this process's exit whatever the path.
 */
export function lockStateDir(dir: string, what: string): StateDirLock {
  const file = join(dir, LOCK_FILE);
  const started = processStart(process.pid);
  const write = (description: string, exclusive: boolean) =>
    writeFileSync(file, JSON.stringify({ pid: process.pid, what: description, ...(started !== undefined ? { started } : {}) }) + '\n', {
      mode: 0o644,
      ...(exclusive ? { flag: 'wx' } : {}),
    });
  for (let attempt = 0; ; attempt++) {
    try {
      write(what, true);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = readOwner(file);
    if (owner !== undefined && isRunning(owner)) {
      throw new LocalError('state-dir-in-use', `State dir ${dir} is in use by ${owner.what} (pid ${owner.pid}): stop it, or pass --state-dir with another folder`);
    }
    // A lock left by a process that is gone: removed, then created exclusively again, so of two
    // starts that both found it stale only one gets it. Twice is enough for that race; a third
    // time means something else keeps writing the file.
    if (attempt === 2) throw new LocalError('state-dir-in-use', `Cannot lock state dir ${dir}: ${file} keeps coming back; remove it if no switchyard runs on this folder`);
    rmSync(file, { force: true });
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    // Only our own: a lock another process took over after ours was found stale is theirs.
    if (readOwner(file)?.pid === process.pid) rmSync(file, { force: true });
  };
  process.once('exit', release);
  return {
    file,
    describe: (description) => {
      if (held) write(description, false);
    },
    release: () => {
      process.off('exit', release);
      release();
    },
  };
}
