/**
 * ProcessExecutor: the one way the sidecar starts an MCP server process.
 *
 * Two branches, one entry point. `policy === null` spawns the command directly; a compiled
 * containment policy (a {@link ContainedLaunch}) wraps it into its sandbox tool's command line,
 * says when the sandbox is ready and explains a setup failure: this file knows no backend. A
 * contained launch that fails is reported as `containment-unavailable` or `launch-failed` and is
 * never retried without the policy: required containment fails closed. Every process gets its own
 * process group, so disposal can end the whole tree, grandchildren included, and holds only
 * stdin, stdout, stderr and the descriptors its policy passes: a descriptor the sidecar holds
 * without `O_CLOEXEC` (inherited, or the runtime's own) is masked in the child, never closed in
 * the sidecar, and a sandbox tool closes it before the server runs (`inherited-fds.ts`).
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import { LocalError, WireError } from '../../shared/errors.ts';
import { type Logger, silentLogger } from '../log.ts';
import type { Duplex } from 'node:stream';
import { LAUNCH_AGAIN, type ContainedLaunch, type SandboxDescriptor, type SandboxReadiness, type SpawnedSandbox } from './contained-launch.ts';
import { type AddressSpaceLimit, limitedCommand } from './address-space-limit.ts';
import { diesWithParentCommand, takesParentDeathSignal } from './parent-death.ts';
import { type DescriptorMask, descriptorTargets, inheritableDescriptors } from './inherited-fds.ts';
import { earlySpawnError, spawnMasked } from './masked-spawn.ts';
import { ChildProcessHandle, type ProcessHandle, type StopTimings } from './process-handle.ts';
import { GroupWatchdog } from './group-watchdog.ts';
import type { LaunchCgroup, ServerCgroups, TreeLimits } from './server-cgroups.ts';

export type { ContainedLaunch } from './contained-launch.ts';
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
  readonly policy: ContainedLaunch | null;
  /** Windows only: pass `args` to CreateProcess unquoted (a `cmd.exe /d /s /c "…"` line). */
  readonly verbatim?: boolean;
  /** The agent it runs for: its cgroup goes under that agent's, so agents share the CPU before their servers do. */
  readonly agent?: string;
}

/** Which branch a launch took: `'none'` is the ordinary, uncontained spawn, else the policy's backend. */
export type ContainmentBackend = 'none' | ContainedLaunch['backend'];

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
   * once with a line such as `bwrap: …`) when the sandbox cannot report readiness itself.
   * bubblewrap launches end as soon as the sandbox runs its command (median 24 ms here, from
   * 218 ms with the fixed window). Default 200 ms.
   */
  readonly setupWindowMs?: number;
  readonly logger?: Logger;
  /** Every launch request as received, before anything is spawned (tests observe the policy given). */
  readonly onLaunch?: (request: ProcessLaunchRequest) => void;
  readonly onSpawn?: (attempt: SpawnAttempt) => void;
  /** RLIMIT_DATA of every launch, contained or not (`address-space-limit.ts`); none by default. */
  readonly addressSpaceLimit?: AddressSpaceLimit;
  /**
   * `setpriv`, to give every ordinary launch SIGKILL as its parent-death signal (`parent-death.ts`):
   * it then ends even with a sidecar killed outright. None by default.
   */
  readonly setpriv?: string;
  /**
   * Watch every server's process group from a small shell beside the sidecar, which kills the
   * groups still live when the sidecar ends however it ends (`group-watchdog.ts`). Off by default;
   * never on Windows, which has no process groups.
   */
  readonly groupWatchdog?: boolean;
  /**
   * Every launch in a cgroup of its own (`server-cgroups.ts`): its whole tree held to `treeLimits`
   * (tasks and memory; none by default), and what is left of it killed once its process group is gone.
   */
  readonly cgroups?: ServerCgroups;
  readonly treeLimits?: TreeLimits;
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
  readonly descriptors: readonly SandboxDescriptor[];
  /** A contained spawn's mask, as its backend reported it (`SandboxSpawn.inherited`). */
  readonly inherited?: DescriptorMask | null;
  readonly release: () => void;
  /** The file reported to `onSpawn`: the launch's own, not the `prlimit` or `setpriv` that runs it. */
  readonly shownFile?: string;
  /** The cgroup it joins before anything of it runs. */
  readonly cgroup?: LaunchCgroup;
}

/**
 * Starts server processes, with or without containment, and keeps every live handle so the
 * sidecar can end them all at shutdown.
 */
export class ProcessExecutor {
  #options: ProcessExecutorOptions;
  readonly #timings: StopTimings;
  readonly #logger: Logger;
  readonly #live = new Set<ChildProcessHandle>();
  #spawnCount = 0;
  /** The `setpriv` ordinary launches go through, once the first one has found it takes `--pdeathsig`. */
  #parentDeath: Promise<string | undefined> | undefined;
  readonly #watchdog: GroupWatchdog | undefined;
  /** Launches' cgroups whose process group is not gone yet, and the ends of those whose is. */
  readonly #cgroups = new Map<ChildProcessHandle, LaunchCgroup>();
  readonly #cgroupEnds = new Set<Promise<unknown>>();

  constructor(options: ProcessExecutorOptions = {}) {
    this.#options = options;
    this.#timings = {
      stdinGraceMs: options.stdinGraceMs ?? DEFAULT_TIMINGS.stdinGraceMs,
      termGraceMs: options.termGraceMs ?? DEFAULT_TIMINGS.termGraceMs,
    };
    this.#logger = options.logger ?? silentLogger;
    this.#watchdog =
      options.groupWatchdog === true && process.platform !== 'win32'
        ? new GroupWatchdog({ logger: this.#logger, liveGroups: () => [...this.#live].map((handle) => handle.pid), liveCgroups: () => [...this.#cgroups.values()].flatMap((cgroup) => cgroup.dirs) })
        : undefined;
  }

  /** A new RLIMIT_DATA for launches from now on (a sidecar.json reload); undefined: none. */
  setAddressSpaceLimit(limit: AddressSpaceLimit | undefined): void {
    const { addressSpaceLimit: _old, ...rest } = this.#options;
    this.#options = limit === undefined ? rest : { ...rest, addressSpaceLimit: limit };
  }

  /**
   * New limits of each server's tree (a sidecar.json reload); 0: none. The task limit and CPU cap
   * apply to running servers at once, since neither ends a process; the memory limit to launches
   * from now on, since a lowered one would end a busy server.
   */
  setTreeLimits(limits: TreeLimits): void {
    this.#options = { ...this.#options, treeLimits: limits };
    let retuned = 0;
    let failed = 0;
    for (const cgroup of this.#cgroups.values()) {
      const outcome = cgroup.retune(limits);
      if (outcome === 'changed') retuned++;
      else if (outcome === 'failed') failed++;
    }
    if (retuned > 0) this.#logger.info('Running servers take the new task limit and CPU cap', { servers: retuned, 'tasks-per-server': limits.tasks, 'cpus-per-server': limits.cpus });
    // A cgroup removed under its server as it ended, or a write the kernel refused: that server keeps what it had.
    if (failed > 0) this.#logger.warn('Some running servers keep their task limit and CPU cap: their cgroups could not be written', { servers: failed, 'tasks-per-server': limits.tasks, 'cpus-per-server': limits.cpus });
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
    this.#options.onLaunch?.(request);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#launchOnce(request, options);
      } catch (error) {
        // A sandbox whose setup lost a race (its backend says so) is gone already; a new one may win.
        if (!(error instanceof LocalError && error.code === LAUNCH_AGAIN) || attempt >= LAUNCH_ATTEMPTS) throw launchAgainFailed(error, request.policy?.backend ?? 'none');
        this.#logger.info('Contained launch started again', { backend: request.policy?.backend ?? 'none', attempt, why: error.message });
      }
    }
  }

  async #launchOnce(request: ProcessLaunchRequest, options: { signal?: AbortSignal }): Promise<ProcessHandle> {
    const { signal } = options;
    if (signal?.aborted) throw cancelled(signal);
    // Awaited only when there is a setpriv to ask about: otherwise the spawn stays in this tick.
    const setpriv = request.policy === null && this.#options.setpriv !== undefined ? await this.#parentDeathTool(this.#options.setpriv) : undefined;
    if (signal?.aborted) throw cancelled(signal);
    let plan: SpawnPlan;
    try {
      plan = this.#plan(request, setpriv);
    } catch (error) {
      // The policy refused what it would mount; its message crosses the link, the cause stays here.
      this.#logger.warn(request.policy === null ? 'Launch refused before spawn' : 'Contained launch refused before spawn', { backend: request.policy?.backend ?? 'none', error, cause: (error as Error).cause ?? null });
      throw toLaunchError(error, request.policy?.backend ?? 'none');
    }
    let child: ChildProcess;
    try {
      child = spawnMasked(plan.file, plan.args, {
        cwd: plan.cwd,
        env: { ...plan.env },
        stdio: ['pipe', 'pipe', 'pipe', ...plan.descriptors.map(stdioOf)],
        detached: true,
        shell: false,
        windowsHide: true,
        windowsVerbatimArguments: request.verbatim === true,
        // A contained spawn's backend masked them in #plan (its tool closes them), or #checkInherited found none to mask.
        ...(plan.backend === 'none' ? {} : { masked: plan.inherited ?? null }),
        onMask: (mask) => this.#logger.debug('Descriptors the sidecar holds without close-on-exec are on /dev/null in the server', { fds: mask.describe() }),
      });
    } catch (error) {
      // Refused before anything ran (its descriptors could not be listed or masked), or spawn threw.
      this.#logger.warn('Launch failed at spawn', { backend: plan.backend, error, cause: (error as Error).cause ?? null });
      void plan.cgroup?.end();
      throw toLaunchError(error, plan.backend);
    } finally {
      plan.release();
    }
    const early = earlySpawnError(child);
    if (early !== undefined) {
      const error = await early;
      this.#logger.warn('Launch failed at spawn', { backend: plan.backend, error });
      void plan.cgroup?.end();
      throw toLaunchError(error, plan.backend);
    }
    this.#spawnCount += 1;
    const extra = child.stdio.slice(3, 3 + plan.descriptors.length) as (Duplex | null)[];
    plan.descriptors.forEach((d, i) => {
      const stream = extra[i];
      stream?.on('error', (error) => this.#logger.debug('Sandbox descriptor error', { fd: 3 + i, error }));
      if (typeof d === 'object' && 'data' in d) stream?.end(d.data);
    });
    this.#options.onSpawn?.({ backend: plan.backend, file: plan.shownFile ?? plan.file, pid: child.pid });
    const handle = new ChildProcessHandle(child, this.#timings, this.#logger);
    this.#track(handle, plan.cgroup, plan.shownFile ?? plan.file);
    const { policy } = request;
    const setupStderr = policy === null || !child.stderr ? undefined : peekStderr(child.stderr, SETUP_STDERR_BYTES);
    try {
      await handle.started(signal);
      if (policy !== null && setupStderr) {
        const sandbox: SpawnedSandbox = { pid: handle.pid, descriptors: extra, exited: handle.exited, kill: () => handle.signalGroup('SIGKILL'), adopt: (pid) => this.#adopt(handle, pid), log: this.#logger };
        await this.#watchSetup(handle, policy, setupStderr, sandbox, signal);
      }
      return handle;
    } catch (error) {
      await handle.dispose(0);
      throw toLaunchError(error, plan.backend, signal);
    } finally {
      setupStderr?.stop();
    }
  }

  /**
   * The executor's `setpriv`, asked once whether it takes `--pdeathsig` (`parent-death.ts`): one
   * that does not would refuse every ordinary launch, so without it they run as they did before
   * there was one, and the log says why, once.
   */
  #parentDeathTool(setpriv: string): Promise<string | undefined> {
    this.#parentDeath ??= takesParentDeathSignal(setpriv).then((probe) => {
      if (probe.ok) return setpriv;
      this.#logger.warn('Ordinary servers may outlive a sidecar killed outright: setpriv does not take --pdeathsig (util-linux 2.33 or later does)', { setpriv, problem: probe.problem });
      return undefined;
    });
    return this.#parentDeath;
  }

  /** Ends every live process tree (stdin, SIGTERM, SIGKILL) and waits for them, then the group watchdog. */
  async disposeAll(): Promise<void> {
    await Promise.all([...this.#live].map((handle) => handle.dispose()));
    await Promise.all([...this.#cgroupEnds]);
    await this.#watchdog?.close();
  }

  /** Sends SIGKILL to every live process group, and every launch's cgroup, at once, for a synchronous `process.on('exit')`. */
  killAllNow(): void {
    for (const handle of this.#live) handle.signalGroup('SIGKILL');
    for (const cgroup of this.#cgroups.values()) cgroup.killNow();
  }

  #track(handle: ChildProcessHandle, cgroup: LaunchCgroup | undefined, command: string): void {
    this.#live.add(handle);
    if (cgroup !== undefined) this.#cgroups.set(handle, cgroup);
    for (const dir of cgroup?.dirs ?? []) this.#watchdog?.watchCgroup(dir);
    this.#watchdog?.watch(handle.pid);
    void handle.whenGroupGone().then(() => {
      this.#live.delete(handle);
      this.#watchdog?.forget(handle.pid);
      for (const pid of handle.adopted) this.#watchdog?.forget(pid);
      if (cgroup === undefined) return;
      this.#cgroups.delete(handle);
      // What is still in the cgroup left the group (setsid, a daemon's double fork): it ends with the server.
      const ended = cgroup.end().then(({ left, refusedForks, refusedUnder, oomKills, throttledMs, agentLimits: agent, memoryLimitMet }) => {
        for (const dir of cgroup.dirs) this.#watchdog?.forgetCgroup(dir);
        if (left > 0) this.#logger.info('Ended processes a server left running outside its process group', { pid: handle.pid, command, processes: left });
        // Said once, at its end: a server short of tasks fails in ways of its own (EAGAIN, "Cannot fork", a pool that cannot grow).
        // Its agent's limit may be the one met: the kernel counts a refused fork (but on v2 from Linux 6.11) in the server's cgroup either way.
        if (refusedForks > 0) {
          const agentTasks = agent !== undefined && agent.tasks > 0 ? agent.tasks : undefined;
          this.#logger.warn(agentTasks === undefined ? 'A server reached its task limit: forks were refused' : 'A server reached its task limit, or its agent\'s: forks were refused', {
            pid: handle.pid,
            command,
            refused: refusedForks,
            'tasks-per-server': refusedUnder,
            ...(agentTasks === undefined ? { fix: 'Raise limits.tasks-per-server in sidecar.json if the server needs more processes or threads' } : { 'tasks-per-agent': agentTasks, fix: 'Raise limits.tasks-per-server in sidecar.json if the server needs more processes or threads, or limits.tasks-per-agent if the agent\'s servers together do' }),
          });
        }
        if (oomKills > 0) {
          // Each cgroup counts its own limit met: the log names the one that was.
          if (memoryLimitMet === 'agent' && agent !== undefined) {
            this.#logger.warn('A server\'s agent passed its memory limit: the kernel ended processes of this server', { pid: handle.pid, command, ended: oomKills, 'memory-per-agent-mib': agent.memoryMib, fix: 'Raise limits.memory-per-agent-mib in sidecar.json if the agent\'s servers together need more memory' });
          } else {
            this.#logger.warn('A server passed its memory limit: the kernel ended processes of it', { pid: handle.pid, command, ended: oomKills, 'memory-per-server-mib': cgroup.limits.memoryMib, fix: 'Raise limits.memory-per-server-mib in sidecar.json if the server needs more memory' });
          }
        }
        // Info, not a warning: the cap did what it was set for; a slow server's owner finds why here.
        if (throttledMs > 0) {
          this.#logger.info('A server was held to its CPU limit', { pid: handle.pid, command, throttledMs, 'cpus-per-server': cgroup.limits.cpus, fix: 'Raise limits.cpus-per-server in sidecar.json if the server needs more CPU time' });
        }
      });
      this.#cgroupEnds.add(ended);
      void ended.finally(() => this.#cgroupEnds.delete(ended));
    });
  }

  /**
   * A sandbox's PID 1, outside the tool's group: ended with the handle, and by the watchdog with a
   * sidecar killed outright. Once it called `setsid` it leads a group of its own, its command in it.
   */
  #adopt(handle: ChildProcessHandle, pid: number): void {
    handle.adopt(pid);
    if (handle.adopted.includes(pid)) this.#watchdog?.watch(pid);
  }

  /**
   * The spawn, its command limited when the executor has a limit. A contained one checks its
   * backend's mask here; an ordinary one is masked by `spawnMasked` itself, in the spawn's own step.
   *
   * @throws WireError `launch-failed` for a contained launch whose backend cannot close them.
   */
  #plan(request: ProcessLaunchRequest, setpriv: string | undefined): SpawnPlan {
    const plan = this.#unlimitedPlan(request);
    try {
      if (request.policy !== null) this.#checkInherited(plan, request.policy);
    } catch (error) {
      plan.release();
      throw error;
    }
    const limit = this.#options.addressSpaceLimit;
    const limited = limit === undefined ? plan : { ...plan, ...limitedCommand(limit, plan.file, plan.args), shownFile: plan.file };
    // A contained launch dies with the sidecar already (its backend's own, bwrap --die-with-parent).
    const dying = setpriv === undefined || plan.backend !== 'none' ? limited : { ...limited, ...diesWithParentCommand(setpriv, limited.file, limited.args), shownFile: plan.file };
    return this.#inCgroup(dying, request.agent);
  }

  /** The plan run in a cgroup of its own, made here, when the executor has cgroups. */
  #inCgroup(plan: SpawnPlan, agent: string | undefined): SpawnPlan {
    const cgroups = this.#options.cgroups;
    if (cgroups === undefined) return plan;
    let cgroup: LaunchCgroup;
    try {
      cgroup = cgroups.forLaunch(this.#options.treeLimits ?? { tasks: 0, memoryMib: 0, cpus: 0 }, agent);
    } catch (error) {
      plan.release();
      // The limit holds for every launch or the launch fails: the host asked for it.
      throw new WireError('launch-failed', 'Cannot start process: its cgroup could not be made, see the sidecar log', { detail: { backend: plan.backend }, cause: error });
    }
    return { ...plan, ...cgroup.command(plan.file, plan.args), shownFile: plan.shownFile ?? plan.file, cgroup };
  }

  /** Logs what a contained launch's tool closes; refuses one whose backend closes none while some would pass. */
  #checkInherited(plan: SpawnPlan, policy: ContainedLaunch): void {
    if (plan.inherited !== undefined) {
      // Nothing for a user to do (the tool closes them on every contained spawn): for whoever debugs a launch.
      if (plan.inherited !== null) this.#logger.debug('Descriptors the sidecar holds without close-on-exec are closed in the sandbox', { backend: policy.backend, fds: plan.inherited.describe() });
      return;
    }
    const own = plan.descriptors;
    const passed = inheritableDescriptors().filter((fd) => fd >= 3 + own.length || own[fd - 3] === 'ignore');
    if (passed.length === 0) return;
    throw new WireError('launch-failed', `Cannot start contained process: the sidecar holds descriptors a sandbox would inherit (fd ${passed.join(', ')}) and the ${policy.backend} backend cannot close them: see the sidecar log`, {
      detail: { backend: policy.backend },
      cause: new LocalError('inheritable-descriptors', `Inheritable descriptors: ${descriptorTargets(passed).map((d) => `fd ${d.fd} (${d.target})`).join(', ')}`),
    });
  }

  #unlimitedPlan(request: ProcessLaunchRequest): SpawnPlan {
    const { policy } = request;
    if (policy === null) {
      return { backend: 'none', file: request.command, args: request.args, env: request.env, cwd: request.cwd, descriptors: [], release: () => {} };
    }
    const spawn = policy.wrap(request.command, request.args);
    let released = false;
    const release = () => {
      if (!released) spawn.release?.();
      released = true;
    };
    const plan = { backend: policy.backend, file: spawn.file, args: spawn.args, env: spawn.env, cwd: spawn.cwd, descriptors: spawn.descriptors ?? [], release };
    return spawn.inherited === undefined ? plan : { ...plan, inherited: spawn.inherited };
  }

  /**
   * Watches sandbox setup: until the policy reports the sandbox ready, or else for the setup
   * window. An exit meanwhile that the policy explains is a launch failure.
   */
  async #watchSetup(handle: ChildProcessHandle, policy: ContainedLaunch, stderr: StderrPeek, sandbox: SpawnedSandbox, signal?: AbortSignal): Promise<void> {
    const windowMs = this.#options.setupWindowMs ?? 200;
    const stop = new AbortController();
    const ready: Promise<SandboxReadiness> = policy.whenReady(sandbox, stop.signal);
    // Readiness ends the wait early; without it the fixed window applies. A hung setup is capped.
    const settled = ready.then((r) => (r === 'ready' ? undefined : handle.exitWithin(windowMs, signal)));
    // A setup failure after the cap below is the policy's to handle (it ends the sandbox): never an unhandled rejection.
    settled.catch(() => {});
    const exit = await Promise.race([settled, handle.exitWithin(Math.max(windowMs, SETUP_CAP_MS), signal)]).finally(() => stop.abort());
    if (signal?.aborted) throw cancelled(signal);
    if (exit === undefined) return;
    await stderr.ended(500);
    const failure = policy.classifyFailure(stderr.text(), exit);
    if (failure === undefined) return; // the server itself exited; the caller reports it
    this.#logger.warn('Contained launch failed during sandbox setup', { backend: policy.backend, exit, stderr: stderr.text() });
    throw failure;
  }
}

function stdioOf(descriptor: SandboxDescriptor): 'pipe' | 'ignore' | number {
  if (descriptor === 'ignore' || descriptor === 'pipe') return descriptor;
  return 'fd' in descriptor ? descriptor.fd : 'pipe';
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

/** How many times a contained launch is tried when its backend asks for another (`LAUNCH_AGAIN`). */
const LAUNCH_ATTEMPTS = 3;

/** What the caller gets when every attempt lost its race: a launch failure, as any other, never the local code. */
function launchAgainFailed(error: unknown, backend: string): unknown {
  if (!(error instanceof LocalError) || error.code !== LAUNCH_AGAIN) return error;
  return new WireError('launch-failed', `Cannot start contained process: its sandbox could not be set up in ${LAUNCH_ATTEMPTS} attempts on this loaded host, see the sidecar log`, { detail: { backend }, cause: error });
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
