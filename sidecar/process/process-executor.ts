/**
 * ProcessExecutor: the one way the sidecar starts an MCP server process.
 *
 * Two branches, one entry point. `policy === null` spawns the command directly; a compiled
 * `ContainmentPolicy` spawns it under bubblewrap (Linux) or sandbox-exec (macOS). A contained
 * launch that fails is reported as `containment-unavailable` or `launch-failed` and is never
 * retried without the policy: required containment fails closed. Every process gets its own
 * process group, so disposal can end the whole tree, grandchildren included.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { LocalError, WireError } from '../../shared/errors.ts';
import { type Logger, silentLogger } from '../log.ts';
import type { ContainmentPolicy } from '../sandbox/containment-policy.ts';
import type { Readable } from 'node:stream';
import { whenSandboxReady, type SandboxReadiness } from '../sandbox/bubblewrap/bubblewrap-ready.ts';
import { ChildProcessHandle, type ProcessExit, type ProcessHandle, type StopTimings } from './process-handle.ts';

export type { ProcessExit, ProcessHandle } from './process-handle.ts';

/** What to start. `command` is an already-resolved file (see `resolveStdioCommand`). */
export interface ProcessLaunchRequest {
  readonly command: string;
  readonly args: readonly string[];
  /** Working directory of an uncontained launch; a contained one uses `policy.cwd`. */
  readonly cwd?: string;
  /** The complete environment of an uncontained launch; a contained one uses `policy.env`. */
  readonly env: Readonly<Record<string, string>>;
  /** `null`: ordinary process. Otherwise the compiled policy, applied or the launch fails. */
  readonly policy: ContainmentPolicy | null;
  /** Windows only: pass `args` to CreateProcess unquoted (a `cmd.exe /d /s /c "…"` line). */
  readonly verbatim?: boolean;
}

/** Which branch a launch took: `'none'` is the ordinary, uncontained spawn. */
export type ContainmentBackend = 'none' | ContainmentPolicy['backend'];

/** One spawn the executor made, reported so tests and logs can count launches per backend. */
export interface SpawnAttempt {
  readonly backend: ContainmentBackend;
  readonly file: string;
  readonly pid: number | undefined;
}

/** Disposal stages, the setup window and hooks; the defaults keep shutdown short. */
export interface ProcessExecutorOptions extends Partial<StopTimings> {
  /**
   * How long a contained launch watches for the sandbox tool failing during setup (it exits at
   * once with a `bwrap: …` line) when the sandbox cannot report readiness itself. bubblewrap
   * launches end as soon as the sandbox runs its command (median 24 ms here, from 218 ms with the
   * fixed window). Default 200 ms.
   */
  readonly setupWindowMs?: number;
  /** Platform whose backends are available; `process.platform` by default. */
  readonly platform?: NodeJS.Platform;
  readonly logger?: Logger;
  readonly onSpawn?: (attempt: SpawnAttempt) => void;
}

const DEFAULT_TIMINGS: StopTimings = { stdinGraceMs: 300, termGraceMs: 2000 };
const SETUP_STDERR_BYTES = 4096;
/** Longest wait for a sandbox to report readiness before the handle is handed out anyway. */
const SETUP_CAP_MS = 2000;

interface SpawnPlan {
  readonly backend: ContainmentBackend;
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | undefined;
  /** bwrap writes its JSON status to fd 3 (see bubblewrap-ready.ts). */
  readonly statusFd?: boolean;
}

/**
 * Starts server processes, with or without containment, and keeps every live handle so the
 * sidecar can end them all at shutdown.
 */
export class ProcessExecutor {
  readonly #options: ProcessExecutorOptions;
  readonly #timings: StopTimings;
  readonly #logger: Logger;
  readonly #live = new Set<ChildProcessHandle>();
  #spawnCount = 0;

  constructor(options: ProcessExecutorOptions = {}) {
    this.#options = options;
    this.#timings = {
      stdinGraceMs: options.stdinGraceMs ?? DEFAULT_TIMINGS.stdinGraceMs,
      termGraceMs: options.termGraceMs ?? DEFAULT_TIMINGS.termGraceMs,
    };
    this.#logger = options.logger ?? silentLogger;
  }

  /** How many processes this executor has spawned (sandbox tools included), failed or not. */
  get spawnCount(): number {
    return this.#spawnCount;
  }

  /** Handles not yet disposed whose process group may still hold a process. */
  get liveCount(): number {
    return this.#live.size;
  }

  /**
   * Starts the process and resolves once it runs. Rejects with a `WireError`
   * (`containment-unavailable` or `launch-failed`) when it cannot start, and with a
   * `LocalError` `'aborted'` when `signal` fires first; in both cases nothing is left running.
   */
  async launch(request: ProcessLaunchRequest, options: { signal?: AbortSignal } = {}): Promise<ProcessHandle> {
    const { signal } = options;
    if (signal?.aborted) throw cancelled(signal);
    const plan = this.#plan(request);
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, {
        cwd: plan.cwd,
        env: { ...plan.env },
        stdio: plan.statusFd ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
        detached: true,
        shell: false,
        windowsHide: true,
        windowsVerbatimArguments: request.verbatim === true,
      });
    } catch (error) {
      throw toLaunchError(error, plan.backend);
    }
    this.#spawnCount += 1;
    this.#options.onSpawn?.({ backend: plan.backend, file: plan.file, pid: child.pid });
    const handle = new ChildProcessHandle(child, this.#timings, this.#logger);
    this.#track(handle);
    const setupStderr = plan.backend === 'none' || !child.stderr ? undefined : peekStderr(child.stderr, SETUP_STDERR_BYTES);
    try {
      await handle.started(signal);
      if (setupStderr) await this.#watchSetup(handle, plan.backend, setupStderr, signal, plan.statusFd ? (child.stdio[3] as Readable) : undefined);
      return handle;
    } catch (error) {
      await handle.dispose(0);
      throw toLaunchError(error, plan.backend, signal);
    } finally {
      setupStderr?.stop();
    }
  }

  /** Ends every live process tree (stdin, SIGTERM, SIGKILL) and waits for them. */
  async disposeAll(): Promise<void> {
    await Promise.all([...this.#live].map((handle) => handle.dispose()));
  }

  /** Sends SIGKILL to every live process group at once, for a synchronous `process.on('exit')`. */
  killAllNow(): void {
    for (const handle of this.#live) handle.signalGroup('SIGKILL');
  }

  #track(handle: ChildProcessHandle): void {
    this.#live.add(handle);
    void handle.whenGroupGone().then(() => this.#live.delete(handle));
  }

  #plan(request: ProcessLaunchRequest): SpawnPlan {
    const { policy } = request;
    if (policy === null) {
      return { backend: 'none', file: request.command, args: request.args, env: request.env, cwd: request.cwd };
    }
    const inner = [request.command, ...request.args];
    if (policy.backend === 'bubblewrap') {
      return {
        backend: 'bubblewrap',
        file: policy.executable,
        args: ['--json-status-fd', '3', ...policy.args, '--', ...inner],
        env: policy.env,
        cwd: policy.cwd,
        statusFd: true,
      };
    }
    const platform = this.#options.platform ?? process.platform;
    if (platform !== 'darwin') {
      throw new WireError('containment-unavailable', `Cannot start contained process: Seatbelt is only available on macOS, not on "${platform}"`, {
        detail: { backend: 'seatbelt' },
      });
    }
    return { backend: 'seatbelt', file: policy.executable, args: ['-p', policy.profile, ...inner], env: policy.env, cwd: policy.cwd };
  }

  /**
   * Watches sandbox setup: until bubblewrap reports the sandbox ready (see bubblewrap-ready.ts),
   * or else for the setup window. An exit meanwhile that the sandbox tool explains is a launch
   * failure.
   */
  async #watchSetup(handle: ChildProcessHandle, backend: ContainmentBackend, stderr: StderrPeek, signal?: AbortSignal, status?: Readable): Promise<void> {
    const windowMs = this.#options.setupWindowMs ?? 200;
    const stop = new AbortController();
    const ready = status === undefined ? Promise.resolve<SandboxReadiness>('unknown') : whenSandboxReady(status, stop.signal);
    // Readiness ends the wait early; without it the fixed window applies. A hung setup is capped.
    const settled = ready.then((r) => (r === 'ready' ? undefined : handle.exitWithin(windowMs, signal)));
    const exit = await Promise.race([settled, handle.exitWithin(Math.max(windowMs, SETUP_CAP_MS), signal)]).finally(() => stop.abort());
    if (signal?.aborted) throw cancelled(signal);
    if (exit === undefined) return;
    await stderr.ended(500);
    const failure = classifyContainmentFailure(backend, stderr.text(), exit);
    if (failure === undefined) return; // the server itself exited; the caller reports it
    this.#logger.warn('Contained launch failed during sandbox setup', { backend, exit, stderr: stderr.text() });
    throw failure;
  }
}

/**
 * Tells a sandbox tool's own setup failure from the server's exit, from the stderr it wrote.
 * bubblewrap and sandbox-exec prefix their errors with their name; messages about namespaces or
 * permissions mean the backend cannot work on this machine. The tool's text stays in the local
 * log: it names paths from the policy, which must not cross the link.
 */
export function classifyContainmentFailure(backend: ContainmentBackend, stderr: string, exit: ProcessExit): WireError | undefined {
  const prefix = backend === 'bubblewrap' ? 'bwrap: ' : backend === 'seatbelt' ? 'sandbox-exec: ' : undefined;
  const firstLine = stderr.split('\n', 1)[0] ?? '';
  if (prefix === undefined || !firstLine.startsWith(prefix)) return undefined;
  const detail = { backend, exitCode: exit.code, signal: exit.signal };
  if (/namespace|permission|not permitted|uid map|capabilit|sandbox_apply/i.test(firstLine)) {
    return new WireError('containment-unavailable', `Cannot start contained process: ${backend} cannot create a sandbox on this host, see the sidecar log`, { detail });
  }
  return new WireError('launch-failed', `Cannot start contained process: ${backend} failed during sandbox setup, see the sidecar log`, { detail });
}

function toLaunchError(error: unknown, backend: ContainmentBackend, signal?: AbortSignal): Error {
  if (error instanceof WireError || error instanceof LocalError) return error;
  if (signal?.aborted) return cancelled(signal);
  const errno = String((error as NodeJS.ErrnoException).code ?? 'unknown');
  if (backend !== 'none' && (errno === 'ENOENT' || errno === 'EACCES')) {
    return new WireError('containment-unavailable', `Cannot start contained process: the ${backend} executable is missing or not executable, install it on this host: ${errno}`, {
      detail: { backend, errno },
      cause: error,
    });
  }
  return new WireError('launch-failed', `Cannot start process: spawn failed: ${errno}`, { detail: { backend, errno }, cause: error });
}

function cancelled(signal: AbortSignal): LocalError {
  return new LocalError('aborted', 'Process launch was cancelled', { cause: signal.reason });
}

interface StderrPeek {
  text(): string;
  ended(ms: number): Promise<void>;
  stop(): void;
}

/** Copies the first bytes of a stream aside without consuming it (it is piped elsewhere). */
function peekStderr(stream: NodeJS.ReadableStream, limit: number): StderrPeek {
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer) => {
    if (size < limit) chunks.push(chunk.subarray(0, limit - size));
    size += chunk.length;
  };
  let ended = false;
  const endWaiters: Array<() => void> = [];
  const onEnd = () => {
    ended = true;
    for (const wake of endWaiters.splice(0)) wake();
  };
  stream.on('data', onData);
  stream.once('end', onEnd);
  return {
    text: () => Buffer.concat(chunks).toString('utf8'),
    ended: (ms) =>
      ended ? Promise.resolve() : new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        endWaiters.push(() => (clearTimeout(timer), resolve()));
      }),
    stop: () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
    },
  };
}
