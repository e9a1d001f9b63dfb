/**
 * `GET /link`: where sidecars dial in. Before the upgrade, `link-upgrade-gate.ts` checks what the
 * request alone can tell: the entity id header (a configured host), that `Host` names this
 * worker (`link-origin.ts`), and the host's signed upgrade proof (its key, this worker's origin, a
 * time within 5 minutes, a nonce not used before); each refusal is an HTTP 401 saying why, so no
 * one without a configured host's key gets a socket. Then it counts the handshakes still
 * unverified (`pending-handshakes.ts`) and answers 429 `limit-reached` past the limits, still
 * before upgrading. After the upgrade the worker challenges the host
 * (`shared/link/link-handshake.ts`, which takes no frame over 8 KiB and waits 5 s at most before
 * the proof) and verifies its signature (`host-auth.ts`): the upgrade proof shows the key, the
 * challenge that this dial is live (a worker-chosen nonce needs neither clocks nor memory shared
 * between processes). Only then is a link endpoint built and registered, so a failed attempt never
 * replaces a host's live link. A refused proof gets a `link-close` with reason `unauthorized`
 * saying what to do. The upgrade helper is injected (`deno-websocket.ts`, `@hono/node-server`,
 * a Durable Object's `hibernating-upgrade.ts`), so this file stays web-standard.
 *
 * An unknown entity id is refused by name ("does not know host X"), so anyone can learn which ids
 * exist. Kept on purpose: ids are names, not secrets (every agent bound to a host is told it, and
 * it is in config files and logs), the key is what proves a host; and doctor's guidance rests on
 * telling an unknown host from a wrong key.
 *
 * Under Node, `@hono/node-server` v2 upgrades only when the server is created with
 * `serve({ fetch, websocket: { server: new WebSocketServer({ noServer: true }) } })` (checked in
 * its d.ts and source: it throws without `noServer`).
 *
 * `attachInMemoryHost` is the same attachment without a network, for the all-in-one mode.
 *
 * @module
 */
import { Hono } from '../trie-router-hono.ts';
import type { UpgradeWebSocket, WSContext } from 'hono/ws';
import { WireError } from '../../shared/errors.ts';
import { CallbackFrameSocket, createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler, type LinkEndpointOptions, type LinkLogger } from '../../shared/link/link-endpoint.ts';
import { challengeHost, HandshakeEndedByPeer, PROOF_TIMEOUT_MS, type ProofVerdict } from '../../shared/link/link-handshake.ts';
import type { HostExpectations } from '../../shared/link/host-expectations.ts';
import { LINK_PROBE_HEADER, REFUSAL_CHECK_HEADER, REFUSAL_HEADER } from '../../shared/link/link-types.ts';
import { LINK_FEATURES, LINK_FEATURES_HEADER, linkFeaturesOf } from '../../shared/link/link-features.ts';
import { unrefTimer } from '../../shared/unref-timer.ts';
import { DEFAULT_ALLOWED_HOSTS } from '../auth/host-origin.ts';
import { createHostVerifier, type HostKeyEntry, type HostVerifier } from './host-auth.ts';
import type { HostLinkRegistry } from './host-link-registry.ts';
import { wrongOriginMessage, type LinkOriginOptions } from './link-origin.ts';
import { createLinkUpgradeGate, OTHER_KEY_FIX, type LinkAudit } from './link-upgrade-gate.ts';
import { PendingHandshakes, type PendingHandshakeLimits } from './pending-handshakes.ts';
import type { SpentProofStore } from './spent-upgrade-proofs.ts';

/** Endpoint tunables the route passes through (timings and frame limit). */
export type LinkTunables = Omit<LinkEndpointOptions, 'role' | 'onOpen' | 'peer' | 'log'>;

export interface LinkRouteOptions {
  /** The runtime's hono WebSocket helper; its options type does not matter here. */
  upgradeWebSocket: UpgradeWebSocket<unknown, never>;
  registry: HostLinkRegistry;
  hosts: readonly HostKeyEntry[];
  /** The worker config's `public-url`: the origin a proof must name, whatever `Host` says. */
  publicUrl?: string | undefined;
  /** The worker config's `link-on-loopback` (`link-origin.ts`). */
  linkOnLoopback?: boolean | undefined;
  /** The worker config's `allowed-hosts` (loopback names by default). */
  allowedHosts?: readonly string[];
  /** The port this worker listens on, when the runtime knows it. */
  listenPort?: LinkOriginOptions['listenPort'];
  log?: LinkLogger;
  endpoint?: LinkTunables;
  /** Deadline for the handshake after the upgrade. Default `PROOF_TIMEOUT_MS` (5 s). */
  handshakeTimeoutMs?: number;
  /** Unverified handshakes at once, in total and per entity id. Default `PENDING_HANDSHAKE_LIMITS`. */
  pendingLimits?: PendingHandshakeLimits;
  /** What the worker expects of a host, told to a doctor's probe once its proof verified. */
  expectations?: (entityId: string) => HostExpectations;
  /**
   * Told of each verified link (never a probe) with its socket and endpoint, once it is
   * registered: a Durable Object records there what must outlive hibernation (`adapters/cloudflare/`).
   */
  onAccepted?: (entityId: string, ws: WSContext<unknown>, endpoint: LinkEndpoint) => void;
  /** This worker's clock in ms, for the upgrade proof's time; `Date.now` by default. */
  now?: () => number;
  /** Where used upgrade proofs are remembered: in memory by default; a Durable Object's storage outlives its hibernation. */
  spent?: SpentProofStore;
  /** Where link requests go on the record: each refusal and each verified host. */
  audit?: LinkAudit;
}

/** The answer to a `/link` request that is no WebSocket upgrade (a browser, a probe by hand). */
export function notAnUpgrade(): Response {
  return Response.json(new WireError('invalid-request', 'The link endpoint takes a WebSocket upgrade: only a sidecar dials it').toHttpBody(), { status: 426 });
}

/** A sub-app with `GET /link`; mount it with `app.route('/', createLinkRoute(…))`. */
export function createLinkRoute(options: LinkRouteOptions): Hono {
  const verifier = createHostVerifier(options.hosts);
  const log = options.log;
  const admitUpgrade = createLinkUpgradeGate({
    verifier,
    publicUrl: options.publicUrl,
    linkOnLoopback: options.linkOnLoopback,
    allowedHosts: options.allowedHosts ?? DEFAULT_ALLOWED_HOSTS,
    listenPort: options.listenPort,
    log,
    ...(options.now !== undefined ? { now: options.now } : {}),
    spent: options.spent,
    audit: options.audit,
  });
  const pending = new PendingHandshakes(options.pendingLimits);
  const timeoutMs = options.handshakeTimeoutMs ?? PROOF_TIMEOUT_MS;
  /** Set while refusals for a full limit go unlogged: one line when it fills, not one per refusal. */
  let fullLogged = false;
  const app = new Hono();
  app.get('/link', async function linkRoute(c) {
    // Read before anything awaits: this app's verifier holds the keys of the config that made it,
    // and a link it verifies is not attached once a reload replaced or removed its host's entry.
    const since = options.registry.changes;
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') return notAnUpgrade();
    // Nothing is upgraded before the host proved it holds its key, in this request itself.
    const gate = await admitUpgrade(c.req.raw);
    if (!gate.ok) return gate.response;
    const { entityId, origin } = gate;

    // Set once the socket opens; a handshake evicted before that is closed as it opens.
    let evicted = false;
    let openedWs: { close(code?: number, reason?: string): void } | undefined;
    const admission = pending.admit(entityId, () => {
      evicted = true;
      openedWs?.close(1013, 'A newer link handshake for this host took its place');
    });
    if (!admission.ok) {
      const message = `This worker already has ${admission.max} link handshakes pending: retry in a few seconds`;
      if (!fullLogged) log?.warn('Refused a host link', { 'entity-id': entityId, reason: 'limit-reached', problem: message });
      options.audit?.linkRefused(entityId, 'limit-reached', 'pending-handshakes');
      fullLogged = true;
      c.header(REFUSAL_HEADER, message);
      c.header(REFUSAL_CHECK_HEADER, 'pending-handshakes');
      c.header('retry-after', String(Math.ceil(timeoutMs / 1000)));
      const error = new WireError('limit-reached', message, { detail: { 'entity-id': entityId, limit: admission.limit, max: admission.max } });
      return c.json(error.toHttpBody(), 429);
    }
    const release = () => {
      admission.release();
      fullLogged = false;
    };
    // An upgrade that never opens (the dialler left before it completed) gets no events at all;
    // its slot still frees, a little after the handshake deadline it would have had.
    const unopened = setTimeout(release, timeoutMs + 1_000);
    unrefTimer(unopened);

    const probe = c.req.header(LINK_PROBE_HEADER) === '1';
    const peerFeatures = linkFeaturesOf(c.req.header(LINK_FEATURES_HEADER));
    const paced = peerFeatures.has('paced');
    let socket: CallbackFrameSocket | undefined;
    let endpoint: LinkEndpoint | undefined;
    return options.upgradeWebSocket(c, {
      onOpen(_event, ws) {
        clearTimeout(unopened);
        openedWs = ws;
        if (evicted) {
          ws.close(1013, 'A newer link handshake for this host took its place');
          return;
        }
        const opened = wsFrameSocket(ws);
        socket = opened;
        challengeHost(opened, {
          verify: (proof, nonce) => checkProof(verifier, entityId, origin, proof, nonce, options),
          paced,
          ...(probe && options.expectations !== undefined ? { expects: () => options.expectations?.(entityId) } : {}),
          // Built and registered only now: until the proof verified, nothing replaces a live link.
          // A probe (doctor) is verified the same way and then closed, never registered.
          accept: (_accepted, rttMs) => {
            release();
            if (probe) {
              options.audit?.linkAccepted(entityId, true);
              log?.info('Verified a host link probe', { 'entity-id': entityId });
              opened.close(1000, 'Link probe verified');
              return undefined;
            }
            endpoint = new LinkEndpoint(opened, { ...options.endpoint, role: 'worker', peer: entityId, peerFeatures, paced, ...(rttMs !== undefined ? { handshakeRttMs: rttMs } : {}), ...(log ? { log } : {}) });
            // Refused (a reload changed the host's entry meanwhile): closed, and no one is told of it.
            if (!options.registry.attach(entityId, endpoint, { since })) return endpoint;
            options.audit?.linkAccepted(entityId, false);
            options.onAccepted?.(entityId, ws, endpoint);
            return endpoint;
          },
          timeoutMs,
        }).catch((error: unknown) => {
          release();
          const wire = error instanceof WireError ? error : null;
          log?.warn('Refused a host link', { 'entity-id': entityId, reason: wire?.reason ?? null, problem: wire?.message ?? String(error) });
          // The worker's own refusals of the challenge's answer only: a dialler that hung up, or
          // ended the handshake with a reason of its choosing, was refused nothing.
          if (wire !== null && !(wire instanceof HandshakeEndedByPeer)) options.audit?.linkRefused(entityId, wire.reason, 'challenge');
        });
      },
      onMessage(event, ws) {
        if (typeof event.data === 'string') socket?.receive(event.data);
        // A binary frame ends the link like any other protocol violation: with a link-close frame
        // saying why, so the peer learns the reason even if the WebSocket close frame is lost.
        else if (endpoint !== undefined) endpoint.close({ reason: 'invalid-request', message: 'Link frames are text: a binary frame was refused' });
        else ws.close(1003, 'Link frames are text');
      },
      onClose(event) {
        clearTimeout(unopened);
        release();
        socket?.ended({ code: event.code, reason: event.reason });
      },
      // Why a link dropped (Deno's `Unexpected EOF`, a reset): the close that follows says only 0 or 1006.
      onError(event) {
        log?.warn('Link socket failed', { 'entity-id': entityId, error: socketErrorText(event) });
      },
    });
  });
  return app;
}

/** The verdict on a proof: this host's key, this nonce, and this worker's own origin. */
async function checkProof(verifier: HostVerifier, entityId: string, expected: { origin: string; also?: string }, proof: { origin: string; signature: string }, nonce: string, options: LinkRouteOptions): Promise<ProofVerdict> {
  const { origin, also } = expected;
  if (await verifier.verify(entityId, { origin, nonce }, proof.signature)) return { ok: true };
  if (also !== undefined && proof.origin === also && (await verifier.verify(entityId, { origin: also, nonce }, proof.signature))) return { ok: true };
  // Signed by the host, but for the worker it dialled: a challenge relayed from there, or a proxy
  // that rewrote Host. Said apart, so an operator is not sent looking for a wrong key.
  if (proof.origin !== origin && proof.origin !== also && (await verifier.verify(entityId, { origin: proof.origin, nonce }, proof.signature))) {
    return {
      ok: false,
      message: wrongOriginMessage(entityId, 'challenge', proof.origin, origin, options),
    };
  }
  return { ok: false, message: `The worker does not know this host's key (entity "${entityId}"): ${OTHER_KEY_FIX}` };
}

/** What a socket's error event says: an `ErrorEvent`'s message or error, else its type. */
function socketErrorText(event: Event): string {
  const { message, error } = event as Event & { message?: unknown; error?: unknown };
  if (typeof message === 'string' && message !== '') return message.slice(0, 200);
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 200);
  return event.type;
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
  // The sidecar end is this code's: it reads everything this code sends.
  const worker = new LinkEndpoint(workerSocket, { ...options.endpoint, ...logged, role: 'worker', peer: entityId, peerFeatures: new Set(LINK_FEATURES), paced: true });
  const sidecar = new LinkEndpoint(sidecarSocket, { ...options.endpoint, ...logged, role: 'sidecar', peer: 'worker', onOpen, paced: true });
  registry.attach(entityId, worker);
  return { worker, sidecar, close: () => worker.close({ message: 'In-memory host detached' }) };
}
