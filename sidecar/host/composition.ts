/**
 * The sidecar's production wiring, in one place (upstream WorkspacesTransportComposition, M3):
 * one process executor, the trust profile store, the per-session policy cache, the
 * RemoteMcpHostHandler registered on a production McpTransportListener, and (given a worker URL
 * and the host key) the link client that serves that listener. The CLI and the tests build the sidecar
 * through this function, so what is tested is what runs.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChannelOpenHandler, LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { silentLogger, type Logger } from '../log.ts';
import { LinkClient, type LinkClientOptions } from '../link/link-client.ts';
import { LargeLineGate } from '../process/large-line-gate.ts';
import type { HostKey } from '../link/host-key.ts';
import { ProcessExecutor, type ProcessExecutorOptions } from '../process/process-executor.ts';
import { PolicyCache, type CompileOptions } from '../sandbox/index.ts';
import { TrustProfileStore } from '../trust/profile-store.ts';
import { McpTransportListener } from './mcp-transport-listener.ts';
import { DEFAULT_INSTANCE_IDLE_SECONDS, LegacyInstancePool } from './modern/legacy-instance-pool.ts';
import { RemoteMcpHostHandler, type RemoteMcpHostHandlerOptions } from './remote-mcp-host-handler.ts';
import { auditFromConfig } from '../../shared/audit/audit-from-config.ts';
import type { AuditConfig } from '../../shared/audit/audit-config.ts';
import type { AuditWrite } from '../../shared/audit/audit-log.ts';
import { SidecarAudit } from '../audit/sidecar-audit.ts';
import { DEFAULT_WARM_POOL, WarmPool, type WarmPoolBudget } from './warm-pool.ts';
import { rosterCheck, type HostRoster, type RosterCheck } from '../../shared/link/host-roster.ts';
import { ProcessBudget, type ProcessLimits } from './process-budget.ts';
import { LaunchRate, type LaunchRateLimits } from './launch-rate.ts';
import { findPrlimit } from '../process/address-space-limit.ts';
import { findSetpriv } from '../process/parent-death.ts';
import type { ConfigSnapshot } from '../config/config-snapshot.ts';
import { limitWarnings, memoryLimitWarning } from '../config/sidecar-config.ts';
import { type AgentLimits, CGROUP_FIX, DEFAULT_MEMORY_PER_AGENT_MIB, DEFAULT_MEMORY_PER_SERVER_MIB, DEFAULT_TASKS_PER_AGENT, DEFAULT_TASKS_PER_SERVER, ServerCgroups, type TreeLimits } from '../process/server-cgroups.ts';

export interface SidecarCompositionConfig {
  /** The sidecar config dir: mcp-servers/, users/, machines/, trust-profiles/. */
  configDir: string;
  /** This host's entity id (selects `machines/<entity-id>/`). */
  entityId: string;
  /** Selects `users/<user>/`. */
  user: string;
  /** Worker base URL and host key; without them there is no link client (all-in-one, tests). */
  worker?: string;
  key?: HostKey;
  log?: Logger;
  executor?: ProcessExecutorOptions;
  compile?: Omit<CompileOptions, 'revision'>;
  /** `sidecar.json` `"sandbox"`: the size cap of each sandbox's private `/tmp` and `/dev/shm`. */
  sandbox?: { readonly tmpSizeMib: number };
  env?: RemoteMcpHostHandlerOptions['env'];
  /** sidecar.json's `"trust-profile"` floor and `"allow-uncontained"`; none = no floor, no uncontained launch. */
  trust?: RemoteMcpHostHandlerOptions['trust'];
  /** Link timings and backoff, for tests. */
  link?: Pick<LinkClientOptions, 'endpoint' | 'backoff' | 'onLinked'>;
  /** sidecar.json `"modern-instance-idle-seconds"`: how long a modern agent's idle legacy instance lives (fractions for tests). */
  modernInstanceIdleSeconds?: number;
  /** sidecar.json `"audit"` and where its lines go (stderr or the configured file, opened by the caller); no audit lines without `write`. */
  audit?: { config?: AuditConfig; write: AuditWrite };
  /** sidecar.json `"warm-pool"`, what it leaves out taken from `DEFAULT_WARM_POOL`; absent: no pool (in-process hosts, tests). */
  warmPool?: { size?: number; maxInstances?: number; idleSeconds?: number; budget?: WarmPoolBudget };
  /**
   * sidecar.json `"limits"` (`switchyard sidecar` always passes them, defaults filled in by
   * `loadSidecarConfig`); no limit without it.
   */
  limits?: { processesPerAgent: number; processes: number; memoryLimitMib: number; launchBurstPerAgent: number; launchesPerAgentPerMinute: number; tasksPerServer?: number; memoryPerServerMib?: number; cpusPerServer?: number; tasksPerAgent?: number; memoryPerAgentMib?: number };
  /**
   * The config files last accepted (a live sidecar's). Launches read the disk, as without it,
   * until `refuseConfig` says the files on disk were refused: then this snapshot, until a reload.
   */
  snapshot?: ConfigSnapshot;
}

/** What a sidecar dir reload hands a running composition (`cli/sidecar-reload.ts`). */
export type SidecarReload = Required<Pick<SidecarCompositionConfig, 'snapshot' | 'trust' | 'sandbox' | 'limits'>> & {
  /** `audit.include-arguments` as the new sidecar.json has it; the rest of `audit` applies at the next start. */
  includeArguments?: boolean;
};

export interface SidecarComposition {
  readonly executor: ProcessExecutor;
  readonly profiles: TrustProfileStore;
  readonly policies: PolicyCache;
  readonly handler: RemoteMcpHostHandler;
  /** The legacy instances serving modern agents; ended on `stop`. */
  readonly modernInstances: LegacyInstancePool;
  /** Pre-spawned instances for legacy sessions; ended on `stop`. */
  readonly warmPool: WarmPool;
  /** Every listener the sidecar answers channel opens with; today the MCP one. */
  readonly listeners: { readonly mcp: McpTransportListener };
  /** The link endpoint's channel-open handler (the MCP listener's). */
  readonly onOpen: ChannelOpenHandler;
  /** Present when the config names a worker and a host key. */
  readonly link: LinkClient | null;
  /** The process limits every stdio launch is counted against. */
  readonly budget: ProcessBudget;
  /** How fast each agent may make this host launch (a warm pool's spares included). */
  readonly launchRate: LaunchRate;
  /** Which stdio servers' large stdout lines are read now (`large-line-gate.ts`). */
  readonly lineGate: LargeLineGate;
  /**
   * Applies a changed config dir without a restart: the new files, trust floor, sandbox and
   * limits; ends only the servers the change affects (`RemoteMcpHostHandler.reconfigure`).
   * @returns How many servers were ended.
   */
  reload(next: SidecarReload): Promise<number>;
  /** The files on disk were refused (`switchyard check` finds problems): launches read the last accepted snapshot until the next reload. */
  refuseConfig(): void;
  /**
   * Ends the warm spares and modern instances of every agent and server `roster` does not route
   * here (the worker's `link-roster`, or the single-machine worker's reload). Returns how many.
   */
  keepRoster(roster: HostRoster): number;
  /** Starts dialling the worker (no-op without a link client). */
  start(): void;
  /** Stops the link, ends every hosted server and waits for their process trees. */
  stop(): Promise<void>;
}

export function createSidecarComposition(config: SidecarCompositionConfig): SidecarComposition {
  const log = config.log ?? silentLogger;
  const memoryLimit = addressSpaceLimit(config.limits?.memoryLimitMib ?? 0, config.env ?? process.env, log);
  const setpriv = parentDeathTool(config.env ?? process.env, log);
  // Made before the executor starts anything: on cgroup v2 a sidecar alone in its cgroup moves into a leaf first.
  const tree = config.limits === undefined ? undefined : treeLimits(config.limits);
  const opened = config.limits === undefined || tree === undefined ? undefined : serverCgroups(tree, agentLimits(config.limits), log);
  const cgroups = opened?.cgroups;
  /** The CPU cap in force, so that a reload that leaves it as it was says nothing of it again. */
  let appliedCpus = tree?.cpus ?? 0;
  const executor = new ProcessExecutor({
    logger: log,
    ...(memoryLimit !== undefined ? { addressSpaceLimit: memoryLimit } : {}),
    ...(setpriv !== undefined ? { setpriv } : {}),
    groupWatchdog: true,
    ...(cgroups !== undefined && tree !== undefined ? { cgroups, treeLimits: tree } : {}),
    ...config.executor,
  });
  const budget = new ProcessBudget({ limits: processLimits(config.limits), log });
  const launchRate = new LaunchRate({ limits: launchRateLimits(config.limits), log });
  let snapshot = config.snapshot;
  let refused = false;
  const read = snapshot === undefined ? undefined : (path: string) => (refused ? snapshot!.read(path) : readFile(path, 'utf8'));
  const profiles = new TrustProfileStore(join(config.configDir, 'trust-profiles'), read);
  const policies = new PolicyCache();
  const configured = config.audit === undefined
    ? null
    : auditFromConfig(config.audit.config, { component: 'sidecar', write: config.audit.write, log });
  const audit = configured === null ? undefined : new SidecarAudit(configured.audit, config.entityId);
  const modernInstances = new LegacyInstancePool({ idleMs: (config.modernInstanceIdleSeconds ?? DEFAULT_INSTANCE_IDLE_SECONDS) * 1000, log });
  const warm = config.warmPool === undefined ? { ...DEFAULT_WARM_POOL, size: 0 } : { ...DEFAULT_WARM_POOL, ...config.warmPool };
  // A spare counts against the process limits through its own transport (it holds a slot from
  // spawn to end, in the pool and after a session takes it), so the pool only asks for free room.
  // It is a launch for its agent, taken here, when the pool decides to start it (and only while
  // the agent keeps half its burst): a session handed it launches nothing.
  const tryReserve = (agent: string) => budget.hasRoom(agent) && launchRate.trySpare(agent);
  const warmPool = new WarmPool({ size: warm.size, maxInstances: warm.maxInstances, idleMs: warm.idleSeconds * 1000, log, budget: warm.budget ?? { tryReserve, release: () => {} } });
  // Large stdout lines are read a few at once, in their agents' turns, and an agent's not while
  // the link is full and much of that agent's waits on it (`large-line-gate.ts`); the link, made
  // below, says when it has room again.
  let link: LinkClient | null = null;
  const lineGate = new LargeLineGate({ roomy: (agent) => link?.endpoint?.hasRoomFor(agent) ?? true });
  const handler = new RemoteMcpHostHandler({
    modernInstances,
    lineGate,
    warmPool,
    configDir: config.configDir,
    entityId: config.entityId,
    user: config.user,
    executor,
    profiles,
    policies,
    log,
    compile: compileOptions(config, config.sandbox, log),
    ...(config.env ? { env: config.env } : {}),
    ...(config.trust ? { trust: config.trust } : {}),
    ...(audit !== undefined ? { audit } : {}),
    budget,
    launchRate,
    ...(read !== undefined ? { read } : {}),
  });
  const open = (request: unknown, channel: Parameters<typeof handler.open>[1]) => handler.open(request, channel);
  const mcp = new McpTransportListener([audit !== undefined ? audit.audited(open) : open]);
  // The roster last told, so that one told again unchanged (single-machine mode tells it at every reload) says nothing.
  let lastRoster: string | undefined;
  let lastKeeps: RosterCheck | undefined;
  const keepRoster = (roster: HostRoster): number => {
    const keeps = rosterCheck(roster);
    // What this roster took away from the last: a request of such a pair that overtook it is served and nothing kept.
    const previous = lastKeeps;
    const removed: RosterCheck | undefined = previous === undefined ? undefined : (agent, server) => previous(agent, server) && !keeps(agent, server);
    const spares = warmPool.keepOnly(keeps, removed);
    const instances = modernInstances.keepOnly(keeps, removed);
    lastKeeps = keeps;
    const text = JSON.stringify(roster);
    // `endedSpares` and `endedInstances`: what this host kept ready for agents or servers the worker no longer routes here.
    if (text !== lastRoster || spares + instances > 0) log.info('Roster from the worker', { agents: roster.length, endedSpares: spares, endedInstances: instances });
    lastRoster = text;
    return spares + instances;
  };
  const endpoint = {
    ...config.link?.endpoint,
    onRoom: () => {
      lineGate.recheck();
      config.link?.endpoint?.onRoom?.();
    },
    onRoster: (roster: HostRoster) => {
      keepRoster(roster);
      config.link?.endpoint?.onRoster?.(roster);
    },
  };
  const onLinked = (linked: LinkEndpoint) => {
    config.link?.onLinked?.(linked);
    // The next link's worker tells its own roster, or none (an older one): until then every pair is kept as before any.
    void linked.whenClosed.then(() => {
      warmPool.forgetRoster();
      modernInstances.forgetRoster();
      lastRoster = undefined;
      lastKeeps = undefined;
    });
    if (audit === undefined) return;
    audit.linked();
    const since = performance.now();
    void linked.whenClosed.then((info) => audit.linkEnded(info, Math.round(performance.now() - since)));
  };
  link =
    config.worker !== undefined && config.key !== undefined
      ? new LinkClient({ worker: config.worker, entityId: config.entityId, key: config.key, onOpen: mcp.onOpen, log, ...config.link, endpoint, onLinked, ...(audit !== undefined ? { onRefused: ({ reason, check }) => audit.linkRefused(reason, check) } : {}) })
      : null;
  return {
    executor,
    profiles,
    policies,
    handler,
    modernInstances,
    warmPool,
    listeners: { mcp },
    onOpen: mcp.onOpen,
    link,
    budget,
    launchRate,
    lineGate,
    refuseConfig() {
      refused = snapshot !== undefined;
      // What was kept from the disk may be the refused files themselves: read the snapshot from now on.
      handler.forgetConfigReads();
    },
    async reload(next) {
      snapshot = next.snapshot;
      if (configured !== null && next.includeArguments !== undefined) configured.audit.includeArguments = next.includeArguments;
      refused = false;
      budget.setLimits(processLimits(next.limits));
      launchRate.setLimits(launchRateLimits(next.limits));
      executor.setAddressSpaceLimit(addressSpaceLimit(next.limits.memoryLimitMib, config.env ?? process.env, log));
      const nextTree = treeLimits(next.limits);
      // A cap a reload changes is said of as one set at start is, where it cannot hold as set.
      if (opened !== undefined && nextTree.cpus !== appliedCpus) warnOfCpuCap(nextTree.cpus, opened.cpu, log);
      appliedCpus = nextTree.cpus;
      executor.setTreeLimits(nextTree);
      retuneAgents(cgroups, agentLimits(next.limits), log);
      policies.clear();
      return handler.reconfigure({ trust: next.trust, compile: compileOptions(config, next.sandbox, log) });
    },
    keepRoster,
    start: () => link?.start(),
    async stop() {
      await link?.stop();
      await mcp.closeAll();
      await warmPool.dispose();
      await modernInstances.dispose();
      await executor.disposeAll();
      cgroups?.close();
      await configured?.exporter?.close();
    },
  };
}

// Every compile knows the config dir (and `compile.ownFiles`, the key and audit files kept outside it), so no sandbox ever sees the host key (DESIGN §5).
function compileOptions(config: SidecarCompositionConfig, sandbox: SidecarCompositionConfig['sandbox'], log: Logger): RemoteMcpHostHandlerOptions['compile'] {
  return { configDir: config.configDir, log, ...(sandbox ? { tmpSizeBytes: sandbox.tmpSizeMib * 1024 * 1024 } : {}), ...config.compile };
}

function processLimits(limits: SidecarCompositionConfig['limits']): ProcessLimits {
  return limits === undefined ? { perAgent: Infinity, total: Infinity } : { perAgent: limits.processesPerAgent, total: limits.processes };
}

/** No launch rate without limits, as no process limit. */
function launchRateLimits(limits: SidecarCompositionConfig['limits']): LaunchRateLimits {
  if (limits === undefined) return { burst: Infinity, perMinute: 0 };
  return { burst: limits.launchBurstPerAgent, perMinute: limits.launchesPerAgentPerMinute };
}

/** sidecar.json's limits of each server's whole tree, defaults filled in. */
function treeLimits(limits: NonNullable<SidecarCompositionConfig['limits']>): TreeLimits {
  return { tasks: limits.tasksPerServer ?? DEFAULT_TASKS_PER_SERVER, memoryMib: limits.memoryPerServerMib ?? DEFAULT_MEMORY_PER_SERVER_MIB, cpus: limits.cpusPerServer ?? 0 };
}

/** sidecar.json's limits of each agent's servers together, defaults filled in. */
function agentLimits(limits: NonNullable<SidecarCompositionConfig['limits']>): AgentLimits {
  return { tasks: limits.tasksPerAgent ?? DEFAULT_TASKS_PER_AGENT, memoryMib: limits.memoryPerAgentMib ?? DEFAULT_MEMORY_PER_AGENT_MIB };
}

/** A reload's agent limits, applied to the agents' cgroups already there as far as they may be (`setAgentLimits`), and said. */
function retuneAgents(cgroups: ServerCgroups | undefined, limits: AgentLimits, log: Logger): void {
  if (cgroups === undefined) return;
  const { agents, failed } = cgroups.setAgentLimits(limits);
  const held = { 'tasks-per-agent': limits.tasks, 'memory-per-agent-mib': limits.memoryMib };
  if (agents > 0) log.info('Running agents\' servers take the new agent limits', { agents, ...held });
  if (failed > 0) log.warn('Some running agents keep their agent limits: their cgroups could not be written', { agents: failed, ...held });
}

/** The servers' cgroups on Linux, where the sidecar may make them; what they give, or why not, said once in the log. */
function serverCgroups(limits: TreeLimits, agent: AgentLimits, log: Logger): { cgroups: ServerCgroups | undefined; cpu: CpuCapState } | undefined {
  if (process.platform !== 'linux') return undefined;
  const configured = { 'memory-per-server-mib': limits.memoryMib, 'tasks-per-server': limits.tasks, 'cpus-per-server': limits.cpus, 'tasks-per-agent': agent.tasks, 'memory-per-agent-mib': agent.memoryMib };
  for (const { path, message } of limitWarnings(configured)) {
    const key = path.slice('limits.'.length) as keyof typeof configured;
    log.warn('Server limit too low for a Node server', { [key]: configured[key], why: message });
  }
  const opened = ServerCgroups.open({ log });
  opened.cgroups?.setAgentLimits(agent);
  const hasCpu = opened.cgroups !== undefined && opened.support.cpu;
  const held = {
    'tasks-per-server': opened.cgroups !== undefined && opened.support.limit ? limits.tasks : 'not applied',
    'memory-per-server-mib': opened.cgroups !== undefined && opened.support.memory ? limits.memoryMib : 'not applied',
    'tasks-per-agent': opened.cgroups !== undefined && opened.support.limit ? agent.tasks : 'not applied',
    'memory-per-agent-mib': opened.cgroups !== undefined && opened.support.memory ? agent.memoryMib : 'not applied',
    // The share holds whenever the controller is there; the cap where one is set.
    'cpus-per-server': !hasCpu ? 'not applied' : limits.cpus > 0 ? limits.cpus : 'a fair share, no cap',
  };
  // Only a cap set and not applied is a problem: a host need not give the share.
  const cpuProblem = opened.cgroups !== undefined && limits.cpus > 0 ? opened.cpuProblem : undefined;
  if (opened.cgroups === undefined) {
    log.warn('Servers run without the limits of their whole tree: the sidecar cannot make cgroups for them here', { ...held, why: opened.problem, fix: CGROUP_FIX });
  } else if (opened.problem !== undefined || cpuProblem !== undefined) {
    log.warn('Servers run without some limits of their whole tree: their cgroups lack a controller', { cgroups: opened.support.bases, ...held, why: [opened.problem, cpuProblem].filter((why) => why !== undefined).join('; '), fix: CGROUP_FIX });
  } else {
    log.info('Each server runs in a cgroup of its own', { cgroups: opened.support.bases, ...held });
  }
  const cpu: CpuCapState = opened.cgroups === undefined
    ? { problem: opened.problem }
    : { ...(hasCpu ? {} : { problem: opened.cpuProblem ?? 'no cpu controller' }), ...(opened.support.cpuCeiling !== undefined ? { ceiling: opened.support.cpuCeiling } : {}) };
  // The start's own warning above names a missing controller; a ceiling below the cap is said here.
  if (cpu.problem === undefined) warnOfCpuCap(limits.cpus, cpu, log);
  return { cgroups: opened.cgroups, cpu };
}

/** Whether a CPU cap can hold: why not, or the most it can give (the sidecar's own cgroup's quota, v1). */
export interface CpuCapState {
  readonly problem?: string;
  readonly ceiling?: number;
}

/** Says where a cap of `cpus` does not hold as set: no cpu controller, or one above the quota the sidecar itself runs under. */
export function warnOfCpuCap(cpus: number, state: CpuCapState, log: Logger): void {
  if (cpus === 0) return;
  if (state.problem !== undefined) log.warn('CPU cap not applied: the servers\' cgroups have no cpu controller', { 'cpus-per-server': cpus, why: state.problem, fix: CGROUP_FIX });
  else if (state.ceiling !== undefined && cpus > state.ceiling) {
    log.warn('CPU cap above the sidecar\'s own CPU quota: servers get at most that', { 'cpus-per-server': cpus, quota: Math.round(state.ceiling * 100) / 100, fix: 'Lower limits.cpus-per-server in sidecar.json, or raise the quota of the sidecar\'s own unit (CPUQuota=)' });
  }
}

/** `setpriv` for the executor on Linux (else said once, in the log); nothing elsewhere, where no such signal exists. */
function parentDeathTool(env: Readonly<Record<string, string | undefined>>, log: Logger): string | undefined {
  if (process.platform !== 'linux') return undefined;
  const setpriv = findSetpriv(env);
  if (setpriv === null) log.warn('Ordinary servers may outlive a sidecar killed outright: setpriv (util-linux) not found');
  return setpriv ?? undefined;
}

/** The executor's RLIMIT_DATA, when one is asked for and `prlimit` exists to apply it (else said once, in the log). */
function addressSpaceLimit(mib: number, env: Readonly<Record<string, string | undefined>>, log: Logger): { prlimit: string; bytes: number } | undefined {
  if (mib <= 0) return undefined;
  const tooLow = memoryLimitWarning(mib);
  if (tooLow !== undefined) log.warn('Server memory limit too low for a Node server', { 'memory-limit-mib': mib, why: tooLow });
  const prlimit = findPrlimit(env);
  if (prlimit === null) {
    log.warn('Server memory limit not applied: prlimit (util-linux) not found, or not Linux', { 'memory-limit-mib': mib });
    return undefined;
  }
  return { prlimit, bytes: mib * 1024 * 1024 };
}
