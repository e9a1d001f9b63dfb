/**
 * `DIR/sidecar.json`: how this workstation reaches its worker and proves who it is.
 *
 * ```json
 * {"worker": "https://yard.example.com", "entity-id": "alice-laptop"}
 * ```
 *
 * The host's private key lives in its own file, `host.key` unless `key-file` names another
 * (relative to DIR), so the config can be shared and checked without exposing it; it is read by
 * `sidecar/link/host-key.ts`. A worker on another machine must be `https:` (`link/worker-url.ts`).
 *
 * @module
 */
import { isAbsolute, join } from 'node:path';
import { userInfo } from 'node:os';
import { LocalError } from '../../shared/errors.ts';
import * as z from '../../shared/zod.ts';
import { AuditConfigSchema, type AuditConfig } from '../../shared/audit/audit-config.ts';
import { EntityIdSchema, ProfileRefSchema } from '../../shared/names.ts';
import { parseWith, ValidationError } from '../../shared/validation.ts';
import { ConfigFileError, type JsonFileRead, readJsonFile } from './config-file-problems.ts';
import { UserNameSchema } from './user-name.ts';
import { WarmPoolConfigSchema, warmPoolSettings, type WarmPoolSettings } from './warm-pool-config.ts';
import { DEFAULT_KEY_FILE } from '../link/host-key.ts';
import { CLEARTEXT_REMOTE_MESSAGE, endpointPathOf, isCleartextRemote } from '../link/worker-url.ts';
import { DEFAULT_HOST_PROCESSES, DEFAULT_PROCESSES_PER_AGENT } from '../host/process-budget.ts';
import { DEFAULT_LAUNCHES_PER_AGENT_PER_MINUTE, defaultLaunchBurst } from '../host/launch-rate.ts';
import { DEFAULT_MEMORY_PER_AGENT_MIB, DEFAULT_MEMORY_PER_SERVER_MIB, DEFAULT_TASKS_PER_AGENT, DEFAULT_TASKS_PER_SERVER } from '../process/server-cgroups.ts';
import type { OwnFile } from '../sandbox/config-dir-exposure.ts';

/** The default RLIMIT_DATA of every server process, in MiB. */
export const DEFAULT_MEMORY_LIMIT_MIB = 4096;

/** Below this much private writable memory Node cannot start: it hangs as it starts, and so does a Node server's launch (QA s30: 16 and 32 MiB hung, 64 started). */
export const NODE_START_MEMORY_MIB = 64;

/** What `check` (on `limits.memory-limit-mib`) and the sidecar's start say of a memory limit too low for a Node server, or undefined. */
export function memoryLimitWarning(mib: number | undefined): string | undefined {
  if (mib === undefined || mib <= 0 || mib >= NODE_START_MEMORY_MIB) return undefined;
  return `${mib} MiB is below the ${NODE_START_MEMORY_MIB} MiB a Node server needs to start: under it one hangs as it starts, and its agent waits out the open deadline`;
}

/** The CPU time a Node server's start takes (a few hundred ms, more for a large one). */
const NODE_START_CPU_SECONDS = 0.5;
/** Below this share of a CPU a Node server's start takes over 5 s. */
export const NODE_START_CPUS = 0.1;

/** Below this many processes and threads a Node server cannot start: its own threads (V8's, libuv's) need about 12, and under them it hangs. */
export const NODE_START_TASKS = 16;

/** What `check` and the sidecar's start say of limits too low for a Node server: each with its key under `limits`. */
export function limitWarnings(limits: { 'memory-limit-mib'?: number; 'memory-per-server-mib'?: number; 'tasks-per-server'?: number; 'cpus-per-server'?: number; 'tasks-per-agent'?: number; 'memory-per-agent-mib'?: number } | undefined): Array<{ path: string; message: string }> {
  const warnings: Array<{ path: string; message: string }> = [];
  for (const key of ['memory-limit-mib', 'memory-per-server-mib', 'memory-per-agent-mib'] as const) {
    const message = memoryLimitWarning(limits?.[key]);
    if (message !== undefined) warnings.push({ path: `limits.${key}`, message });
  }
  for (const key of ['tasks-per-server', 'tasks-per-agent'] as const) {
    const tasks = limits?.[key];
    if (tasks !== undefined && tasks > 0 && tasks < NODE_START_TASKS) {
      warnings.push({ path: `limits.${key}`, message: `${tasks} is below the ${NODE_START_TASKS} processes and threads a Node server needs to start (its own threads take about 12): under it one hangs as it starts, and its agent waits out the open deadline` });
    }
  }
  const cpus = limits?.['cpus-per-server'];
  if (cpus !== undefined && cpus > 0 && cpus < NODE_START_CPUS) {
    warnings.push({ path: 'limits.cpus-per-server', message: `${cpus} CPU is below the ${NODE_START_CPUS} a Node server needs to start within seconds: its start, about ${NODE_START_CPU_SECONDS} s of CPU, takes ${Math.round(NODE_START_CPU_SECONDS / cpus)} s or more under it, and its agent may wait out the open deadline` });
  }
  return warnings;
}

/** The default cap of a sandbox's private `/tmp` (and `/dev/shm`), in MiB. */
export const DEFAULT_TMP_SIZE_MIB = 64;

/** The keys that decide what a launch runs under when the worker names no profile (sidecar/trust/host-floor.ts). */
const HostTrustKeys = {
  'trust-profile': z.optional(ProfileRefSchema).check(
    z.describe('Trust floor of every server on this host: a profile in trust-profiles/, composed restrictively with whatever the agent\'s trust context names'),
  ),
  'allow-uncontained': z
    .optional(z.boolean())
    .check(z.meta({ default: false }), z.describe('With no trust floor and no agent profile, run a server uncontained instead of refusing it (denied-by-policy)')),
};

export const SidecarConfigSchema = z
  .strictObject({
    worker: z
      .string()
      .check(
        z.url('must be an absolute URL'),
        z.refine((u) => /^(https?|wss?):\/\//i.test(u), 'must be an http(s): or ws(s): URL'),
        z.refine((u) => !isCleartextRemote(u), CLEARTEXT_REMOTE_MESSAGE),
        // The URL is logged and printed (doctor, each link attempt): nothing secret may ride in it,
        // and the link proves the host by its key, never by credentials in the URL.
        z.refine((u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === ''), 'must not carry a user name or password: the link proves this host by its key'),
        z.refine((u) => !URL.canParse(u) || (new URL(u).search === '' && new URL(u).hash === '' && !u.includes('?') && !u.includes('#')), 'must have no query or fragment'),
        z.superRefine((u, ctx) => {
          const endpoint = endpointPathOf(u);
          if (endpoint !== undefined) ctx.addIssue({ code: 'custom', input: u, message: `must be the worker's base URL, not its endpoint "${endpoint.endpoint}": use ${endpoint.base}` });
        }),
        z.describe('Base URL of the worker this sidecar links to; https: unless the worker is on this machine (127.0.0.1, localhost, [::1])'),
      ),
    'entity-id': EntityIdSchema.check(z.describe('This host\'s entity id, as listed under "hosts" in the worker config')),
    'key-file': z
      .optional(z.string().check(z.minLength(1)))
      .check(z.meta({ default: DEFAULT_KEY_FILE }), z.describe('This host\'s Ed25519 private key, written by switchyard sidecar init (relative to the config dir); kept out of every sandbox, as the config dir is')),
    user: z.optional(UserNameSchema).check(z.describe('Selects users/<user>/mcp-servers; defaults to the OS user')),
    sandbox: z
      .optional(
        z.strictObject({
          'tmp-size-mib': z
            .optional(z.number().check(z.int('must be a whole number of MiB'), z.gte(1, 'must be at least 1'), z.lte(65536, 'must be at most 65536')))
            .check(z.meta({ default: DEFAULT_TMP_SIZE_MIB }), z.describe('Size cap of each contained server\'s private /tmp and /dev/shm, in MiB')),
        }),
      )
      .check(z.describe('Limits of every contained server\'s sandbox')),
    ...HostTrustKeys,
    limits: z
      .optional(
        z.strictObject({
          'server-processes-per-agent': z
            .optional(z.number().check(z.int(), z.gte(1, 'must be at least 1'), z.lte(10_000)))
            .check(
              z.meta({ default: DEFAULT_PROCESSES_PER_AGENT }),
              z.describe('Server processes one agent may hold on this host (its legacy sessions\' and the instances kept for it as a modern agent); a launch past it ends that agent\'s oldest idle one, and is refused (limit-reached) only when none is idle'),
            ),
          'server-processes': z
            .optional(z.number().check(z.int(), z.gte(1, 'must be at least 1'), z.lte(10_000)))
            .check(
              z.meta({ default: DEFAULT_HOST_PROCESSES }),
              z.describe('Server processes this host runs in all; a launch past it ends the asking agent\'s own oldest idle one, never another agent\'s, and is refused (limit-reached) when it has none'),
            ),
          'server-launch-burst-per-agent': z
            .optional(z.number().check(z.int(), z.gte(1, 'must be at least 1'), z.lte(10_000)))
            .check(
              z.describe('Server processes one agent may make this host start at once (for its sessions, its modern instances and the warm pool\'s spares for it; a session handed a warm one starts none) before server-launches-per-agent-per-minute holds it back. Unset: 32, or server-processes-per-agent when larger, so an agent may always fill its allowance at once'),
            ),
          'server-launches-per-agent-per-minute': z
            .optional(z.number().check(z.int(), z.gte(0, 'must be 0 (no launch rate) or more'), z.lte(600_000)))
            .check(
              z.meta({ default: DEFAULT_LAUNCHES_PER_AGENT_PER_MINUTE }),
              z.describe('Server process starts one agent gets back each minute once its burst is spent (a Node server\'s start costs the host a few hundred ms of CPU); a start past them is refused (limit-reached, saying when to retry), never another agent\'s. 0: no launch rate'),
            ),
          'memory-limit-mib': z
            .optional(z.number().check(z.int(), z.gte(0, 'must be 0 (no limit) or more'), z.lte(1_048_576)))
            .check(
              z.meta({ default: DEFAULT_MEMORY_LIMIT_MIB }),
              z.describe('Private writable memory (RLIMIT_DATA, through prlimit) each server process may commit, in MiB; 0: no limit. Per process (each child of a forking server has its own). Linux only. Below 64 a Node server cannot start (check and the sidecar\'s start warn)'),
            ),
          'tasks-per-server': z
            .optional(z.number().check(z.int(), z.gte(0, 'must be 0 (no limit) or more'), z.lte(4_194_304)))
            .check(
              z.meta({ default: DEFAULT_TASKS_PER_SERVER }),
              z.describe('Processes and threads one server\'s whole tree may hold at once (its cgroup\'s pids.max), so a server that forks without end gets EAGAIN instead of filling the host; 0: no limit. Linux, where the sidecar may make cgroups: as root, or as a systemd unit with Delegate=yes (doctor says which)'),
            ),
          'memory-per-server-mib': z
            .optional(z.number().check(z.int(), z.gte(0, 'must be 0 (no limit) or more'), z.lte(1_048_576)))
            .check(
              z.meta({ default: DEFAULT_MEMORY_PER_SERVER_MIB }),
              z.describe('Memory one server\'s whole tree may use at once, in MiB (its cgroup\'s memory.max): past it the kernel ends one of its processes, and the sidecar\'s log says so; 0: no limit. Bounds a server that forks, which memory-limit-mib (per process) does not. Linux, where the sidecar may make cgroups, as tasks-per-server'),
            ),
          'cpus-per-server': z
            .optional(z.number().check(z.gte(0, 'must be 0 (no cap) or more'), z.lte(4096), z.refine((cpus) => cpus === 0 || cpus >= 0.01, 'must be 0 (no cap) or at least 0.01')))
            .check(
              z.meta({ default: 0 }),
              z.describe('CPU time one server\'s whole tree may use, in CPUs (1.5: one and a half cores\' time; its cgroup\'s cpu.max), busy host or not; a server held back by it is named in the sidecar\'s log when it ends; 0: no cap. Without a cap each agent, and each of its servers, still gets a fair share, not one per thread, when others want the CPU. Linux, where the sidecar may make cgroups, as tasks-per-server'),
            ),
          'tasks-per-agent': z
            .optional(z.number().check(z.int(), z.gte(0, 'must be 0 (no limit) or more'), z.lte(4_194_304)))
            .check(
              z.meta({ default: DEFAULT_TASKS_PER_AGENT }),
              z.describe('Processes and threads all of one agent\'s servers may hold at once, together (its cgroup\'s pids.max, above each server\'s), so an agent with many servers cannot fill the host\'s process table with tasks-per-server for each; 0: no limit. A reload applies it to running servers at once. Linux, where the sidecar may make cgroups, as tasks-per-server'),
            ),
          'memory-per-agent-mib': z
            .optional(z.number().check(z.int(), z.gte(0, 'must be 0 (no limit) or more'), z.lte(1_048_576)))
            .check(
              z.meta({ default: DEFAULT_MEMORY_PER_AGENT_MIB }),
              z.describe('Memory all of one agent\'s servers may use at once, together, in MiB (its cgroup\'s memory.max, above each server\'s): past it the kernel ends one of that agent\'s processes, never another agent\'s, and the sidecar\'s log says so; 0: no limit. A reload applies a raised one to running servers at once, a lowered one from the agent\'s next servers once its running ones have ended. Linux, where the sidecar may make cgroups, as tasks-per-server'),
            ),
        }),
      )
      .check(z.describe('What one agent, and all of them, may run on this host')),
    'modern-instance-idle-seconds': z
      .optional(z.number().check(z.int(), z.positive(), z.lte(86_400)))
      .check(
        z.meta({ default: 900 }),
        z.describe('How long the legacy server process kept for a modern (2026-07-28) agent lives with no request in flight, in seconds (900 = 15 min); it ends sooner once the worker no longer routes that agent and server here'),
      ),
    audit: z.optional(AuditConfigSchema),
    'warm-pool': z.optional(WarmPoolConfigSchema).check(z.describe('Server instances started and initialized ahead of an agent\'s next session, per agent, server and trust revision')),
  })
  .check(z.describe('Sidecar config (DIR/sidecar.json)'));

/**
 * Only the host trust keys of a sidecar.json (single-machine mode reads these and nothing else).
 * Every other key of sidecar.json goes through unread, and a key of none is refused, so a typo
 * ("trust-profle") is said, not dropped with the floor it meant (review s22).
 */
export const HostTrustConfigSchema = z.strictObject({
  ...Object.fromEntries(Object.keys(SidecarConfigSchema.def.shape).map((key) => [key, z.optional(z.unknown())])),
  ...HostTrustKeys,
});

export type SidecarConfigFile = z.infer<typeof SidecarConfigSchema>;

export interface SidecarConfig {
  configDir: string;
  worker: string;
  entityId: string;
  /** Absolute path of the host's private key (`host-key.ts` reads it). */
  keyFile: string;
  user: string;
  /** `"sandbox"`, with its defaults filled in. */
  sandbox: { tmpSizeMib: number };
  /** `"trust-profile"`: the floor of every server that names none of its own. */
  trustFloor?: string;
  /** `"allow-uncontained"`, false when absent. */
  allowUncontained: boolean;
  /** `"modern-instance-idle-seconds"`, when set (the composition's default applies otherwise). */
  modernInstanceIdleSeconds?: number;
  /** `"audit"`, with `file` made absolute (relative to the config dir). */
  audit?: AuditConfig;
  /** `"warm-pool"`, when set (the composition's defaults apply to what it leaves out). */
  warmPool?: WarmPoolSettings;
  /** `"limits"`, with its defaults filled in. */
  limits: SidecarLimits;
}

/**
 * The host key and the audit file, which sidecar.json may keep outside the config dir: no sandbox
 * may see them either (`config-dir-exposure.ts`).
 */
export function ownFiles(config: { readonly keyFile: string; readonly audit?: { readonly file?: string } }): OwnFile[] {
  return [{ path: config.keyFile, key: 'key-file' }, ...(config.audit?.file !== undefined ? [{ path: config.audit.file, key: 'audit.file' as const }] : [])];
}

/** {@link ownFiles} of a sidecar.json's JSON as it stands, for `check`, which reads a file that may not load whole. */
export function ownFilesNamed(configDir: string, json: unknown): OwnFile[] {
  const file = typeof json === 'object' && json !== null ? (json as { 'key-file'?: unknown; audit?: { file?: unknown } }) : {};
  const keyFile = typeof file['key-file'] === 'string' ? file['key-file'] : DEFAULT_KEY_FILE;
  const auditFile = typeof file.audit === 'object' && file.audit !== null && typeof file.audit.file === 'string' ? file.audit.file : undefined;
  return ownFiles({ keyFile: inConfigDir(configDir, keyFile), ...(auditFile !== undefined ? { audit: { file: inConfigDir(configDir, auditFile) } } : {}) });
}

/** A path sidecar.json names, relative to the config dir unless absolute. */
function inConfigDir(configDir: string, path: string): string {
  return isAbsolute(path) ? path : join(configDir, path);
}

export interface SidecarLimits {
  processesPerAgent: number;
  processes: number;
  /** `server-launch-burst-per-agent`, `defaultLaunchBurst(processesPerAgent)` when unset. */
  launchBurstPerAgent: number;
  /** 0: no launch rate. */
  launchesPerAgentPerMinute: number;
  /** 0: no limit. */
  memoryLimitMib: number;
  /** 0: no limit. */
  tasksPerServer: number;
  /** 0: no limit. */
  memoryPerServerMib: number;
  /** 0: no cap. */
  cpusPerServer: number;
  /** 0: no limit. */
  tasksPerAgent: number;
  /** 0: no limit. */
  memoryPerAgentMib: number;
}

export function parseSidecarConfig(input: unknown): SidecarConfigFile {
  return parseWith(SidecarConfigSchema, input, 'sidecar config');
}

/**
 * Parses a sidecar.json's content as `schema`; problems are thrown as a {@link ConfigFileError}
 * naming the file, worded as `switchyard check` words them.
 */
function parseFile<T>(schema: z.ZodMiniType<T>, input: unknown, path: string): T {
  try {
    return parseWith(schema, input, 'sidecar config');
  } catch (error) {
    if (error instanceof ValidationError) throw new ConfigFileError(path, 'sidecar config', error.issues);
    throw error;
  }
}

/**
 * Reads `DIR/sidecar.json`; flags given on the command line win. A missing file is allowed when
 * the flags give what it would have.
 *
 * @throws ConfigFileError naming the file and every problem, as `switchyard check` prints them.
 */
export function loadSidecarConfig(
  configDir: string,
  overrides: { worker?: string; entityId?: string } = {},
  /** Where sidecar.json is read: the disk, or a reload's checked snapshot (`cli/sidecar-reload.ts`). */
  readFile: (file: string) => JsonFileRead = readJsonFile,
): SidecarConfig {
  const path = join(configDir, 'sidecar.json');
  const read = readFile(path);
  if (!read.ok && !read.missing) throw new ConfigFileError(path, 'file', [read.issue]);
  const merged = {
    ...(read.ok ? (read.json as object) : {}),
    ...(overrides.worker !== undefined ? { worker: overrides.worker } : {}),
    ...(overrides.entityId !== undefined ? { 'entity-id': overrides.entityId } : {}),
  };
  let file: SidecarConfigFile;
  try {
    file = parseFile(SidecarConfigSchema, merged, path);
  } catch (error) {
    if (!(error instanceof ConfigFileError)) throw error;
    // A value a flag gave is the flag's problem: the file may be fine (it may not even hold the key).
    const flagOf = (issuePath: string) => (issuePath === 'worker' && overrides.worker !== undefined ? '--worker' : issuePath === 'entity-id' && overrides.entityId !== undefined ? '--entity-id' : undefined);
    const fromFlags = error.issues.filter((issue) => flagOf(issue.path) !== undefined);
    if (fromFlags.length > 0) throw new LocalError('usage', fromFlags.map((issue) => `${flagOf(issue.path)}: ${issue.message}`).join('\n'));
    // Say the file is missing rather than only what it would have held.
    if (!read.ok) throw new ConfigFileError(path, 'sidecar config', [read.issue, ...error.issues]);
    throw error;
  }
  const keyFile = file['key-file'] ?? DEFAULT_KEY_FILE;
  return {
    configDir,
    worker: file.worker,
    entityId: file['entity-id'],
    keyFile: inConfigDir(configDir, keyFile),
    user: file.user ?? osUserName(),
    sandbox: { tmpSizeMib: file.sandbox?.['tmp-size-mib'] ?? DEFAULT_TMP_SIZE_MIB },
    ...(file['trust-profile'] !== undefined ? { trustFloor: file['trust-profile'] } : {}),
    allowUncontained: file['allow-uncontained'] ?? false,
    ...(file['modern-instance-idle-seconds'] !== undefined ? { modernInstanceIdleSeconds: file['modern-instance-idle-seconds'] } : {}),
    ...(file.audit !== undefined
      ? { audit: { ...file.audit, ...(file.audit.file !== undefined ? { file: inConfigDir(configDir, file.audit.file) } : {}) } }
      : {}),
    ...(file['warm-pool'] !== undefined ? { warmPool: warmPoolSettings(file['warm-pool']) } : {}),
    limits: {
      processesPerAgent: file.limits?.['server-processes-per-agent'] ?? DEFAULT_PROCESSES_PER_AGENT,
      processes: file.limits?.['server-processes'] ?? DEFAULT_HOST_PROCESSES,
      launchBurstPerAgent: file.limits?.['server-launch-burst-per-agent'] ?? defaultLaunchBurst(file.limits?.['server-processes-per-agent'] ?? DEFAULT_PROCESSES_PER_AGENT),
      launchesPerAgentPerMinute: file.limits?.['server-launches-per-agent-per-minute'] ?? DEFAULT_LAUNCHES_PER_AGENT_PER_MINUTE,
      memoryLimitMib: file.limits?.['memory-limit-mib'] ?? DEFAULT_MEMORY_LIMIT_MIB,
      tasksPerServer: file.limits?.['tasks-per-server'] ?? DEFAULT_TASKS_PER_SERVER,
      memoryPerServerMib: file.limits?.['memory-per-server-mib'] ?? DEFAULT_MEMORY_PER_SERVER_MIB,
      cpusPerServer: file.limits?.['cpus-per-server'] ?? 0,
      tasksPerAgent: file.limits?.['tasks-per-agent'] ?? DEFAULT_TASKS_PER_AGENT,
      memoryPerAgentMib: file.limits?.['memory-per-agent-mib'] ?? DEFAULT_MEMORY_PER_AGENT_MIB,
    },
  };
}

/**
 * The host trust keys of `DIR/sidecar.json` when it exists, for a host with no link of its own
 * (single-machine mode); an absent file means no floor and no uncontained launches.
 */
export function loadHostTrustConfig(configDir: string): { trustFloor?: string; allowUncontained: boolean } {
  const path = join(configDir, 'sidecar.json');
  const read = readJsonFile(path);
  if (!read.ok) {
    if (read.missing) return { allowUncontained: false };
    throw new ConfigFileError(path, 'file', [read.issue]);
  }
  const file = parseFile(HostTrustConfigSchema, read.json, path);
  return { ...(file['trust-profile'] !== undefined ? { trustFloor: file['trust-profile'] } : {}), allowUncontained: file['allow-uncontained'] ?? false };
}

/** The OS user this process runs as, the sidecar's default `user` (an environment without one: `$USER`, else `default`). */
export function osUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'default';
  }
}
