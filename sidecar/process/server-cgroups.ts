/**
 * Each server's process tree in a cgroup of its own, under the sidecar's, so that the host bounds
 * what one server may start and ends all of it:
 *
 * - **A task limit** (`pids.max`, sidecar.json `limits.tasks-per-server`): a server that forks
 *   without end (a fork bomb, a runaway pool) gets EAGAIN from `fork` and `clone` at its limit,
 *   instead of filling the host's process table. No rlimit does this for a root sidecar: the
 *   kernel exempts root's uid from RLIMIT_NPROC, and a root sidecar's sandboxes map to it.
 * - **A memory limit of the whole tree** (`limits.memory-per-server-mib`, swap included), which
 *   RLIMIT_DATA (`memory-limit-mib`, per process) is not for a server that forks.
 * - **A fair share of the CPU**, and a cap where one is set (`limits.cpus-per-server`, the
 *   cgroup's `cpu.max`): each launch's cgroup sits under its agent's (`agent-NAME`), and the
 *   scheduler shares the CPU between cgroups before the processes in them, so an agent whose
 *   servers spin on every core with many threads gets an agent's share, not one per thread or
 *   per server, when other agents or the sidecar itself want the CPU; with a cap a server never
 *   gets more, busy host or not. No cap by default: a server that builds or indexes may use an
 *   idle host's every core, and the fair share already keeps the sidecar and every other agent going.
 * - **An agent's limits** (`limits.tasks-per-agent`, `limits.memory-per-agent-mib`): the agent's
 *   cgroup holds all its servers' trees together, so an agent with many servers gets one agent's
 *   allowance of the host, not one server's allowance for each of them.
 * - **The whole tree ends with the server**: a descendant that left the process group (`setsid`,
 *   a daemon's double fork) is still in the cgroup, and is killed with it (`cgroup.kill`, or
 *   SIGKILL to each member where the kernel has no `cgroup.kill`) once the group is gone.
 *
 * A launch joins its cgroup before anything of it runs: a small `sh` writes its own pid into the
 * cgroup and then execs the launch (same pid, same descriptors), so no fork of the server's can
 * happen outside it, as it could between a spawn and a later move.
 *
 * The sidecar may make cgroups where it runs as root, or in a cgroup delegated to it (a systemd
 * unit with `Delegate=yes`, every user unit under a user manager). On the unified hierarchy
 * (cgroup v2) a cgroup that hands a controller to its children may hold no process itself, so a
 * sidecar alone in its cgroup first moves into a leaf of its own (`switchyard-sidecar-PID`) and
 * then enables `pids`, `memory` and `cpu` for the servers' cgroups beside it, as systemd asks of
 * delegated services.
 * Where none of this is possible the sidecar runs servers as before, and says why once (doctor
 * too): the limits it has (process group, PID namespace, `memory-limit-mib`) still hold.
 *
 * A sidecar killed outright leaves its cgroups; the next sidecar started there ends what is left
 * in them and removes them.
 *
 * @module
 */
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../log.ts';
import { type CgroupPlacement, cgroupPlacement } from './cgroup-placement.ts';

/** sidecar.json `limits.tasks-per-server` default: room for a browser's processes and threads, not for a fork bomb. */
export const DEFAULT_TASKS_PER_SERVER = 1024;
/** sidecar.json `limits.memory-per-server-mib` default: twice one process's `memory-limit-mib`, for a server that forks a few. */
export const DEFAULT_MEMORY_PER_SERVER_MIB = 8192;

/** sidecar.json `limits.tasks-per-agent` default: four servers at their own default limit, far more than an agent's usual servers use, far fewer than a host's process table. */
export const DEFAULT_TASKS_PER_AGENT = 4096;
/** sidecar.json `limits.memory-per-agent-mib` default: two servers at their own default limit. */
export const DEFAULT_MEMORY_PER_AGENT_MIB = 16384;

/**
 * What an agent's cgroup holds all of that agent's servers to together: 0 for none. No CPU cap:
 * the agent's fair share already keeps other agents going, and v1 refuses a server's cap above its
 * agent's, which a reload would have to order around.
 */
export type AgentLimits = Pick<TreeLimits, 'tasks' | 'memoryMib'>;

const NO_AGENT_LIMITS: AgentLimits = { tasks: 0, memoryMib: 0 };

/** What doctor and the sidecar's start say to do where the sidecar may not make cgroups. */
export const CGROUP_FIX = 'Run the sidecar as a systemd unit of its own with Delegate=yes whose ExecStart runs node itself, not through npx or a script that does not exec it (README, "Run the sidecar as a systemd user unit"), or as root';

/** What the host gives servers' cgroups: where they are, and which limits hold. */
export interface CgroupSupport {
  /** Where the servers' cgroups are made (one directory per hierarchy used). */
  readonly bases: readonly string[];
  /** Whether `pids.max` applies to each server's tree. */
  readonly limit: boolean;
  /** Whether a memory limit applies to each server's tree. */
  readonly memory: boolean;
  /** Whether each server's tree has a CPU share of its own, and a cap where one is set. */
  readonly cpu: boolean;
  /** The most CPUs a cap can give: the least quota of the sidecar's own cgroup and those above it (v1), where one is set. */
  readonly cpuCeiling?: number;
}

export type OpenedCgroups =
  | {
      readonly cgroups: ServerCgroups;
      readonly support: CgroupSupport;
      /** Why the task or memory limit does not hold. */
      readonly problem?: string;
      /** Why the CPU share and cap do not: said only where a cap is set, since the share is a bonus a host may not give. */
      readonly cpuProblem?: string;
    }
  | { readonly cgroups: undefined; readonly problem: string };

export interface ServerCgroupsOptions {
  readonly log: Logger;
  /** The sidecar's own placement; read from `/proc/self` by default. */
  readonly placement?: CgroupPlacement;
  /** The sidecar's pid, which names its cgroups; `process.pid` by default. */
  readonly pid?: number;
}

/** The limits a cgroup of the servers' sets: 0 for none. */
export interface TreeLimits {
  /** `pids.max`: processes and threads of the whole tree. */
  readonly tasks: number;
  /** `memory.max` (v2) or `memory.limit_in_bytes` (v1) of the whole tree, in MiB. */
  readonly memoryMib: number;
  /** `cpu.max` (v2) or `cpu.cfs_quota_us` (v1) of the whole tree, in CPUs (1.5: one and a half cores' time). */
  readonly cpus: number;
}

/** The controllers a servers' cgroup can limit them by. */
type Controller = 'pids' | 'memory' | 'cpu';

/** A cgroup in one hierarchy: the sidecar's base for its servers', or one launch's. */
interface CgroupDir {
  readonly dir: string;
  /** The unified hierarchy (v2): its files' names differ from v1's. */
  readonly v2: boolean;
  /** The controllers this hierarchy gives its children. */
  readonly controllers: ReadonlySet<Controller>;
}

/** One launch's cgroup in one hierarchy, and its agent's cgroup above it, if any. */
interface LaunchDir extends CgroupDir {
  /** Removed with the agent's last launch in it. */
  readonly agentDir?: string;
  /** Its base's (`Base.quotaFrom`). */
  readonly quotaFrom?: string;
}

/** An agent's name as the worker config allows it: a cgroup's name can hold it as it is. */
const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * An agent's cgroup, made by its first launch, with the agent's limits. On v2 it hands its base's
 * controllers on to its launches' cgroups; it holds no process itself, as v2 asks.
 */
function makeAgentDir(dir: string, base: CgroupDir, limits: AgentLimits): void {
  let made = true;
  try {
    mkdirSync(dir);
  } catch (error) {
    if (codeOf(error) !== 'EEXIST') throw error;
    made = false;
  }
  // Each time, not only when made: a launch that failed after the mkdir leaves it without them.
  if (base.v2) for (const controller of base.controllers) writeFileSync(join(dir, 'cgroup.subtree_control'), `+${controller}`);
  // An agent's cgroup already there has the limits it was made with, or a reload's (`setAgentLimits`).
  if (made) applyLimits(dir, base, { ...limits, cpus: 0 });
}

/** Writes `limits` (0: none) to a cgroup of `base`'s hierarchy, for the controllers it has. */
function applyLimits(dir: string, base: CgroupDir & { readonly quotaFrom?: string }, limits: TreeLimits): void {
  if (base.controllers.has('pids') && limits.tasks > 0) writeFileSync(join(dir, 'pids.max'), String(limits.tasks));
  if (base.controllers.has('memory') && limits.memoryMib > 0) limitMemory(dir, base.v2, limits.memoryMib * 1024 * 1024);
  if (base.controllers.has('cpu') && limits.cpus > 0) limitCpu(dir, base.v2, capBelow(limits.cpus, base));
}

/** A base's controllers are found one hierarchy at a time, as `open` sets it up. */
interface Base extends CgroupDir {
  readonly controllers: Set<Controller>;
  /**
   * v1's `cpu` hierarchy: the sidecar's own cgroup, whose quota and those above it bound every cap
   * (`cpuQuotaAbove`, read at each write: a unit's `CPUQuota=` can change while it runs). v1
   * refuses a child a larger quota (EINVAL), where v2 takes the least of the two, so a cap above
   * it is written as it.
   */
  readonly quotaFrom?: string;
}

/** Names each launch's cgroup: one count for the process, whose compositions (tests make several) share its base. */
let launches = 0;

/** The servers' cgroups of one sidecar. */
export class ServerCgroups {
  readonly #bases: readonly Base[];
  readonly #log: Logger;
  /** What each agent's cgroup holds all its servers to together (`setAgentLimits`). */
  #agentLimits: AgentLimits = NO_AGENT_LIMITS;

  private constructor(bases: readonly Base[], log: Logger) {
    this.#bases = bases;
    this.#log = log;
  }

  /**
   * Makes the sidecar's cgroups (ending what a sidecar that is gone left in its own), or says why
   * it cannot. Synchronous: a few small writes under `/sys/fs/cgroup`, once, at start.
   */
  static open(options: ServerCgroupsOptions): OpenedCgroups {
    if (options.placement === undefined && process.platform !== 'linux') return { cgroups: undefined, problem: 'cgroups are a Linux feature' };
    const pid = options.pid ?? process.pid;
    const log = options.log;
    const placement = options.placement ?? ownPlacement();
    if (typeof placement === 'string') return { cgroups: undefined, problem: placement };
    const problems: string[] = [];
    const cpuProblems: string[] = [];
    const problemsOf = (controller: Controller) => (controller === 'cpu' ? cpuProblems : problems);
    const bases: Base[] = [];
    const covered = new Set<Controller>();
    if (placement.unified !== undefined) {
      const own = placement.unified;
      endLeftovers(own, pid, log);
      const enabled = new Set<Controller>();
      for (const controller of CONTROLLERS.filter((name) => controllersOf(own).includes(name))) {
        const result = enableForChildren(own, pid, controller);
        if (result === true) enabled.add(controller);
        else problemsOf(controller).push(result);
      }
      const base = join(own, `switchyard-${pid}`);
      const made = makeDir(base);
      if (made === undefined) {
        // One controller at a time: one the kernel refuses here takes only its own limit away.
        for (const controller of [...enabled]) {
          const problem = writeControl(join(base, 'cgroup.subtree_control'), `+${controller}`);
          if (problem === undefined) continue;
          enabled.delete(controller);
          problemsOf(controller).push(problem);
        }
        bases.push({ dir: base, v2: true, controllers: enabled });
        for (const controller of enabled) covered.add(controller);
      } else problems.push(made);
    }
    // v1 hierarchies for what the unified one does not hold (hybrid hosts); one mount may hold both.
    for (const controller of CONTROLLERS) {
      const own = controller === 'pids' ? placement.pidsV1 : controller === 'memory' ? placement.memoryV1 : placement.cpuV1;
      if (covered.has(controller) || own === undefined) continue;
      const base = join(own, `switchyard-${pid}`);
      const shared = bases.find((candidate) => candidate.dir === base);
      if (shared !== undefined) {
        shared.controllers.add(controller);
        covered.add(controller);
        continue;
      }
      endLeftovers(own, pid, log);
      const made = makeDir(base);
      if (made === undefined) {
        bases.push({ dir: base, v2: false, controllers: new Set([controller]), ...(controller === 'cpu' ? { quotaFrom: own } : {}) });
        covered.add(controller);
      } else problemsOf(controller).push(made);
    }
    if (placement.unified === undefined && placement.pidsV1 === undefined && placement.memoryV1 === undefined && placement.cpuV1 === undefined) problems.push('no cgroup hierarchy is mounted where this sidecar can see it');
    const problem = problems.length === 0 ? undefined : problems.join('; ');
    if (bases.length === 0) return { cgroups: undefined, problem: problem ?? 'no cgroup could be made' };
    const support: CgroupSupport = {
      bases: bases.map((base) => base.dir),
      limit: covered.has('pids'),
      memory: covered.has('memory'),
      cpu: covered.has('cpu'),
      ...ceilingOf(bases),
    };
    const cgroups = new ServerCgroups(bases, log);
    const cpuProblem = support.cpu
      ? undefined
      : cpuProblems.length > 0
        ? cpuProblems.join('; ')
        : placement.unified !== undefined && placement.cpuV1 === undefined
          ? `its cgroup ${placement.unified} is not given the cpu controller (a unit delegates it with Delegate=yes)`
          : 'no cpu controller is mounted where this sidecar can see it';
    const cpu = cpuProblem === undefined ? {} : { cpuProblem };
    if (support.limit && support.memory) return { cgroups, support, ...cpu };
    const missing = LIMITS.filter((controller) => !covered.has(controller));
    // On v2 a controller may be mounted and not handed down to the sidecar's cgroup (not delegated).
    const why = placement.unified !== undefined
      ? `its cgroup ${placement.unified} is not given the ${missing.join(' and ')} controller${missing.length > 1 ? 's' : ''} (a unit delegates them with Delegate=yes)`
      : `no ${missing.join(' and ')} controller is mounted where this sidecar can see it`;
    return { cgroups, support, problem: problem ?? why, ...cpu };
  }

  /**
   * A new cgroup for one launch, its limits set: under the cgroup of the agent it is for
   * (`agent-NAME`), so that the CPU is shared between agents before their servers.
   * @throws Error when the cgroup cannot be made (the cgroup file system went away, a full hierarchy).
   */
  forLaunch(limits: TreeLimits, agent?: string): LaunchCgroup {
    const name = String(++launches);
    const group = agent !== undefined && AGENT_NAME.test(agent) ? `agent-${agent}` : undefined;
    const parts: LaunchDir[] = [];
    try {
      for (const base of this.#bases) {
        const parent = group === undefined ? base.dir : join(base.dir, group);
        const dir = join(parent, name);
        // Listed before anything is made: a failure half way removes what was (an agent's cgroup another launch uses stays, EBUSY).
        const part: LaunchDir = { dir, v2: base.v2, controllers: base.controllers, ...(group !== undefined ? { agentDir: parent } : {}), ...(base.quotaFrom !== undefined ? { quotaFrom: base.quotaFrom } : {}) };
        parts.push(part);
        if (group !== undefined) makeAgentDir(parent, base, this.#agentLimits);
        mkdirSync(dir);
        applyLimits(dir, base, limits);
      }
    } catch (error) {
      for (const part of parts) {
        removeDir(part.dir);
        if (part.agentDir !== undefined) removeDir(part.agentDir);
      }
      throw error;
    }
    return new LaunchCgroup(parts, limits, this.#log);
  }

  /**
   * What each agent's cgroup holds all of that agent's servers to together, from its next
   * launch (sidecar.json `tasks-per-agent`, `memory-per-agent-mib`). The agents' cgroups already
   * there take a new task limit at once, and a raised memory limit, neither of which ends a
   * process; a lowered memory limit holds from each agent's next cgroup, since it would end a busy
   * server.
   * @returns How many agents' cgroups took a change, and how many could not be written.
   */
  setAgentLimits(limits: AgentLimits): { agents: number; failed: number } {
    const old = this.#agentLimits;
    this.#agentLimits = limits;
    const change = { tasks: limits.tasks !== old.tasks, memory: limits.memoryMib !== old.memoryMib };
    if (!change.tasks && !change.memory) return { agents: 0, failed: 0 };
    const agents = new Set<string>();
    const failed = new Set<string>();
    for (const base of this.#bases) {
      for (const dir of subdirsOf(base.dir).filter((child) => /\/agent-[^/]+$/.test(child))) {
        const name = dir.slice(dir.lastIndexOf('/agent-') + '/agent-'.length);
        const writes = [
          change.tasks && base.controllers.has('pids') ? () => writeFileSync(join(dir, 'pids.max'), limits.tasks > 0 ? String(limits.tasks) : 'max') : undefined,
          // Raised only, against what this agent's cgroup holds: a reload that lowered it earlier left it as it was.
          change.memory && base.controllers.has('memory') && raisesMemory(dir, base.v2, limits.memoryMib) ? () => limitMemory(dir, base.v2, limits.memoryMib * 1024 * 1024) : undefined,
        ].filter((write) => write !== undefined);
        if (writes.length === 0) continue;
        try {
          for (const write of writes) write();
          agents.add(name);
        } catch {
          // Removed with its agent's last server meanwhile (ENOENT), or refused: that agent keeps what it had.
          if (existsSync(dir)) failed.add(name);
        }
      }
    }
    for (const name of failed) agents.delete(name);
    return { agents: agents.size, failed: failed.size };
  }

  /** Removes the sidecar's own cgroups, once every launch's has ended. */
  close(): void {
    for (const base of this.#bases) removeDir(base.dir);
  }
}

/**
 * A tree's memory limit (0: none), swap included: with only `memory.max` a tree past it is swapped out
 * instead of ended, and fills the host's swap (v2's `memory.swap.max` is `max` by default). v1
 * counts memory and swap together in `memory.memsw.limit_in_bytes`, which must not be below
 * `memory.limit_in_bytes`, so it is written after it. Either swap file is absent where the kernel
 * accounts no swap: then there is none to fill.
 */
function limitMemory(dir: string, v2: boolean, bytes: number): void {
  if (v2) {
    writeFileSync(join(dir, 'memory.max'), bytes > 0 ? String(bytes) : 'max');
    if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
    return;
  }
  const value = bytes > 0 ? String(bytes) : '-1';
  const swap = join(dir, 'memory.memsw.limit_in_bytes');
  if (!existsSync(swap)) {
    writeFileSync(join(dir, 'memory.limit_in_bytes'), value);
    return;
  }
  // v1 refuses a memory limit above the memory-and-swap one (EINVAL): a raised one goes second.
  const held = memoryLimitOf(dir, false) || Infinity;
  const raising = bytes === 0 || bytes > held;
  if (raising) writeFileSync(swap, value);
  writeFileSync(join(dir, 'memory.limit_in_bytes'), value);
  if (!raising) writeFileSync(swap, value);
}

/** Whether `mib` (0: none) is above the memory limit `dir` holds now; false where it cannot be read. */
function raisesMemory(dir: string, v2: boolean, mib: number): boolean {
  const held = memoryLimitOf(dir, v2);
  if (held === undefined) return false;
  return mib === 0 ? held !== 0 : held !== 0 && mib * 1024 * 1024 > held;
}

/** The memory limit a cgroup holds, in bytes (0: none, as v2's `max` and v1's page-rounded "unlimited" read), or undefined where it cannot be read. */
function memoryLimitOf(dir: string, v2: boolean): number | undefined {
  try {
    const text = readFileSync(join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), 'utf8').trim();
    if (text === 'max') return 0;
    const bytes = Number(text);
    // v1 reads "unlimited" as the largest page-aligned 64-bit count.
    return Number.isFinite(bytes) ? (bytes >= 2 ** 62 ? 0 : bytes) : undefined;
  } catch {
    return undefined;
  }
}

/** What an agent's cgroup holds now (0: none), read back from its files: a reload may have changed the setting since it was made. */
function agentLimitsIn(parts: readonly LaunchDir[]): AgentLimits | undefined {
  let found = false;
  let tasks = 0;
  let memoryMib = 0;
  for (const part of parts) {
    if (part.agentDir === undefined) continue;
    found = true;
    // `max` (none) reads 0, as no number.
    if (part.controllers.has('pids')) tasks = Math.max(tasks, numberIn(join(part.agentDir, 'pids.max')));
    if (part.controllers.has('memory')) memoryMib = Math.max(memoryMib, Math.round((memoryLimitOf(part.agentDir, part.v2) ?? 0) / (1024 * 1024)));
  }
  return found ? { tasks, memoryMib } : undefined;
}

/** The scheduler's period the CPU cap is a share of (the kernel's default), in µs. */
const CPU_PERIOD_US = 100_000;

/** A tree's CPU cap: `cpus` of every `CPU_PERIOD_US`, at least the kernel's least quota (1 ms); none at 0. */
function limitCpu(dir: string, v2: boolean, cpus: number): void {
  // Down, not to the nearest: a cap clamped to the quota above must not pass it (v1 refuses that).
  const quota = cpus === 0 ? null : Math.max(1000, Math.floor(cpus * CPU_PERIOD_US + 1e-6));
  if (v2) writeFileSync(join(dir, 'cpu.max'), `${quota ?? 'max'} ${CPU_PERIOD_US}`);
  else {
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota ?? -1));
  }
}

/** A cap of `cpus` where the cgroups above `part` allow less: the least of the two; no cap (0) stays none, the quota above holding anyway. */
function capBelow(cpus: number, part: { readonly quotaFrom?: string }): number {
  const ceiling = cpus === 0 || part.quotaFrom === undefined ? undefined : cpuQuotaAbove(part.quotaFrom);
  return ceiling === undefined ? cpus : Math.min(cpus, ceiling);
}

/** v1: the least CPUs `dir` and the cgroups above it allow (`cfs_quota_us / cfs_period_us`), or undefined where none sets a quota. */
function cpuQuotaAbove(dir: string): number | undefined {
  let least: number | undefined;
  for (let current = dir, depth = 0; depth < 64; depth++) {
    let quota: number;
    let period: number;
    try {
      quota = Number(readFileSync(join(current, 'cpu.cfs_quota_us'), 'utf8'));
      period = Number(readFileSync(join(current, 'cpu.cfs_period_us'), 'utf8'));
    } catch {
      break; // above the hierarchy's root
    }
    if (quota > 0 && period > 0) least = Math.min(least ?? Infinity, quota / period);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return least;
}

/** What the servers' cgroups may limit, in the order they are set up. */
const CONTROLLERS: readonly Controller[] = ['pids', 'memory', 'cpu'];
/** The controllers whose absence the sidecar's start warns of whatever the config: the CPU share only matters where a cap is set. */
const LIMITS: readonly Controller[] = ['pids', 'memory'];

/**
 * What a sidecar started like this process would get, made without making anything (doctor's
 * question): the cgroup it would make its servers' under, or why it could not limit them.
 */
export function cgroupReadiness(placement?: CgroupPlacement): { ok: true; dir: string; v2: boolean; memory: boolean; cpu: boolean } | { ok: false; problem: string } {
  if (placement === undefined && process.platform !== 'linux') return { ok: false, problem: 'cgroups are a Linux feature' };
  const where = placement ?? ownPlacement();
  if (typeof where === 'string') return { ok: false, problem: where };
  const unifiedPids = where.unified !== undefined && controllersOf(where.unified).includes('pids');
  const dir = unifiedPids ? where.unified : where.pidsV1;
  if (dir === undefined) return { ok: false, problem: where.unified === undefined ? 'no cgroup hierarchy is mounted where this process can see it' : `its cgroup ${where.unified} has no pids controller` };
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    return { ok: false, problem: `cannot make cgroups in ${dir}: ${codeOf(error)}` };
  }
  // On v2 the sidecar must be alone in its cgroup to hand its controllers down (`enableForChildren`).
  const others = unifiedPids ? othersIn(dir, process.pid) : 0;
  if (others > 0) return { ok: false, problem: sharedCgroup(dir, others, 'a sidecar started as this doctor was') };
  const memoryDir = where.unified !== undefined && controllersOf(where.unified).includes('memory') ? where.unified : where.memoryV1;
  const cpuDir = where.unified !== undefined && controllersOf(where.unified).includes('cpu') ? where.unified : where.cpuV1;
  return { ok: true, dir, v2: unifiedPids, memory: memoryDir !== undefined && writable(memoryDir), cpu: cpuDir !== undefined && writable(cpuDir) };
}

/** This process's placement, or why it cannot be read. */
function ownPlacement(): CgroupPlacement | string {
  try {
    return cgroupPlacement(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync('/proc/self/cgroup', 'utf8'));
  } catch (error) {
    return `cannot read /proc/self: ${codeOf(error)}`;
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * `sh -c JOIN_SCRIPT switchyard-cgroup N FILE… COMMAND ARG…`: writes the shell's own pid into each
 * of the N `cgroup.procs` files, then execs the command; a write that fails ends the launch (126)
 * with the shell's own message on stderr, rather than run it outside its limit.
 */
const JOIN_SCRIPT = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n - 1)); done; exec "$@"';

/** What a launch's cgroup held when its server ended. */
export interface CgroupEnd {
  /** Processes still in it: they had left the server's process group. */
  readonly left: number;
  /** Forks and clones its task limit refused (`pids.events`' `max`) over the server's life. */
  readonly refusedForks: number;
  /** The task limit the last of them met: a reload may have changed it since. */
  readonly refusedUnder: number;
  /** Processes of it the kernel ended for its memory limit (`oom_kill`). */
  readonly oomKills: number;
  /** How long its CPU cap held its tasks back over the server's life, summed over the CPUs they ran on, in ms (`cpu.stat`). */
  readonly throttledMs: number;
  /** What its agent's cgroup held when it ended (0: none); absent where it was under no agent's. */
  readonly agentLimits?: AgentLimits;
  /**
   * Whose memory limit the kernel met, where it ended processes of it: the server's own, or its
   * agent's. The cgroup whose peak use reached its limit is the one (v1's `max_usage_in_bytes`,
   * v2's `memory.peak`); v1's fail counts stay 0 where memory and swap share one limit, as here.
   */
  readonly memoryLimitMet?: 'server' | 'agent';
}

/** One launch's cgroup (one directory in each hierarchy the sidecar uses). */
export class LaunchCgroup {
  readonly #parts: readonly LaunchDir[];
  readonly #dirs: readonly string[];
  readonly #log: Logger;
  #ended: Promise<CgroupEnd> | undefined;

  /**
   * The limits in force: the memory limit it was made with (a reload's new one is for launches
   * after it: a lowered one would end a busy server), its task limit and CPU cap as last retuned.
   */
  #limits: TreeLimits;
  /** Forks refused so far, and the task limit that refused the last of them (`refusedUnder`). */
  #refusedSeen = 0;
  #refusedUnder: number;

  constructor(parts: readonly LaunchDir[], limits: TreeLimits, log: Logger) {
    this.#parts = parts;
    this.#dirs = parts.map((part) => part.dir);
    this.#limits = limits;
    this.#refusedUnder = limits.tasks;
    this.#log = log;
  }

  get limits(): TreeLimits {
    return this.#limits;
  }

  /**
   * Applies a reload's task limit and CPU cap to this running tree: neither ends a process (a tree
   * over its new task limit only has its next forks refused). `unchanged` where neither differs or
   * its hierarchies hold neither controller; `failed` where its cgroup is gone or a write was refused.
   */
  retune(limits: Pick<TreeLimits, 'tasks' | 'cpus'>): 'changed' | 'unchanged' | 'failed' {
    const tasks = limits.tasks !== this.#limits.tasks && this.#parts.some((part) => part.controllers.has('pids'));
    const cpus = limits.cpus !== this.#limits.cpus && this.#parts.some((part) => part.controllers.has('cpu'));
    if (!tasks && !cpus) return 'unchanged';
    const refused = this.#refusedForks();
    if (refused > this.#refusedSeen) this.#refusedUnder = this.#limits.tasks;
    this.#refusedSeen = refused;
    // Each limit noted as its writes succeed: one that failed half way leaves the other in force.
    try {
      if (tasks) {
        for (const part of this.#parts) if (part.controllers.has('pids')) writeFileSync(join(part.dir, 'pids.max'), limits.tasks > 0 ? String(limits.tasks) : 'max');
        this.#limits = { ...this.#limits, tasks: limits.tasks };
      }
      if (cpus) {
        for (const part of this.#parts) if (part.controllers.has('cpu')) limitCpu(part.dir, part.v2, capBelow(limits.cpus, part));
        this.#limits = { ...this.#limits, cpus: limits.cpus };
      }
    } catch {
      return 'failed';
    }
    return 'changed';
  }

  /** The task limit the tree's last refused fork met: the one in force, unless a reload changed it since. */
  get refusedUnder(): number {
    return this.#refusedForks() > this.#refusedSeen ? this.#limits.tasks : this.#refusedUnder;
  }

  #refusedForks(): number {
    return Math.max(0, ...this.#parts.filter((part) => part.controllers.has('pids')).map((part) => eventCount(join(part.dir, 'pids.events'), 'max')));
  }

  /** Its directories, one per hierarchy. */
  get dirs(): readonly string[] {
    return this.#dirs;
  }

  /** The command line that runs `file args` inside the cgroup from its first instruction. */
  command(file: string, args: readonly string[]): { file: string; args: string[] } {
    return { file: '/bin/sh', args: ['-c', JOIN_SCRIPT, 'switchyard-cgroup', String(this.#dirs.length), ...this.#dirs.map((dir) => join(dir, 'cgroup.procs')), file, ...args] };
  }

  /** Kills every member at once; synchronous, for a sidecar's `exit` handler. */
  killNow(): void {
    for (const dir of this.#dirs) killMembers(dir);
  }

  /**
   * Kills what is left in it (what left the server's process group) and removes it; idempotent.
   * @returns How many processes were still in it, and how many forks its task limit refused.
   */
  end(): Promise<CgroupEnd> {
    this.#ended ??= this.#end();
    return this.#ended;
  }

  async #end(): Promise<CgroupEnd> {
    const left = new Set(this.#dirs.flatMap((dir) => membersOf(dir).filter(running))).size;
    const refusedForks = this.#refusedForks();
    const refusedUnder = this.refusedUnder;
    const oomKills = Math.max(0, ...this.#parts.filter((part) => part.controllers.has('memory')).map((part) => eventCount(join(part.dir, part.v2 ? 'memory.events' : 'memory.oom_control'), 'oom_kill')));
    // v2 counts µs, v1 ns.
    const throttledMs = Math.max(0, ...this.#parts.filter((part) => part.controllers.has('cpu')).map((part) => (part.v2 ? eventCount(join(part.dir, 'cpu.stat'), 'throttled_usec') / 1000 : eventCount(join(part.dir, 'cpu.stat'), 'throttled_time') / 1e6)));
    const agentLimits = agentLimitsIn(this.#parts);
    const memoryLimitMet = oomKills === 0 ? undefined : this.#memoryLimitMet();
    for (const dir of this.#dirs) await endDir(dir, this.#log);
    // The agent's cgroup goes with its last launch; another launch of it still there keeps it (EBUSY).
    for (const part of this.#parts) if (part.agentDir !== undefined) removeDir(part.agentDir);
    return { left, refusedForks, refusedUnder, oomKills, throttledMs: Math.round(throttledMs), ...(agentLimits !== undefined ? { agentLimits } : {}), ...(memoryLimitMet !== undefined ? { memoryLimitMet } : {}) };
  }

  /** The server's own memory limit where its cgroup counts it met, else its agent's where it has one. */
  #memoryLimitMet(): 'server' | 'agent' {
    const part = this.#parts.find((candidate) => candidate.controllers.has('memory'));
    if (part === undefined || part.agentDir === undefined || reachedMemoryLimit(part.dir, part.v2)) return 'server';
    return reachedMemoryLimit(part.agentDir, part.v2) ? 'agent' : 'server';
  }
}

/** Whether a cgroup's peak memory use reached its limit (none: no); without a peak to read (v2 before Linux 5.19), no. */
function reachedMemoryLimit(dir: string, v2: boolean): boolean {
  const limit = memoryLimitOf(dir, v2) ?? 0;
  // A charge that would pass the limit fails at it: the peak reads the limit itself, give or take a page.
  return limit > 0 && numberIn(join(dir, v2 ? 'memory.peak' : 'memory.max_usage_in_bytes')) >= limit - 64 * 1024;
}

/** A cgroup file holding one count (`memory.max_usage_in_bytes`, `pids.max`); 0 without it, or where it holds no number (`max`). */
function numberIn(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

/** Longest wait for a killed cgroup to empty before it is left for the next sidecar's start to remove. */
const REMOVE_WAIT_MS = 2000;
const REMOVE_POLL_MS = 20;

/** Kills a cgroup's members and removes it once the kernel has taken them out (a killed process leaves it as it exits). */
async function endDir(dir: string, log: Logger): Promise<void> {
  const deadline = Date.now() + REMOVE_WAIT_MS;
  for (;;) {
    killMembers(dir);
    const problem = removeDir(dir);
    if (problem === undefined) return;
    if (problem !== 'EBUSY' || Date.now() >= deadline) {
      log.warn('Cannot remove a server\'s cgroup, the next sidecar start removes it', { dir, error: problem });
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, REMOVE_POLL_MS));
  }
}

/** SIGKILL to every member: at one stroke where the kernel has `cgroup.kill`, else member by member (`pids.max` bounds a fork race). */
function killMembers(dir: string): void {
  if (existsSync(join(dir, 'cgroup.kill'))) {
    try {
      writeFileSync(join(dir, 'cgroup.kill'), '1');
      return;
    } catch {
      // Gone already, or refused: member by member, below.
    }
  }
  for (const pid of membersOf(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }
}

/** A count of a cgroup's events file (`pids.events`' `max`, `memory.events`' `oom_kill`, `cpu.stat`'s `throttled_usec`); 0 without it. */
function eventCount(file: string, key: string): number {
  try {
    const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
    return match === null ? 0 : Number(match[1]);
  } catch {
    return 0;
  }
}

/**
 * Whether a member still runs: a zombie (killed, not yet reaped by its new parent, which on some
 * hosts' PID 1 takes long) is listed on cgroup v1 and keeps its cgroup from being removed, but
 * was not left running.
 */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

function membersOf(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter((line) => line !== '').map(Number);
  } catch {
    return [];
  }
}

/** Removes an empty cgroup: its error code, or undefined once it is gone. */
function removeDir(dir: string): string | undefined {
  try {
    rmdirSync(dir);
    return undefined;
  } catch (error) {
    const code = codeOf(error);
    return code === 'ENOENT' ? undefined : code;
  }
}

/**
 * Ends and removes the cgroups a sidecar that is gone left in `parent` (`switchyard-PID`, its
 * servers' cgroups; `switchyard-sidecar-PID`, its own leaf): what a sidecar killed outright
 * could not end. A pid still in use is left alone, even if reused: it may be another sidecar's.
 */
function endLeftovers(parent: string, pid: number, log: Logger): void {
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  let ended = 0;
  const dirs: string[] = [];
  for (const entry of entries) {
    const match = /^switchyard-(sidecar-)?(\d+)$/.exec(entry);
    if (match === null || Number(match[2]) === pid || processExists(Number(match[2]))) continue;
    const dir = join(parent, entry);
    // Children first: a cgroup with children cannot be removed (a launch's under its agent's).
    for (const child of treeOf(dir)) {
      ended += membersOf(child).filter(running).length;
      killMembers(child);
      dirs.push(child);
    }
  }
  if (ended > 0) log.warn('Ended server processes a sidecar that is gone left running', { processes: ended, cgroup: parent });
  // Removed as their killed members exit, without holding up the start.
  void (async () => {
    for (const dir of dirs) await endDir(dir, log);
  })();
}

/** A cgroup and every cgroup under it, each after those under it. */
function treeOf(dir: string, depth = 0): string[] {
  return [...(depth < 4 ? subdirsOf(dir).flatMap((child) => treeOf(child, depth + 1)) : []), dir];
}

function subdirsOf(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => join(dir, entry.name));
  } catch {
    return [];
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return codeOf(error) === 'EPERM';
  }
}

function controllersOf(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

/**
 * Hands a controller (`pids`, `memory`, `cpu`) to the children of the sidecar's own unified cgroup: true, or why not. A cgroup
 * holding processes cannot (EBUSY), so a sidecar alone in it moves into a leaf first; one that
 * shares it (a login shell's scope) leaves it as it is.
 */
export function enableForChildren(own: string, pid: number, controller: string): true | string {
  const control = join(own, 'cgroup.subtree_control');
  const first = tryWrite(control, `+${controller}`);
  if (first === undefined) return true;
  if (first !== 'EBUSY') return `cannot write +${controller} to ${control}: ${first}`;
  const members = membersOf(own);
  const others = othersIn(own, pid);
  if (others > 0) return sharedCgroup(own, others, 'the sidecar');
  const leaf = join(own, `switchyard-sidecar-${pid}`);
  const made = makeDir(leaf) ?? [pid, ...members.filter((member) => member !== pid)].reduce<string | undefined>((problem, member) => problem ?? moveInto(leaf, member), undefined);
  return made ?? writeControl(control, `+${controller}`) ?? true;
}

/** How many processes of `own` are neither `pid` nor its descendants: the sidecar's own children (a helper it runs, esbuild's service under tsx) move with it. */
function othersIn(own: string, pid: number): number {
  return membersOf(own).filter((member) => member !== pid && !descendsFrom(member, pid)).length;
}

function sharedCgroup(own: string, others: number, who: string): string {
  return `${who} shares its cgroup ${own} with ${others} other process(es), which a cgroup v2 that limits its children may not hold: run it as a service of its own (a systemd unit with Delegate=yes)`;
}

/** Moves a process into a cgroup; one that exited meanwhile (ESRCH) is not a problem. */
function moveInto(dir: string, pid: number): string | undefined {
  const code = tryWrite(join(dir, 'cgroup.procs'), String(pid));
  return code === undefined || code === 'ESRCH' ? undefined : `cannot move process ${pid} into ${dir}: ${code}`;
}

/** Whether `pid`'s chain of parents reaches `ancestor`. */
function descendsFrom(pid: number, ancestor: number): boolean {
  let current = pid;
  for (let depth = 0; depth < 64 && current > 1; depth++) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${current}/stat`, 'utf8');
    } catch {
      return false;
    }
    // "pid (comm) state ppid …", where comm may hold spaces and parentheses.
    current = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (current === ancestor) return true;
  }
  return false;
}

function makeDir(dir: string): string | undefined {
  try {
    mkdirSync(dir);
    return undefined;
  } catch (error) {
    return codeOf(error) === 'EEXIST' ? undefined : `cannot make ${dir}: ${codeOf(error)}`;
  }
}

function writeControl(file: string, value: string): string | undefined {
  const code = tryWrite(file, value);
  return code === undefined ? undefined : `cannot write ${value} to ${file}: ${code}`;
}

/** Writes a cgroup file: its error code, or undefined. */
function tryWrite(file: string, value: string): string | undefined {
  try {
    writeFileSync(file, value);
    return undefined;
  } catch (error) {
    return codeOf(error);
  }
}

function codeOf(error: unknown): string {
  return String((error as NodeJS.ErrnoException).code ?? (error as Error).message);
}

function ceilingOf(bases: readonly Base[]): { cpuCeiling?: number } {
  const from = bases.find((base) => base.quotaFrom !== undefined)?.quotaFrom;
  const ceiling = from === undefined ? undefined : cpuQuotaAbove(from);
  return ceiling === undefined ? {} : { cpuCeiling: ceiling };
}
