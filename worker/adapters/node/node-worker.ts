/**
 * Node entry: the worker on `@hono/node-server`, with `/link` WebSockets through `ws`. Used by
 * `switchyard worker --runtime node` (the single-machine mode composed in `cli/`: servers bound to
 * a top-level `{"type":"local"}` are served by the injected `localHost`) and by tests.
 *
 * It takes a parsed config: the caller parses it once, for the runtime it means (`node` when it
 * passes a `localHost`, else `edge`).
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
import type { WorkerConfig } from '../../config/worker-config.ts';
import { LocalError } from '../../../shared/errors.ts';
import { MAX_FRAME_BYTES } from '../../../shared/frames.ts';
import { listenFailureMessage } from '../../listen-failure.ts';
import type { WorkerLogger } from '../../log.ts';
import { notePeer } from '../../link/peer-address.ts';

type ListeningAddress = Parameters<NonNullable<Parameters<typeof serve>[1]>>[0];
type HttpServer = Extract<ServerType, { closeAllConnections(): void }>;

export interface StartNodeWorkerOptions {
  /** The worker config, parsed by `parseWorkerConfig` (runtime `node` only with a `localHost`). */
  config: WorkerConfig;
  /** Listening address; 127.0.0.1 by default. */
  host?: string;
  /** Listening port; 0 (a free port) by default. */
  port?: number;
  /** Single-machine mode: the in-process host for top-level `{"type":"local"}` servers. */
  localHost?: ComposeWorkerOptions['localHost'];
  /** Single-machine mode: told the local host's roster after each reload. */
  localRoster?: ComposeWorkerOptions['localRoster'];
  log?: WorkerLogger;
  retryAfterMs?: number;
  /** Writes one audit line (stderr or the `audit.file`, opened by the caller); none when absent. */
  auditWrite?: ComposeWorkerOptions['auditWrite'];
  /** The runtime's part of OAuth: the built-in server's state store (`cli/oauth-state.ts` opens the file one). */
  oauth?: ComposeWorkerOptions['oauth'];
}

export interface NodeWorker {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  worker: ComposedWorker;
  /** Closes every session, every link socket and the HTTP server. */
  close(): Promise<void>;
}

export async function startNodeWorker(options: StartNodeWorkerOptions): Promise<NodeWorker> {
  const { config } = options;
  const local = Object.keys(config.servers).filter((name) => config.servers[name]!.executor.type === 'local');
  if (local.length > 0 && options.localHost === undefined) {
    throw new LocalError('invalid-config', `Servers ${local.map((n) => `"${n}"`).join(', ')} are bound to a top-level {"type":"local"}, but this worker has no local host: pass localHost (the single-machine mode) or bind them to a host`);
  }
  let listening: number | undefined;
  const worker = composeWorker({
    config,
    upgradeWebSocket: upgradeWebSocket as unknown as UpgradeWebSocket<unknown, never>,
    listenPort: () => listening,
    ...(options.localHost !== undefined ? { localHost: options.localHost } : {}),
    ...(options.localRoster !== undefined ? { localRoster: options.localRoster } : {}),
    ...(options.log !== undefined ? { log: options.log } : {}),
    ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
    ...(options.auditWrite !== undefined ? { auditWrite: options.auditWrite } : {}),
    ...(options.oauth !== undefined ? { oauth: options.oauth } : {}),
  });
  // `ws` refuses a bigger message from its header (1009), before reading it, where the link's own
  // check could only look at it once buffered; the slack leaves frames near the limit to that check,
  // which tells the host why in a link-close. The limit holds for the socket's whole life: `ws` has
  // no public way to lower it until the proof verified, so the handshake's 8 KiB cap is checked on
  // the buffered frame here (`shared/link/link-handshake.ts`).
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES + 1024 });
  // An empty host is unset: Node would bind `listen(port, '')` to every address.
  const hostname = options.host || '127.0.0.1';
  // Plain HTTP/1.1 server: `serve` without `createServer` options returns a node:http Server.
  let server!: HttpServer;
  let address: ListeningAddress;
  // The connection's peer, noted for the link route (`link/peer-address.ts`): `@hono/node-server` passes the node request as `env.incoming`.
  const nodeFetch = (request: Request, env?: { incoming?: { socket?: { remoteAddress?: string } } }) => {
    notePeer(request, env?.incoming?.socket?.remoteAddress);
    return worker.fetch(request, env);
  };
  try {
    address = await new Promise<ListeningAddress>((resolve, reject) => {
      server = serve({ fetch: nodeFetch, hostname, port: options.port ?? 0, websocket: { server: wss } }, resolve) as HttpServer;
      server.once('error', reject);
    });
  } catch (error) {
    await worker.close();
    wss.close();
    throw new LocalError('listen-failed', listenFailureMessage(hostname, options.port ?? 0, error), { cause: error });
  }
  // Past listening, a server error (EMFILE on accept) is logged: the listener above is spent,
  // and an 'error' event with none would throw.
  server.on('error', (error) => options.log?.error('Worker server error', { error }));
  listening = address.port;
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
