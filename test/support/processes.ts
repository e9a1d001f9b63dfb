/**
 * Processes for every real-process test: one definition of "alive", port and polling probes, and
 * a `ProcessSet` that owns every process a test file started (spawned here or adopted from a
 * production launcher) so that `stopAll()` leaves nothing running.
 *
 * "Alive" excludes zombies: on machines whose PID 1 never reaps, a killed orphan stays a zombie
 * forever and `kill(pid, 0)` alone would call it alive.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { LineLog } from './line-log.ts';
import { EVERYTHING, REPO } from './paths.ts';

const STOP_GRACE_MS = 5_000;
const START_TIMEOUT_MS = 30_000;

/** True while `pid` is a live (non-zombie) process. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/**
 * True once `pid` runs `file` itself: its argv[0] is `file`, so every exec before it (setpriv,
 * prlimit, a shell) is done, and whatever those set up for it is in place.
 */
export function runsFile(pid: number, file: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === file;
  } catch {
    return false;
  }
}

/** The live processes (zombies aside: a PID 1 that reaps nothing keeps them) of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(group) === pgid && state !== 'Z' && state !== 'X' ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

/** The pids among `pids` that are still alive. */
export function livePids(pids: readonly number[]): number[] {
  return pids.filter(isAlive);
}

/** SIGKILLs the process group of every pid still alive (servers are spawned as group leaders). */
export function killGroups(pids: readonly number[]): void {
  for (const pid of livePids(pids)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Gone between the probe and the kill.
    }
  }
}

/** Polls `probe` every 25 ms until it returns a value, failing after `tries` attempts. */
export async function waitFor<T>(probe: () => T | undefined, what: string, tries = 400): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

/** Polls `probe` until it returns true; for hooks, where `expect.poll` is not available. */
export async function waitUntil(probe: () => Promise<boolean> | boolean, what: string, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A free TCP port on 127.0.0.1 (free when asked; the caller binds it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

export interface RunningProcess {
  child: ChildProcess;
  /** Everything written so far (from adoption on), for assertions and failure messages. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it has exited. */
  stop(): Promise<void>;
}

/** Every process a test file started; `stopAll` in `afterAll`/`afterEach`. */
export class ProcessSet {
  readonly #running = new Set<RunningProcess>();
  readonly #afterStop: Array<() => void> = [];

  spawn(command: string, args: string[], env: Record<string, string> = {}): RunningProcess {
    return this.adopt(spawn(command, args, { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  /** Takes ownership of a child another launcher spawned (the production Deno launcher). */
  adopt(child: ChildProcess): RunningProcess {
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited =
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve<number | string>(child.exitCode ?? child.signalCode ?? -1)
        : new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    const running: RunningProcess = {
      child,
      stdout: () => out,
      stderr: () => err,
      exited,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await exited;
          clearTimeout(timer);
        }
        this.#running.delete(running);
      },
    };
    this.#running.add(running);
    return running;
  }

  /** Runs `fn` after every process stopped (e.g. ending the servers a SIGKILLed sidecar left). */
  afterStop(fn: () => void): void {
    this.#afterStop.push(fn);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#running].map((p) => p.stop()));
    for (const fn of this.#afterStop.splice(0)) fn();
  }
}

/** A child process with line logs of its stdout and stderr (JSON lines parsed, arrival times kept). */
export interface WatchedProcess {
  process: RunningProcess;
  pid: number;
  out: LineLog;
  err: LineLog;
}

export function watch(process: RunningProcess): WatchedProcess {
  return { process, pid: process.child.pid!, out: new LineLog(process.child.stdout!), err: new LineLog(process.child.stderr!) };
}

/** Resolves when `read()` matches `pattern`; rejects if the process exits or time runs out first. */
export async function waitForOutput(proc: RunningProcess, read: () => string, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  for (;;) {
    const match = read().match(pattern);
    if (match !== null) return match;
    if (exited || Date.now() > deadline) {
      throw new Error(`${what} did not start: ${exited ? 'it exited' : 'timed out'}\nstdout:\n${proc.stdout()}\nstderr:\n${proc.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** server-everything's Streamable HTTP server on a free port; its MCP endpoint is `<url>/mcp`. */
/** A modern-only (2026-07-28) Streamable HTTP server: `modern-http-server.mjs` in front of a modern stdio fixture. */
export async function startModernHttp(procs: ProcessSet, fixture: string): Promise<{ url: string; process: RunningProcess }> {
  const proc = procs.spawn(process.execPath, [join(REPO, 'test/fixtures/modern-http-server.mjs'), fixture], { PORT: '0' });
  const match = await waitForOutput(proc, proc.stderr, /listening on port (\d+)/, 'modern-http-server');
  return { url: `http://127.0.0.1:${match[1]}/mcp`, process: proc };
}

export async function startEverythingHttp(procs: ProcessSet): Promise<{ url: string; process: RunningProcess }> {
  const port = await freePort();
  const proc = procs.spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { PORT: String(port) });
  await waitForOutput(proc, proc.stderr, /listening on port/, 'server-everything');
  return { url: `http://127.0.0.1:${port}/mcp`, process: proc };
}
