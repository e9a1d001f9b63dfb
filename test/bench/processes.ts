/**
 * Process management for the benchmark: every process it starts is registered here, and so is
 * every process those processes start (server pids read from the sidecar log, the children of
 * supergateway and mcp-proxy found through /proc), so that a run leaves nothing behind — after
 * success, after a failure, and after Ctrl-C or SIGTERM (`installCleanup`).
 *
 * Stopping is SIGTERM, a grace period, then SIGKILL for the process and every descendant that
 * is still alive: a gateway killed before its child would otherwise orphan the server.
 *
 * Linux only (it reads /proc), like the rest of the benchmark (bubblewrap, VmRSS).
 *
 * @module
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { REPO } from '../support/paths.ts';
import { schedCpuNs } from './sched-cpu.ts';
import { isAlive } from '../support/processes.ts';

export { DENO, EVERYTHING, REPO } from '../support/paths.ts';

const STOP_GRACE_MS = 3_000;

export interface BenchProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<number | string>;
  /** Resolves with the first match of `pattern` in stdout or stderr; rejects on exit or timeout. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

/** Every process a benchmark run owns, plus stray pids to kill at the end. */
export class ProcessRegistry {
  readonly #running = new Set<BenchProcess>();
  readonly #strays = new Set<number>();
  readonly #afterStop: Array<() => void> = [];

  /** Runs `fn` once every process is gone (scratch dirs the processes were using). */
  afterStop(fn: () => void): void {
    this.#afterStop.push(fn);
  }

  spawn(name: string, command: string, args: readonly string[], env: Record<string, string> = {}): BenchProcess {
    const child = spawn(command, args, { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid === undefined) throw new Error(`${name}: spawn failed (${command})`);
    return this.track(name, child);
  }

  /** Takes ownership of a child another launcher spawned (the production Deno launcher). */
  track(name: string, child: ChildProcess): BenchProcess {
    if (child.pid === undefined) throw new Error(`${name}: not running`);
    // Logs are kept bounded: a chatty process must not grow the bench's own RSS without limit.
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out = keepTail(out + d)));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err = keepTail(err + d)));
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    let gone = false;
    void exited.then(() => (gone = true));
    const proc: BenchProcess = {
      name,
      child,
      pid: child.pid,
      stdout: () => out,
      stderr: () => err,
      exited,
      async waitFor(pattern, timeoutMs = 30_000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const match = out.match(pattern) ?? err.match(pattern);
          if (match !== null) return match;
          if (gone || Date.now() > deadline) {
            throw new Error(`${name} ${gone ? 'exited' : 'timed out'} before printing ${pattern}\nstdout:\n${out.slice(-2000)}\nstderr:\n${err.slice(-2000)}`);
          }
          await sleep(20);
        }
      },
    };
    this.#running.add(proc);
    return proc;
  }

  /** A pid this run caused to exist but did not spawn itself (a server started by the sidecar). */
  adopt(pid: number): void {
    this.#strays.add(pid);
  }

  /** Stops one process and its descendants. */
  async stop(proc: BenchProcess): Promise<void> {
    const tree = descendants(proc.pid);
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGTERM');
      const timer = setTimeout(() => proc.child.kill('SIGKILL'), STOP_GRACE_MS);
      await proc.exited;
      clearTimeout(timer);
    }
    await killAll(tree);
    this.#running.delete(proc);
  }

  /** Stops everything, most recently started first (sidecars before the worker they link to). */
  async stopAll(): Promise<void> {
    for (const proc of [...this.#running].reverse()) await this.stop(proc);
    // Strays, and anything still parented to the bench itself (servers spawned in-process by the
    // direct stdio client or the counting sidecar, which run in their own process groups).
    // esbuild's service process (tsx, the bundle build) is ours too but ends with us on its own.
    await killAll([...this.#strays, ...descendants(process.pid).filter((pid) => !cmdline(pid).includes('esbuild'))]);
    this.#strays.clear();
    for (const fn of this.#afterStop.splice(0)) {
      try {
        fn();
      } catch {
        // Best effort: a scratch dir left behind is not worth failing the run for.
      }
    }
  }
}

/** Kills what is still alive among `pids` (SIGTERM, then SIGKILL after a grace period). */
async function killAll(pids: readonly number[]): Promise<void> {
  const alive = pids.filter(isAlive);
  for (const pid of alive) signal(pid, 'SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (alive.some(isAlive) && Date.now() < deadline) await sleep(50);
  for (const pid of alive.filter(isAlive)) signal(pid, 'SIGKILL');
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

export { isAlive };

function procStatus(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** Resident set size of a process in KiB (VmRSS), or null once it is gone. */
export function rssKb(pid: number): number | null {
  const match = procStatus(pid)?.match(/^VmRSS:\s+(\d+)\s+kB/m);
  return match ? Number(match[1]) : null;
}

/**
 * A process's resident pages in KiB by what they hold, or null once it is gone: `anonymous` is its
 * own memory (heaps, stacks, its data); `file` the pages of files it maps, above all the `node`
 * binary's code, clean, shared with every process running the same binary and dropped by the
 * kernel at no cost when memory is short.
 */
export function residentPartsKb(pid: number): { anonymous: number; file: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return null;
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { anonymous: field('Anonymous'), file: field('Rss') - field('Anonymous') };
}

/** Length of a /proc clock tick in ms (USER_HZ; 100 Hz on every mainstream Linux). */
export const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/**
 * CPU time (user + system) a process has used so far, in ms; null once it is gone. Unlike
 * wall-clock latency this does not move when other work shares the machine, which makes it the
 * steadier number for before/after comparisons.
 *
 * Read from the scheduler's own count for each of its threads (`schedCpuNs`, in ns), not from
 * /proc/<pid>/stat, whose utime and stime come in 10 ms ticks: a timed loop of a few hundred calls
 * is 50-200 ms of a gateway process's CPU, so one tick more or less moved its per-call figure by
 * 5-20 %, more than most changes being judged (issue 17). The two agree over long spans; the ticks
 * serve where schedstat cannot be read. A thread that ended inside a window takes its time out of
 * the sum: the gateways' threads (V8's, libuv's) live as long as they do.
 */
export function cpuMs(pid: number): number | null {
  if (!SCHEDSTAT) return tickCpuMs(pid);
  try {
    return schedCpuNs(pid) / 1e6;
  } catch {
    return null; // gone
  }
}

/** Whether this kernel keeps per-thread schedstat (CONFIG_SCHED_INFO, on in every mainstream one). */
const SCHEDSTAT = existsSync('/proc/self/schedstat');

/** `cpuMs` from /proc/<pid>/stat's clock ticks; null once the process is gone. */
function tickCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return null;
  }
}

/** Every descendant pid of `root`, read from /proc (children before grandchildren). */
export function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the ppid; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // Exited while we looked.
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [pid, ppid] of parentOf) {
      if (ppid === parent) {
        out.push(pid);
        queue.push(pid);
      }
    }
  }
  return out;
}

/**
 * Ends every registered process when the run ends for any reason. A second Ctrl-C while cleaning
 * up exits at once (the grace periods are short, so this is rarely needed).
 */
export function installCleanup(registry: ProcessRegistry, extra: () => Promise<void> = async () => {}): () => Promise<void> {
  let cleaning: Promise<void> | null = null;
  const cleanup = (): Promise<void> => (cleaning ??= extra().catch(() => {}).then(() => registry.stopAll()));
  const onSignal = (sig: NodeJS.Signals) => {
    if (cleaning !== null) process.exit(130);
    process.stderr.write(`\n${sig}: stopping every benchmark process…\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('uncaughtException', (error) => {
    process.stderr.write(`bench: ${error.stack ?? error.message}\n`);
    void cleanup().finally(() => process.exit(1));
  });
  return cleanup;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function keepTail(text: string): string {
  return text.length > 1_000_000 ? text.slice(-500_000) : text;
}
