/**
 * The Switchyard stack on Cloudflare's runtime: the Workers bundle under workerd
 * (`workerd-worker.ts`) and two real sidecar CLIs (`sidecar-process.ts`), hosts A and B, each
 * linked to it over reverse HTTP on 127.0.0.1 and hosting the stdio servers a test file gives it.
 * The same parts as `stack.ts` (configs, processes, `/healthz` polling), with a second host, so
 * that a test can show two hosts' traffic never crossing.
 *
 * Agent `alice` may use every server of both hosts; more agents come with their own lists.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentEntry, hostCredential, randomCredential, tokenSha256, workerHostEntry, writeSidecarDir, type HostCredential, type ServerEntry } from './configs.ts';
import { freePort, killGroups, ProcessSet } from './processes.ts';
import { startSidecar, type SidecarProcess } from './sidecar-process.ts';
import { fetchHealth, waitHostLinked, type Health } from './stack.ts';
import { startWorkerdWorker, type WorkerdWorker } from './workerd-worker.ts';

export const CF_HOST_A = 'cf-host-a';
export const CF_HOST_B = 'cf-host-b';
export type HostName = 'a' | 'b';

export interface WorkerdStackSpec {
  /** Servers on each host, by name, as in an mcp.json; names must differ between hosts. */
  servers: Record<HostName, Record<string, ServerEntry>>;
  /** Edge-direct HTTP servers (top-level `http` descriptors), by name → MCP URL; `alice` may use them. */
  edgeDirect?: Record<string, string>;
  /** Extra top-level worker config keys (e.g. `oauth`). */
  worker?: Record<string, unknown>;
  /** Agents besides `alice`, with the servers each may use. */
  agents?: Array<{ name: string; servers: string[] }>;
  /** Durable Objects' storage that outlives an evicted object (`WorkerdWorkerOptions.lastingStorage`). */
  lastingStorage?: boolean;
}

export interface WorkerdStack {
  readonly url: string;
  readonly tokens: Record<string, string>;
  readonly worker: WorkerdWorker;
  sidecar(host: HostName): SidecarProcess;
  entityId(host: HostName): string;
  /** A host's key pair, for a test that links as that host itself. */
  hostKey(host: HostName): HostCredential;
  health(): Promise<Health>;
  waitLinked(host: HostName, linked?: boolean): Promise<void>;
  /** Starts host's sidecar again (after `stopSidecar` or a crash); returns before it links. */
  startSidecar(host: HostName): SidecarProcess;
  stopSidecar(host: HostName, signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Pids of every server host's sidecars spawned, restarts included. */
  serverPids(host: HostName): number[];
  stop(): Promise<void>;
}

export async function startWorkerdStack(spec: WorkerdStackSpec): Promise<WorkerdStack> {
  const procs = new ProcessSet();
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-cf-stack-'));
  const hosts = { a: hostCredential(CF_HOST_A), b: hostCredential(CF_HOST_B) };
  const edgeDirect = spec.edgeDirect ?? {};
  const all = [...Object.keys(spec.servers.a), ...Object.keys(spec.servers.b), ...Object.keys(edgeDirect)];
  const agents = [{ name: 'alice', servers: all }, ...(spec.agents ?? [])];
  const tokens: Record<string, string> = { admin: randomCredential('admin-token') };
  for (const agent of agents) tokens[agent.name] = randomCredential(`${agent.name}-token`);
  const on = (host: HostName) => ({ executor: { type: 'user-computer-profile', 'entity-id': hosts[host].entityId, target: { type: 'local' } } });
  const config = {
    agents: agents.map((a) => agentEntry({ name: a.name, token: tokens[a.name]!, servers: a.servers })),
    hosts: [workerHostEntry(hosts.a), workerHostEntry(hosts.b)],
    servers: {
      ...Object.fromEntries((['a', 'b'] as const).flatMap((h) => Object.keys(spec.servers[h]).map((n) => [n, on(h)]))),
      ...Object.fromEntries(Object.entries(edgeDirect).map(([n, url]) => [n, { executor: { type: 'http', url } }])),
    },
    'admin-token-sha256': tokenSha256(tokens.admin!),
    ...spec.worker,
  };
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dirs = { a: join(dir, 'a'), b: join(dir, 'b') };
  for (const h of ['a', 'b'] as const) {
    mkdirSync(dirs[h], { recursive: true });
    writeSidecarDir(dirs[h], { worker: url, host: hosts[h], servers: spec.servers[h] });
  }
  const history: Record<HostName, SidecarProcess[]> = { a: [], b: [] };
  const current: Partial<Record<HostName, SidecarProcess>> = {};
  const launch = (h: HostName) => {
    const sidecar = startSidecar(procs, dirs[h]);
    history[h].push(sidecar);
    current[h] = sidecar;
    return sidecar;
  };
  let worker: WorkerdWorker | undefined;
  const stop = async () => {
    await procs.stopAll();
    killGroups([...history.a, ...history.b].flatMap((s) => s.serverPids()));
    await worker?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const waitLinked = (h: HostName, linked = true) => waitHostLinked(url, tokens.admin!, hosts[h].entityId, linked, linked ? current[h] : undefined);
  try {
    worker = await startWorkerdWorker(config, { port, ...(spec.lastingStorage === true ? { lastingStorage: true } : {}) });
    launch('a');
    launch('b');
    await waitLinked('a');
    await waitLinked('b');
  } catch (error) {
    await stop();
    throw error;
  }
  const running = worker;
  return {
    url,
    tokens,
    worker: running,
    sidecar: (h) => current[h]!,
    entityId: (h) => hosts[h].entityId,
    hostKey: (h) => hosts[h],
    health: () => fetchHealth(url, tokens.admin!),
    waitLinked,
    startSidecar: launch,
    async stopSidecar(h, signal = 'SIGTERM') {
      const sidecar = current[h]!;
      if (signal === 'SIGKILL') sidecar.process.child.kill('SIGKILL');
      await sidecar.process.stop();
    },
    serverPids: (h) => history[h].flatMap((s) => s.serverPids()),
    stop,
  };
}
