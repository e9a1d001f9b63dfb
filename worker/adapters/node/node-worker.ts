/**
 * Node entry: the worker on `@hono/node-server`, with `/link` WebSockets through `ws`. Used by
 * the all-in-one mode (`switchyard start`: worker and sidecar in one Node process, servers bound
 * to `{"type":"local"}` served by the injected `localHost`) and by tests.
 *
 * `@hono/node-server` v2 upgrades WebSockets only when `serve` gets a `ws` server created with
 * `noServer: true`; it then routes `upgrade` events through the app, so `/link` is the same
 * route as under Deno.
 *
 * The only file of `worker/` allowed to use Node-only packages (`@hono/node-server`, `ws`), as the
 * runtime split puts each runtime's entry under `adapters/`; it imports no `node:` module itself
 * and is never part of the neutral worker bundle.
 *
 * @module
 */
import { serve, upgradeWebSocket, type ServerType } from '@hono/node-server';
import type { UpgradeWebSocket } from 'hono/ws';
import { WebSocketServer } from 'ws';
import { composeWorker, type ComposedWorker, type ComposeWorkerOptions } from '../../compose.ts';
import { parseWorkerConfig } from '../../config/worker-config.ts';
import type { WorkerLogger } from '../../log.ts';

type ListeningAddress = Parameters<NonNullable<Parameters<typeof serve>[1]>>[0];
type HttpServer = Extract<ServerType, { closeAllConnections(): void }>;

export interface StartNodeWorkerOptions {
  /** The worker config, raw JSON value or already parsed; validated here either way. */
  config: unknown;
  /** Listening address; 127.0.0.1 by default. */
  host?: string;
  /** Listening port; 0 (a free port) by default. */
  port?: number;
  /** All-in-one mode: the in-process host for `{"type":"local"}` servers (allows them in config). */
  localHost?: ComposeWorkerOptions['localHost'];
  log?: WorkerLogger;
  retryAfterMs?: number;
}

export interface NodeWorker {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  worker: ComposedWorker;
  /** Closes every session, every link socket and the HTTP server. */
  close(): Promise<void>;
}

export async function startNodeWorker(options: StartNodeWorkerOptions): Promise<NodeWorker> {
  const config = parseWorkerConfig(options.config, { runtime: options.localHost !== undefined ? 'node-all-in-one' : 'edge' });
  const worker = composeWorker({
    config,
    upgradeWebSocket: upgradeWebSocket as unknown as UpgradeWebSocket<unknown, never>,
    ...(options.localHost !== undefined ? { localHost: options.localHost } : {}),
    ...(options.log !== undefined ? { log: options.log } : {}),
    ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
  });
  const wss = new WebSocketServer({ noServer: true });
  const hostname = options.host ?? '127.0.0.1';
  // Plain HTTP/1.1 server: `serve` without `createServer` options returns a node:http Server.
  let server!: HttpServer;
  const address = await new Promise<ListeningAddress>((resolve, reject) => {
    server = serve({ fetch: worker.app.fetch, hostname, port: options.port ?? 0, websocket: { server: wss } }, resolve) as HttpServer;
    server.once('error', reject);
  });
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    worker,
    close() {
      closing ??= (async () => {
        await worker.close();
        for (const client of wss.clients) client.terminate();
        wss.close();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}
