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
import { randomBytes } from 'node:crypto';
import { linkSync, lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

/** A lock file's owner; `undefined` when it names none (half-written, or not a lock at all). */
function readOwner(file: string): LockOwner | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { pid, what, started } = value as Record<string, unknown>;
  if (!Number.isInteger(pid) || typeof what !== 'string') return undefined;
  return { pid: pid as number, what, ...(typeof started === 'string' ? { started } : {}) };
}

/** A lock file naming no owner is taken for a process's that died writing it only once it is this old. */
const UNREADABLE_LOCK_GRACE_MS = 10_000;

/**
 * Writes `text` to a new file beside `file` and puts it in place in one step, so no process ever
 * reads a lock half-written: `link` (`exclusive`: fails if `file` exists) or `rename` (replacing
 * the file itself, never a symlink's target).
 */
function placeFile(file: string, text: string, exclusive: boolean): void {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(temporary, text, { mode: 0o644, flag: 'wx' });
  try {
    if (exclusive) linkSync(temporary, file);
    else renameSync(temporary, file);
  } finally {
    rmSync(temporary, { force: true });
  }
}

/**
 * Takes `dir`'s lock for this process, or throws `LocalError('state-dir-in-use')` naming the
 * process that holds it. Released by `release()`, and at this process's exit whatever the path.
 */
/** How a refusal names the folder, and what to do when another process holds it. */
export interface LockedFolder {
  /** `State dir`, `Config dir`. */
  readonly noun: string;
  readonly fix: string;
}

const STATE_DIR: LockedFolder = { noun: 'State dir', fix: 'stop it, or pass --state-dir with another folder' };

export function lockStateDir(dir: string, what: string, folder: LockedFolder = STATE_DIR): StateDirLock {
  const lower = folder.noun.toLowerCase();
  const file = join(dir, LOCK_FILE);
  const started = processStart(process.pid);
  const text = (description: string) => JSON.stringify({ pid: process.pid, what: description, ...(started !== undefined ? { started } : {}) }) + '\n';
  for (let attempt = 0; ; attempt++) {
    try {
      placeFile(file, text(what), true);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const stat = lstatSync(file, { throwIfNoEntry: false });
    if (stat === undefined) continue; // released meanwhile: try again
    if (!stat.isFile()) throw new LocalError('state-dir-in-use', `Cannot lock ${lower} ${dir}: ${file} is not a regular file; remove it if no switchyard runs on this folder`);
    const owner = readOwner(file);
    if (owner !== undefined && isRunning(owner)) {
      throw new LocalError('state-dir-in-use', `${folder.noun} ${dir} is in use by ${owner.what} (pid ${owner.pid}): ${folder.fix}`);
    }
    if (owner === undefined && Date.now() - stat.mtimeMs < UNREADABLE_LOCK_GRACE_MS) {
      throw new LocalError('state-dir-in-use', `${folder.noun} ${dir} is being locked by another process (${file} names no owner yet): try again, or remove it if no switchyard runs on this folder`);
    }
    if (attempt === 2) throw new LocalError('state-dir-in-use', `Cannot lock ${lower} ${dir}: ${file} keeps coming back; remove it if no switchyard runs on this folder`);
    // A lock left by a process that is gone: moved aside, and dropped only if it is still that
    // one. Two starts may both have found it stale: the second one's move would take the first
    // one's fresh lock, which it then puts back.
    const aside = `${file}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
    try {
      renameSync(file, aside);
    } catch {
      continue; // moved by another start first
    }
    const moved = readOwner(aside);
    if (moved !== undefined && isRunning(moved)) {
      try {
        linkSync(aside, file);
      } catch {
        // Another start took the place meanwhile: the lock stays that one's.
      }
    }
    rmSync(aside, { force: true });
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
      if (held) placeFile(file, text(description), false);
    },
    release: () => {
      process.off('exit', release);
      release();
    },
  };
}
