/**
 * A minimal worker for link tests: a hono app with only the link route, served by
 * `@hono/node-server` on 127.0.0.1 (port 0 the first time), with an in-memory host-link registry.
 * `kill()` drops every socket at once, as a dead worker process would; `restart()` listens again
 * on the same port so sidecars can relink.
 */
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { serve, upgradeWebSocket } from '@hono/node-server';
import { Hono } from 'hono';
import { WebSocketServer } from 'ws';
import { InMemoryHostLinkRegistry } from '../../worker/link/host-link-registry.ts';
import { createLinkRoute, type LinkTunables } from '../../worker/link/link-route.ts';

export interface HarnessHost {
  entityId: string;
  secret: string;
}

export interface WorkerHarness {
  url: string;
  port: number;
  registry: InMemoryHostLinkRegistry;
  /** Log lines the worker wrote (JSON objects). */
  logs: Record<string, unknown>[];
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

export async function startWorkerHarness(hosts: HarnessHost[], endpoint: LinkTunables = {}): Promise<WorkerHarness> {
  const registry = new InMemoryHostLinkRegistry({ hosts: hosts.map((h) => h.entityId) });
  const logs: Record<string, unknown>[] = [];
  const log = {
    info: (msg: string, fields?: Record<string, unknown>) => logs.push({ level: 'info', msg, ...fields }),
    warn: (msg: string, fields?: Record<string, unknown>) => logs.push({ level: 'warn', msg, ...fields }),
  };
  const app = new Hono();
  app.route('/', createLinkRoute({ upgradeWebSocket, registry, hosts: hosts.map((h) => ({ 'entity-id': h.entityId, 'secret-sha256': sha256Hex(h.secret) })), log, endpoint }));

  let server: Server | null = null;
  let wss: WebSocketServer | null = null;
  const sockets = new Set<Socket>();
  let port = 0;

  const listen = async () => {
    wss = new WebSocketServer({ noServer: true });
    await new Promise<void>((resolve, reject) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port, websocket: { server: wss! } }, () => resolve()) as Server;
      server.once('error', reject);
      server.on('connection', (socket: Socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
    });
    port = (server!.address() as AddressInfo).port;
  };

  const kill = async () => {
    const s = server;
    if (s === null) return;
    server = null;
    for (const client of wss?.clients ?? []) client.terminate();
    for (const socket of sockets) socket.destroy();
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  };

  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    registry,
    logs,
    kill,
    restart: listen,
    stop: kill,
  };
}
