/**
 * `GET /link`: where sidecars dial in. Authenticates the host from its headers (see
 * `host-auth.ts`), then upgrades to a WebSocket with the runtime's hono helper and registers the
 * link. The helper is injected (`hono/deno`, `@hono/node-server`, later a Durable Object), so this
 * file stays web-standard.
 *
 * Under Node, `@hono/node-server` v2 upgrades only when the server is created with
 * `serve({ fetch, websocket: { server: new WebSocketServer({ noServer: true }) } })` (checked in
 * its d.ts and source: it throws without `noServer`). Refusals are plain HTTP answers before the
 * upgrade, so a sidecar sees the 401 status itself.
 *
 * `attachInMemoryHost` is the same attachment without a network, for the all-in-one mode.
 *
 * @module
 */
import { Hono } from 'hono';
import type { UpgradeWebSocket, WSContext } from 'hono/ws';
import { WireError } from '../../shared/errors.ts';
import { CallbackFrameSocket, createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler, type LinkEndpointOptions, type LinkLogger } from '../../shared/link/link-endpoint.ts';
import { createHostAuthenticator, type HostCredential } from './host-auth.ts';
import type { HostLinkRegistry } from './host-link-registry.ts';

/** Endpoint tunables the route passes through (timings and frame limit). */
export type LinkTunables = Omit<LinkEndpointOptions, 'role' | 'onOpen' | 'peer' | 'log'>;

export interface LinkRouteOptions {
  /** The runtime's hono WebSocket helper; its options type does not matter here. */
  upgradeWebSocket: UpgradeWebSocket<unknown, never>;
  registry: HostLinkRegistry;
  hosts: readonly HostCredential[];
  log?: LinkLogger;
  endpoint?: LinkTunables;
}

/** A sub-app with `GET /link`; mount it with `app.route('/', createLinkRoute(…))`. */
export function createLinkRoute(options: LinkRouteOptions): Hono {
  const authenticate = createHostAuthenticator(options.hosts);
  const log = options.log;
  const app = new Hono();
  app.get('/link', async function linkRoute(c) {
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') {
      const error = new WireError('invalid-request', 'The link endpoint takes a WebSocket upgrade: only a sidecar dials it');
      return c.json(error.toHttpBody(), 426);
    }
    const auth = await authenticate(c.req.raw.headers);
    if (!auth.ok) {
      log?.warn('Refused a host link', { 'entity-id': auth.entityId, problem: auth.error.message });
      return c.json(auth.error.toHttpBody(), 401);
    }
    const entityId = auth.entityId;
    let socket: CallbackFrameSocket | undefined;
    let endpoint: LinkEndpoint | undefined;
    return options.upgradeWebSocket(c, {
      onOpen(_event, ws) {
        socket = wsFrameSocket(ws);
        endpoint = new LinkEndpoint(socket, { ...options.endpoint, role: 'worker', peer: entityId, ...(log ? { log } : {}) });
        options.registry.attach(entityId, endpoint);
      },
      onMessage(event, ws) {
        if (typeof event.data === 'string') socket?.receive(event.data);
        // A binary frame ends the link like any other protocol violation: with a link-close frame
        // saying why, so the peer learns the reason even if the WebSocket close frame is lost.
        else if (endpoint !== undefined) endpoint.close({ reason: 'invalid-request', message: 'Link frames are text: a binary frame was refused' });
        else ws.close(1003, 'Link frames are text');
      },
      onClose(event) {
        socket?.ended({ code: event.code, reason: event.reason });
      },
    });
  });
  return app;
}

function wsFrameSocket(ws: WSContext<unknown>): CallbackFrameSocket {
  return new CallbackFrameSocket({
    send: (text) => ws.send(text),
    close: (code, reason) => ws.close(code, reason),
    abort: () => {
      // `ws` (Node) can drop a dead socket at once; elsewhere a close is all there is.
      const raw = ws.raw as { terminate?: () => void } | undefined;
      if (typeof raw?.terminate === 'function') raw.terminate();
      else ws.close(1001, 'Link is dead');
    },
  });
}

export interface InMemoryHost {
  worker: LinkEndpoint;
  sidecar: LinkEndpoint;
  close(): void;
}

/**
 * All-in-one mode: links a sidecar living in the same process, with no network. `onOpen` is the
 * sidecar's channel handler (its McpTransportListener); the worker never imports the sidecar.
 */
export function attachInMemoryHost(
  registry: HostLinkRegistry,
  entityId: string,
  onOpen: ChannelOpenHandler,
  options: { log?: LinkLogger; endpoint?: LinkTunables } = {},
): InMemoryHost {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  const logged = options.log ? { log: options.log } : {};
  const worker = new LinkEndpoint(workerSocket, { ...options.endpoint, ...logged, role: 'worker', peer: entityId });
  const sidecar = new LinkEndpoint(sidecarSocket, { ...options.endpoint, ...logged, role: 'sidecar', peer: 'worker', onOpen });
  registry.attach(entityId, worker);
  return { worker, sidecar, close: () => worker.close({ message: 'In-memory host detached' }) };
}
