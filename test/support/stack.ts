/**
 * The Switchyard stack as users run it: the worker under Deno (`startWorkerProcess`, the
 * production launcher) and the real sidecar CLI (`startSidecar`), linked over reverse HTTP on
 * 127.0.0.1, hosting the stdio servers a test file asks for.
 *
 * It can restart the worker on the same port, SIGKILL and restart the sidecar, read both logs
 * with arrival times, and account for every server process even after the sidecar was killed.
 * Every credential is random per stack and listed in `secrets`, so a file can prove that none of
 * them reached a log.
 *
 * Fixed shape: host A (`res-host-a`) is served by the CLI sidecar; host B (`res-host-b`) is in the
 * config but has no sidecar (a rogue client can link as it, and `offline` is bound to it). Agent
 * `alice` may use every server; more agents may be added with their own server lists and trust.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrustProfileStore } from '../../sidecar/trust/profile-store.ts';
import {
  agentEntry, credentialTexts, hostCredential, randomCredential, tokenSha256, workerHostEntry, writeSidecarDir, writeWorkerConfig,
  type HostCredential, type ServerEntry,
} from './configs.ts';
import { freePort, killGroups, ProcessSet, type WatchedProcess } from './processes.ts';
import { startSidecar as startSidecarProcess, type SidecarProcess } from './sidecar-process.ts';
import { startWorkerProcessFromFile, type WorkerProcess } from './worker-process.ts';

export const HOST_A = 'res-host-a';
export const HOST_B = 'res-host-b';

export interface StackAgent {
  name: string;
  servers: string[];
  /** A trust profile (written under trust-profiles/) this agent's servers run under. */
  trust?: { ref: string; containment?: 'required' | 'none' };
}

export interface StackSpec {
  /** Servers on host A, by name, as in an mcp.json. */
  servers: Record<string, ServerEntry>;
  /** Agents besides `alice` (who may use every server, unconstrained). */
  agents?: StackAgent[];
  /** Trust profiles on host A, by reference. */
  profiles?: Record<string, unknown>;
  /** Extra top-level worker config keys (e.g. `request-timeout-seconds`). */
  worker?: Record<string, unknown>;
  /** Log level of the worker and the sidecar; `debug` gives a secret scan more to read. Default `info`. */
  logLevel?: 'debug' | 'info';
  /** Host A's sidecar.json keys beyond worker and entity id (`trust-profile`, `allow-uncontained`: true unless given). */
  sidecar?: Record<string, unknown>;
  /** Flags for the sidecar's node (e.g. `--perf-basic-prof`), as `SidecarOptions.nodeFlags`. */
  sidecarNodeFlags?: string[];
  /**
   * The URL host A's sidecar dials instead of the worker's: a relay in front of the worker's port,
   * which the caller runs (a shaped network path, `test/bench/link-fairness.ts`). The worker's
   * `public-url` is set to it, as a worker behind a proxy has it.
   */
  linkUrl?: (workerPort: number) => string | Promise<string>;
}

export interface Stack {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Bearer tokens by agent name, plus `admin`. */
  readonly tokens: Record<string, string>;
  /** Host key pairs: A's sidecar is the CLI one; B's private key only a test holds (a rogue link). */
  readonly hostKeys: { a: HostCredential; b: HostCredential };
  /** Every credential of this stack, for log scans. */
  readonly secrets: string[];
  readonly worker: WorkerProcess;
  readonly sidecar: SidecarProcess;
  /** Every worker and sidecar process this stack ran, restarts included (for log scans). */
  readonly history: WatchedProcess[];
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
  restartWorker(signal?: 'SIGTERM' | 'SIGKILL'): Promise<WorkerProcess>;
  /** Starts a new CLI sidecar (after a crash); returns at once, before it links. */
  startSidecar(): SidecarProcess;
  /** Ends every process (servers included) and removes the config dir. */
  stop(): Promise<void>;
}

export interface Health {
  hosts: Array<{ 'entity-id': string; linked: boolean; channels: number }>;
  servers: Array<{ name: string; state: string }>;
  sessions: number;
}

/** Asks `/healthz` with the admin token. */
export async function fetchHealth(url: string, adminToken: string): Promise<Health> {
  const response = await fetch(`${url}/healthz`, { headers: { authorization: `Bearer ${adminToken}` } });
  if (response.status !== 200) throw new Error(`/healthz answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Health;
}

/**
 * Resolves once `/healthz` says `entityId` is linked (or not); /healthz has no events, so it polls
 * every 25 ms. With `sidecar`, fails at once when that sidecar exits, quoting its log.
 */
export async function waitHostLinked(url: string, adminToken: string, entityId: string, linked = true, sidecar?: SidecarProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await fetchHealth(url, adminToken)).hosts.find((h) => h['entity-id'] === entityId)?.linked !== linked) {
    // A sidecar killed by a signal has no exit code, only its signal.
    const child = sidecar?.process.child;
    const exited = child !== undefined && linked && (child.exitCode !== null || child.signalCode !== null);
    if (exited || Date.now() > deadline) {
      const why = exited ? `its sidecar exited with ${child.exitCode !== null ? `code ${child.exitCode}` : child.signalCode}` : 'timed out';
      throw new Error(`Host ${entityId} never became ${linked ? 'linked' : 'unlinked'} (${why}); sidecar log:\n${sidecar?.err.text.slice(-3000) ?? ''}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function startStack(spec: StackSpec): Promise<Stack> {
  const procs = new ProcessSet();
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-stack-'));
  const configDir = join(dir, 'sidecar');
  mkdirSync(join(configDir, 'trust-profiles'), { recursive: true });
  const names = Object.keys(spec.servers);
  const agents: StackAgent[] = [{ name: 'alice', servers: [...names, 'offline'] }, ...(spec.agents ?? [])];
  const tokens: Record<string, string> = { admin: randomCredential('admin-token') };
  for (const agent of agents) tokens[agent.name] = randomCredential(`${agent.name}-token`);
  const hostA = hostCredential(HOST_A);
  const hostB = hostCredential(HOST_B);

  for (const [ref, profile] of Object.entries(spec.profiles ?? {})) writeFileSync(join(configDir, 'trust-profiles', `${ref}.json`), JSON.stringify(profile));
  const store = new TrustProfileStore(join(configDir, 'trust-profiles'));
  const onA = { type: 'user-computer-profile', 'entity-id': HOST_A, target: { type: 'local' } };
  // Worker and sidecar start side by side (the sidecar retries until the worker listens), which
  // saves a process start per file; so the port is chosen up front.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const linkUrl = await spec.linkUrl?.(port);
  const configFile = writeWorkerConfig(dir, {
    agents: await Promise.all(
      agents.map(async (a) =>
        agentEntry({
          name: a.name,
          token: tokens[a.name]!,
          servers: a.servers,
          ...(a.trust
            ? { 'trust-context': { 'trust-profile-ref': a.trust.ref, 'trust-profile-revision': (await store.load(a.trust.ref)).revision, ...(a.trust.containment ? { containment: a.trust.containment } : {}) } }
            : {}),
        }),
      ),
    ),
    hosts: [workerHostEntry(hostA), workerHostEntry(hostB)],
    servers: {
      ...Object.fromEntries(names.map((n) => [n, { executor: onA }])),
      offline: { executor: { type: 'reverse-http', 'entity-id': HOST_B } },
    },
    'admin-token-sha256': tokenSha256(tokens.admin!),
    ...(linkUrl !== undefined ? { 'public-url': linkUrl } : {}),
    ...spec.worker,
  });

  const history: WatchedProcess[] = [];
  const track = <P extends WatchedProcess>(proc: P): P => {
    history.push(proc);
    return proc;
  };
  const logLevel = spec.logLevel ?? 'info';
  // A worker with OAuth keeps its state beside its config, so a restart finds its clients and grants.
  const stateDir = spec.worker?.oauth !== undefined ? join(dir, 'worker-state') : undefined;
  const startWorker = async (port: number) => track(await startWorkerProcessFromFile(procs, configFile, { port, logLevel, ...(stateDir !== undefined ? { stateDir } : {}) }));
  writeSidecarDir(configDir, { worker: linkUrl ?? url, host: hostA, servers: spec.servers, ...(spec.profiles ? { profiles: spec.profiles } : {}), ...(spec.sidecar ? { sidecar: spec.sidecar } : {}) });
  const startSidecar = () => track(startSidecarProcess(procs, configDir, { logLevel, ...(spec.sidecarNodeFlags ? { nodeFlags: spec.sidecarNodeFlags } : {}) }));
  const sidecars: SidecarProcess[] = [];
  let sidecar = startSidecar();
  sidecars.push(sidecar);
  const serverPids = () => sidecars.flatMap((s) => s.serverPids());
  const secrets = [...Object.values(tokens), ...credentialTexts(hostA), ...credentialTexts(hostB)];
  const stop = async () => {
    await procs.stopAll();
    killGroups(serverPids());
    rmSync(dir, { recursive: true, force: true });
  };
  const health = () => fetchHealth(url, tokens.admin!);
  const waitLinked = (linked = true) => waitHostLinked(url, tokens.admin!, HOST_A, linked, sidecar);
  let worker: WorkerProcess;
  try {
    worker = await startWorker(port);
    await waitLinked();
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    url,
    port,
    dir,
    tokens,
    hostKeys: { a: hostA, b: hostB },
    secrets,
    get worker() {
      return worker;
    },
    get sidecar() {
      return sidecar;
    },
    history,
    leakedSecrets() {
      const text = history.map((p) => `${p.process.stdout()}\n${p.process.stderr()}`).join('\n');
      return secrets.filter((secret) => text.includes(secret));
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
      sidecars.push(sidecar);
      return sidecar;
    },
    stop,
  };
}
