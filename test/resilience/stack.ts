/**
 * The Switchyard stack as users run it, for the resilience suite: the worker under the real Deno
 * binary (`worker/adapters/deno.ts`) and the sidecar through the real CLI
 * (`node --import tsx cli/main.ts sidecar --config-dir DIR`), linked over reverse HTTP on
 * 127.0.0.1, hosting the stdio servers a test file asks for.
 *
 * Why a harness of its own rather than `test/helpers`: faults need to restart the worker on the
 * same port, SIGKILL and restart the sidecar, read both logs with arrival times, and account for
 * every server process even after the sidecar was killed. Every credential is random per stack
 * and listed in `secrets`, so a file can prove that none of them reached a log.
 *
 * Fixed shape: host A (`res-host-a`) is served by the CLI sidecar; host B (`res-host-b`) is in the
 * config but has no sidecar (a rogue client can link as it, and `offline` is bound to it). Agent
 * `alice` may use every server; more agents may be added with their own server lists and trust.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../../worker/auth/agent-auth.ts';
import { TrustProfileStore } from '../../sidecar/trust/profile-store.ts';
import { DENO, freePort, ProcessSet, type RunningProcess } from '../helpers/worker-processes.ts';
import { LineLog, msg } from './line-log.ts';
import { alive } from './proc-stats.ts';

export const HOST_A = 'res-host-a';
export const HOST_B = 'res-host-b';

export interface ServerEntry {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

export interface AgentSpec {
  name: string;
  servers: string[];
  /** A trust profile (written under trust-profiles/) this agent's servers run under. */
  trust?: { ref: string; containment?: 'required' | 'none' };
}

export interface StackSpec {
  /** Servers on host A, by name, as in an mcp.json. */
  servers: Record<string, ServerEntry>;
  /** Agents besides `alice` (who may use every server, unconstrained). */
  agents?: AgentSpec[];
  /** Trust profiles on host A, by reference. */
  profiles?: Record<string, unknown>;
  /** Extra top-level worker config keys (e.g. `request-timeout-seconds`). */
  worker?: Record<string, unknown>;
  /** Log level of the worker and the sidecar; `debug` gives a secret scan more to read. Default `info`. */
  logLevel?: 'debug' | 'info';
}

export interface Proc {
  process: RunningProcess;
  pid: number;
  out: LineLog;
  err: LineLog;
}

export interface Stack {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Bearer tokens by agent name, plus `admin`. */
  readonly tokens: Record<string, string>;
  readonly hostSecrets: { a: string; b: string };
  /** Every credential of this stack, for log scans. */
  readonly secrets: string[];
  readonly worker: Proc;
  readonly sidecar: Proc;
  /** Every worker and sidecar process this stack ran, restarts included (for log scans). */
  readonly history: Proc[];
  /** The credentials of `secrets` that appear anywhere in the output of any worker or sidecar so far. */
  leakedSecrets(): string[];
  /** Pids of every server any sidecar of this stack spawned. */
  serverPids(): number[];
  health(): Promise<Health>;
  /** Resolves once /healthz says host A is linked (or not, with `linked: false`). */
  waitLinked(linked?: boolean): Promise<void>;
  /**
   * Stops the worker and starts it again on the same port; resolves when it listens. SIGTERM is
   * an operator's restart (sessions closed in order), SIGKILL a crash.
   */
  restartWorker(signal?: 'SIGTERM' | 'SIGKILL'): Promise<Proc>;
  /** Starts a new CLI sidecar (after a crash); returns at once, before it links. */
  startSidecar(): Proc;
  /** Ends every process (servers included) and removes the config dir. */
  stop(): Promise<void>;
}

export interface Health {
  hosts: Array<{ 'entity-id': string; linked: boolean; channels: number }>;
  servers: Array<{ name: string; state: string }>;
  sessions: number;
}

/** A random credential, recognisable in logs by its prefix. */
export const credential = (what: string) => `res-${what}-${randomBytes(12).toString('hex')}`;

/** Wraps a spawned process with line logs of its stdout and stderr. */
export function watch(process: RunningProcess): Proc {
  return { process, pid: process.child.pid!, out: new LineLog(process.child.stdout!), err: new LineLog(process.child.stderr!) };
}

/** Writes a sidecar config dir: sidecar.json, host.secret (0600), mcp-servers/mcp.json, trust-profiles/. */
export function writeSidecarDir(configDir: string, options: { worker: string; entityId: string; secret: string; servers: Record<string, ServerEntry>; profiles?: Record<string, unknown> }): void {
  for (const sub of ['mcp-servers', 'trust-profiles']) mkdirSync(join(configDir, sub), { recursive: true });
  writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: options.servers }));
  for (const [ref, profile] of Object.entries(options.profiles ?? {})) writeFileSync(join(configDir, 'trust-profiles', `${ref}.json`), JSON.stringify(profile));
  writeFileSync(join(configDir, 'host.secret'), options.secret, { mode: 0o600 });
  writeFileSync(join(configDir, 'sidecar.json'), JSON.stringify({ worker: options.worker, 'entity-id': options.entityId, 'secret-file': 'host.secret' }));
}

/** The real sidecar CLI on `configDir`, with link retries shortened so relinking is quick. */
export function spawnCliSidecar(procs: ProcessSet, configDir: string, logLevel: 'debug' | 'info' = 'info'): Proc {
  return watch(
    procs.spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'sidecar', '--config-dir', configDir], {
      SWITCHYARD_LINK_RETRY_FIRST_MS: '100',
      SWITCHYARD_LINK_RETRY_CAP_MS: '500',
      SWITCHYARD_LOG_LEVEL: logLevel,
    }),
  );
}

/** Pids of the servers a sidecar logged as spawned. */
export const spawnedPids = (sidecar: Proc): number[] => sidecar.err.filter(msg('Server spawned')).map((l) => l.json.pid as number);

export async function startStack(spec: StackSpec): Promise<Stack> {
  const procs = new ProcessSet();
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-resilience-'));
  const configDir = join(dir, 'sidecar');
  mkdirSync(join(configDir, 'trust-profiles'), { recursive: true });
  const names = Object.keys(spec.servers);
  const agents: AgentSpec[] = [{ name: 'alice', servers: [...names, 'offline'] }, ...(spec.agents ?? [])];
  const tokens: Record<string, string> = { admin: credential('admin-token') };
  for (const agent of agents) tokens[agent.name] = credential(`${agent.name}-token`);
  const hostSecrets = { a: credential('host-a-secret'), b: credential('host-b-secret') };

  for (const [ref, profile] of Object.entries(spec.profiles ?? {})) writeFileSync(join(configDir, 'trust-profiles', `${ref}.json`), JSON.stringify(profile));
  const store = new TrustProfileStore(join(configDir, 'trust-profiles'));
  const onA = { type: 'user-computer-profile', 'entity-id': HOST_A, target: { type: 'local' } };
  const config = {
    agents: await Promise.all(
      agents.map(async (a) => ({
        name: a.name,
        'token-sha256': await sha256Hex(tokens[a.name]!),
        servers: a.servers,
        ...(a.trust
          ? { 'trust-context': { 'trust-profile-ref': a.trust.ref, 'trust-profile-revision': (await store.load(a.trust.ref)).revision, ...(a.trust.containment ? { containment: a.trust.containment } : {}) } }
          : {}),
      })),
    ),
    hosts: [
      { 'entity-id': HOST_A, 'secret-sha256': await sha256Hex(hostSecrets.a) },
      { 'entity-id': HOST_B, 'secret-sha256': await sha256Hex(hostSecrets.b) },
    ],
    servers: {
      ...Object.fromEntries(names.map((n) => [n, { executor: onA }])),
      offline: { executor: { type: 'reverse-http', 'entity-id': HOST_B } },
    },
    'admin-token-sha256': await sha256Hex(tokens.admin!),
    ...spec.worker,
  };
  const configFile = join(dir, 'worker.json');
  writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });

  const history: Proc[] = [];
  const track = (proc: Proc): Proc => {
    history.push(proc);
    return proc;
  };
  const startWorker = async (port: number): Promise<Proc> => {
    const proc = track(
      watch(
        procs.spawn(DENO, ['run', '--quiet', '--allow-net', '--allow-env', '--allow-read', 'worker/adapters/deno.ts'], {
          SWITCHYARD_WORKER_CONFIG_FILE: configFile,
          HOST: '127.0.0.1',
          PORT: String(port),
          NO_COLOR: '1',
          SWITCHYARD_LOG_LEVEL: spec.logLevel ?? 'info',
        }),
      ),
    );
    await proc.out.waitFor((l) => l.json.event === 'listening', 'the worker listening');
    return proc;
  };
  // Worker and sidecar start side by side (the sidecar retries until the worker listens), which
  // saves a process start per file; so the port is chosen up front.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  writeSidecarDir(configDir, { worker: url, entityId: HOST_A, secret: hostSecrets.a, servers: spec.servers, ...(spec.profiles ? { profiles: spec.profiles } : {}) });
  const startSidecar = (): Proc => track(spawnCliSidecar(procs, configDir, spec.logLevel));
  let sidecar = startSidecar();
  let worker: Proc;
  try {
    worker = await startWorker(port);
  } catch (error) {
    await procs.stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const sidecars = () => history.filter((p) => p.process.child.spawnargs.includes('sidecar'));
  const serverPids = () => sidecars().flatMap(spawnedPids);

  const health = async (): Promise<Health> => {
    const response = await fetch(`${url}/healthz`, { headers: { authorization: `Bearer ${tokens.admin}` } });
    if (response.status !== 200) throw new Error(`/healthz answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as Health;
  };
  const waitLinked = async (linked = true): Promise<void> => {
    const deadline = Date.now() + 30_000;
    while ((await health()).hosts.find((h) => h['entity-id'] === HOST_A)?.linked !== linked) {
      if (Date.now() > deadline) throw new Error(`Host A never became ${linked ? 'linked' : 'unlinked'}; sidecar log:\n${sidecar.err.text.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  try {
    await waitLinked();
  } catch (error) {
    await procs.stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  return {
    url,
    port,
    dir,
    tokens,
    hostSecrets,
    secrets: [...Object.values(tokens), hostSecrets.a, hostSecrets.b],
    get worker() {
      return worker;
    },
    get sidecar() {
      return sidecar;
    },
    history,
    leakedSecrets() {
      const text = history.map((p) => `${p.process.stdout()}\n${p.process.stderr()}`).join('\n');
      return [...Object.values(tokens), hostSecrets.a, hostSecrets.b].filter((secret) => text.includes(secret));
    },
    serverPids,
    health,
    waitLinked,
    async restartWorker(signal = 'SIGTERM') {
      if (signal === 'SIGKILL') {
        worker.process.child.kill('SIGKILL');
        await worker.process.exited;
      }
      await worker.process.stop();
      worker = await startWorker(port);
      return worker;
    },
    startSidecar() {
      sidecar = startSidecar();
      return sidecar;
    },
    async stop() {
      await procs.stopAll();
      for (const pid of alive(serverPids())) {
        try {
          process.kill(-pid, 'SIGKILL'); // a SIGKILLed sidecar leaves its detached servers behind
        } catch {
          // Already gone, as it should be.
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
