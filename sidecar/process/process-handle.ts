/**
 * ProcessHandle: one running server process and the process group it leads.
 *
 * The executor spawns every server detached, so the server leads its own process group and
 * anything it forks stays in that group. Disposal therefore signals the group (`-pid`), not the
 * pid, and keeps doing so after the leader has exited: grandchildren outlive their parent.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Logger } from '../log.ts';
import { runHelper } from './masked-spawn.ts';
import { windowsTreeKillCommand } from './windows/windows-tree-kill.ts';

/** How a process ended: an exit code, or the signal that killed it. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/** A started process. The caller owns it and must `dispose()` it. */
export interface ProcessHandle {
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Resolves when the leader exits (its group may hold more processes). */
  readonly exited: Promise<ProcessExit>;
  /**
   * Ends the process tree: closes stdin, waits briefly for a voluntary exit, sends SIGTERM to
   * the group, and after `graceMs` SIGKILL. `graceMs` 0 kills at once. Idempotent.
   */
  dispose(graceMs?: number): Promise<ProcessExit>;
  /** Whether `dispose()` has been called: an exit from then on was asked for (the host shutting down, a budget making room). */
  readonly ending: boolean;
}

/** Stages of disposal, in milliseconds. */
export interface StopTimings {
  /** Wait for a voluntary exit after stdin closes. */
  readonly stdinGraceMs: number;
  /** Wait after SIGTERM before SIGKILL. */
  readonly termGraceMs: number;
}

const POLL_MS = 25;
const KILL_SETTLE_MS = 2000;

/** The executor's `ProcessHandle` over a Node `ChildProcess` spawned with `detached: true`. */
export class ChildProcessHandle implements ProcessHandle {
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly exited: Promise<ProcessExit>;
  readonly #child: ChildProcess;
  readonly #timings: StopTimings;
  readonly #logger: Logger;
  readonly #started: Promise<void>;
  readonly #gone: Promise<void>;
  #markGone!: () => void;
  #exit: ProcessExit | undefined;
  #spawned = false;
  #disposing: Promise<ProcessExit> | undefined;
  /** Processes of the tree outside the group (`adopt`), each with its start time, so a reused pid is never signalled. */
  readonly #outside: { pid: number; start: string }[] = [];

  constructor(child: ChildProcess, timings: StopTimings, logger: Logger) {
    if (!child.stdin || !child.stdout || !child.stderr) throw new TypeError('Child process must be spawned with piped stdio');
    this.#child = child;
    this.#timings = timings;
    this.#logger = logger;
    this.pid = child.pid ?? 0;
    this.stdin = child.stdin;
    // Pass-throughs: Node discards child output that nobody listens to when the child exits, and
    // the executor peeks at raw stderr during sandbox setup. A pipe keeps both streams intact.
    this.stdout = child.stdout.pipe(new PassThrough());
    this.stderr = child.stderr.pipe(new PassThrough());
    for (const stream of [child.stdin, child.stdout, child.stderr]) {
      stream.on('error', (error) => logger.debug('Process stream error', { pid: this.pid, error }));
    }
    this.#gone = new Promise((resolve) => (this.#markGone = resolve));
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve((this.#exit = { code, signal })));
      child.once('error', () => {
        if (!this.#spawned) resolve((this.#exit = { code: null, signal: null }));
      });
    });
    this.#started = new Promise((resolve, reject) => {
      child.once('spawn', () => resolve(void (this.#spawned = true)));
      child.on('error', (error) => (this.#spawned ? logger.warn('Process error', { pid: this.pid, error }) : reject(error)));
    });
    this.#started.catch(() => {});
    void this.exited.then(async () => {
      if (this.pid <= 0 || !(await groupAlive(this.pid))) this.#markGone();
    });
  }

  /** Resolves once the OS has started the process; rejects with the spawn error or on abort. */
  started(signal?: AbortSignal): Promise<void> {
    if (!signal) return this.#started;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#started.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** The exit if the leader exits within `ms` (or has already); `undefined` on timeout or abort. */
  exitWithin(ms: number, signal?: AbortSignal): Promise<ProcessExit | undefined> {
    if (this.#exit) return Promise.resolve(this.#exit);
    return new Promise((resolve) => {
      const done = (exit: ProcessExit | undefined) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(exit);
      };
      const onAbort = () => done(undefined);
      const timer = setTimeout(onAbort, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      void this.exited.then(done);
    });
  }

  /** Resolves when the leader has exited and no live process is left in its group. */
  whenGroupGone(): Promise<void> {
    return this.#gone;
  }

  get ending(): boolean {
    return this.#disposing !== undefined;
  }

  dispose(graceMs: number = this.#timings.termGraceMs): Promise<ProcessExit> {
    this.#disposing ??= this.#stop(graceMs).finally(() => this.#markGone());
    return this.#disposing;
  }

  /**
   * Ends `pid`, a process of this tree that left the group (a sandbox's PID 1 after `setsid`),
   * with the group: at every SIGKILL to it, and once the group is gone after a dispose.
   */
  adopt(pid: number): void {
    const start = startTimeOf(pid);
    if (start !== undefined) this.#outside.push({ pid, start });
  }

  /** The pids `adopt` took (still alive then). */
  get adopted(): readonly number[] {
    return this.#outside.map((process) => process.pid);
  }

  /** Signals every process in the group, and at SIGKILL the adopted ones; a group that is already empty is not an error. */
  signalGroup(signal: NodeJS.Signals): void {
    if (signal === 'SIGKILL') this.#killOutside();
    if (this.pid <= 0) return; // never -0: that would be our own group
    try {
      if (process.platform === 'win32') {
        // Windows has no process groups or graceful signals: taskkill /T ends the whole tree.
        const { file, args } = windowsTreeKillCommand(this.pid, process.env);
        runHelper(file, args, { timeoutMs: 10_000 }).catch((error: unknown) => this.#logger.warn('Cannot signal process group', { pid: this.pid, signal, error }));
      } else process.kill(-this.pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') this.#logger.warn('Cannot signal process group', { pid: this.pid, signal, error });
    }
  }

  async #stop(graceMs: number): Promise<ProcessExit> {
    if (this.pid <= 0) return this.exited;
    if (!this.stdin.destroyed && !this.stdin.writableEnded) this.stdin.end();
    if (graceMs > 0) {
      await this.exitWithin(this.#timings.stdinGraceMs);
      this.signalGroup('SIGTERM');
      if (await this.#groupGoneWithin(graceMs)) {
        // A group that ended on SIGTERM may have left an adopted process behind: it never gets one.
        this.#killOutside();
        return this.exited;
      }
    }
    this.signalGroup('SIGKILL');
    const exit = await this.exited;
    await this.#groupGoneWithin(KILL_SETTLE_MS);
    return exit;
  }

  /** SIGKILL to each adopted process that is still the one adopted (a sandbox's PID 1 takes its namespace with it). */
  #killOutside(): void {
    for (const { pid, start } of this.#outside) {
      if (startTimeOf(pid) !== start) continue; // gone, or its pid is another process's now
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') this.#logger.warn('Cannot kill a sandbox process', { pid, error });
      }
    }
  }

  async #groupGoneWithin(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this.#exit && !(await groupAlive(this.pid))) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

/**
 * Whether process group `pgid` holds a live process. On Linux, zombies do not count: an
 * orphaned grandchild that was killed stays a zombie until its new parent reaps it, and on
 * hosts whose PID 1 never reaps (some containers) that is forever.
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  if (process.platform === 'win32') return false;
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''));
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

/**
 * When process `pid` started (field 22 of `/proc/PID/stat`, in clock ticks since boot), which
 * tells it apart from a later process given the same pid; `undefined` when it is gone, a zombie,
 * or this is not Linux.
 */
export function startTimeOf(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = statFields(stat);
  return fields[0] === 'Z' || fields[0] === 'X' ? undefined : fields[19];
}

/** The fields of a `/proc/PID/stat` after its command name, from `state` (0) on: "pid (comm) state ppid pgrp …", where comm may hold spaces and parentheses. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
