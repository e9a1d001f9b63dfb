/**
 * The worker in this process, for link tests: the production Node adapter (`startNodeWorker`,
 * `@hono/node-server` + `ws`) on 127.0.0.1 with a config of hosts only, its log collected as
 * objects. `kill()` drops every socket at once, as a dead worker process would; `restart()`
 * starts a fresh worker (new registry, as a restarted process has) on the same port so that
 * sidecars can relink. `registry` always names the running worker's.
 *
 * @module
 */
import { startNodeWorker, type NodeWorker } from '../../worker/adapters/node/node-worker.ts';
import { parseWorkerConfig } from '../../worker/config/worker-config.ts';
import type { HostLinkRegistry } from '../../worker/link/host-link-registry.ts';
import { createWorkerLogger } from '../../worker/log.ts';
import { workerHostEntry, type HostCredential } from './configs.ts';

export interface InProcessWorker {
  readonly url: string;
  readonly port: number;
  /** The running worker's host-link registry. */
  readonly registry: HostLinkRegistry;
  /** Log lines the worker wrote (JSON objects), across restarts. */
  readonly logs: Record<string, unknown>[];
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the worker with `hosts` (and `config`'s other keys: agents, servers, …). */
export async function startInProcessWorker(hosts: HostCredential[], config: Record<string, unknown> = {}): Promise<InProcessWorker> {
  const logs: Record<string, unknown>[] = [];
  const log = createWorkerLogger({ level: 'debug', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const workerConfig = parseWorkerConfig({ agents: [], servers: {}, ...config, hosts: hosts.map(workerHostEntry) }, { runtime: 'edge' });
  let port = 0;
  let running: NodeWorker | null = null;
  let last!: NodeWorker;
  const listen = async () => {
    last = await startNodeWorker({ config: workerConfig, port, log });
    running = last;
    port = Number(new URL(last.url).port);
  };
  const kill = async () => {
    const node = running;
    running = null;
    await node?.close();
  };
  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get registry() {
      return last.worker.registry;
    },
    logs,
    kill,
    restart: listen,
    stop: kill,
  };
}
