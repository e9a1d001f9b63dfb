/**
 * `HostLink`: the Durable Object holding one host's link, named `idFromName(entity id)`, so every
 * isolate finds the same one (DESIGN §8).
 *
 * - `GET /link` runs the link route of every runtime (`worker/link/link-route.ts`): the entity id
 *   and Host checks, the Ed25519 challenge, the probe; the socket is accepted with the
 *   Hibernation API (`hibernating-upgrade.ts`). The registry inside is the in-memory one with this
 *   single host, so a newer link from the host replaces the older one and a link that goes fails
 *   every channel with `host-offline`, exactly as on Deno and Node.
 * - `GET /channel` is a relay from an agent's isolate (`channel-relay.ts`).
 * - `GET /status` is this host's `/healthz` line.
 * - `/servers/:name/mcp` takes the modern (stateless) requests the edge sends for this host's
 *   servers, served by the app of every runtime on this link, with no relay in between.
 *
 * Hibernation: the worker end of the link runs with no timer (`liveness: false`) and the
 * sidecar's keepalive, always the same text, is answered by the runtime's auto-response, so an
 * idle link costs no wake-up. What must survive hibernation is in the socket's attachment: the
 * verified entity id, when it linked, and how often the object woke. On waking, the object
 * rebuilds the endpoint over the same socket without a new handshake: hibernation happens only
 * while no relay is open, so no channel is lost. Death of a silent peer is checked when a channel
 * or the status is asked for, and by a timer while channels are open: no keepalive answered for
 * `DEAD_AFTER_MS` closes the link as dead.
 *
 * An eviction or a deploy closes the socket; the sidecar dials again and lands here, in a new
 * instance. The only thing stored is the host's used upgrade proofs (`stored-spent-proofs.ts`),
 * which must outlive hibernation for a copied one to stay refused; the rest is the live socket.
 *
 * @module
 */
import { Hono } from '../../trie-router-hono.ts';
import type { WSContext } from 'hono/ws';
import { LinkEndpoint } from '../../../shared/link/link-endpoint.ts';
import { KEEPALIVE_FRAME, KEEPALIVE_REPLY_FRAME } from '../../../shared/link/link-liveness.ts';
import { ENTITY_ID_HEADER } from '../../../shared/link/link-types.ts';
import { linkFeaturesOf } from '../../../shared/link/link-features.ts';
import { hostExpectations } from '../../link/host-expectations.ts';
import { hostRoster } from '../../link/host-roster.ts';
import { InMemoryHostLinkRegistry } from '../../link/host-link-registry.ts';
import { createLinkRoute } from '../../link/link-route.ts';
import { UPGRADE_PROOF_WINDOW_S } from '../../../shared/link/link-upgrade-proof.ts';
import { createApp, DEFAULT_OPEN_TIMEOUT_SECONDS } from '../../app.ts';
import { ExecutorTargetRouter } from '../../routing/executor-target-router.ts';
import { NoSessionTable } from './no-session-table.ts';
import { OpenOutcomeEntry, OpenOutcomes } from '../../status/open-outcomes.ts';
import { RecentErrorEntry, RecentErrors } from '../../status/recent-errors.ts';
import * as z from '../../../shared/zod.ts';
import type { WorkerConfig } from '../../config/worker-config.ts';
import type { WorkerLogger } from '../../log.ts';
import { loadFromEnv, workersOAuth } from './cloudflare-env.ts';
import type { WorkersAudit } from './workers-audit.ts';
import { RELAY_PATH, relayLog, serveRelay } from './channel-relay.ts';
import { OPENER_RECORDS_HEADER, STATUS_PATH } from './durable-object-registry.ts';
import { HibernatingSockets } from './hibernating-upgrade.ts';
import { StoredSpentProofs } from './stored-spent-proofs.ts';
import { drainUnreadBody } from './unread-body.ts';
import { frameSocketOver } from './websocket-frame-socket.ts';
import { autoResponse, type DurableObjectState, type SwitchyardEnv, type WorkersWebSocket } from './workers-runtime.ts';

const LINK_TAG = 'link';
/** A link is dead after this long without a frame or an answered keepalive (the sidecar sends one every 10 s). */
export const DEAD_AFTER_MS = 25_000;

const openTimeoutMsOf = (config: WorkerConfig) => (config['request-timeout-seconds'] ?? DEFAULT_OPEN_TIMEOUT_SECONDS) * 1000;

/** How often the link is checked while channels are open (`#watchLink`). */
const LINK_WATCH_MS = 5_000;

/**
 * When the host was last heard from, for a link taken back after hibernation: its last keepalive
 * the runtime answered (the sidecar sends one every 10 s, traffic or not), or when it linked if
 * none was answered yet. Any other frame would have woken the object, and been heard then.
 */
export function lastHeardBeforeWake(autoResponseAt: Date | null, since: string): number {
  const linkedAt = Date.parse(since);
  return Math.max(autoResponseAt?.getTime() ?? 0, Number.isFinite(linkedAt) ? linkedAt : 0);
}

/** What a link socket carries through hibernation. */
export interface LinkAttachment {
  'entity-id': string;
  /** When the handshake verified the host (ISO). */
  since: string;
  /** Times this object was rebuilt around the socket after hibernating. */
  wakes: number;
  /**
   * The link features the host announced when it dialled (`link-features.ts`): the rebuilt
   * endpoint must use the same ones, or every modern request after a wake costs two frames again.
   * Absent from an attachment written before features were kept: none, as that link had then.
   */
  features?: string[];
  /**
   * The link's shortest round trip when it was verified (ms, its handshake's): the rebuilt
   * endpoint's window starts from it (`link-window.ts`), as this end sends no keepalives to learn it.
   */
  rttMs?: number;
}

interface Live {
  log: WorkerLogger;
  registry: InMemoryHostLinkRegistry;
  /** How each agent's latest open of each of this host's servers went, relayed or modern, for the edge's `/healthz` (`#status`). */
  outcomes: OpenOutcomes;
  /** Its failures, relayed or modern, for the same status. */
  recentErrors: RecentErrors;
  sockets: HibernatingSockets;
  /** `/link`, built for the host this object is named after (see `#linkApp`). */
  linkApp: Hono | undefined;
  /** The app of every runtime, for the modern requests the edge sends here, on this link. */
  agentApp: { fetch(request: Request): Response | Promise<Response> } | undefined;
  config: WorkerConfig;
  audit: () => WorkersAudit;
}

/** Where a host's object keeps its failures across instances, and how many of its servers' failing states it keeps. */
const STATUS_MEMORY_KEY = 'status-memory';
const REMEMBERED_FAILURES = 200;
const RememberedStatus = z.strictObject({
  failures: z.array(OpenOutcomeEntry).check(z.maxLength(REMEMBERED_FAILURES)),
  errors: z.array(RecentErrorEntry).check(z.maxLength(1_000)),
});

export class HostLink {
  readonly #state: DurableObjectState;
  readonly #env: SwitchyardEnv;
  #live: Live | undefined;
  #entityId: string | undefined;
  /** The failures an earlier instance kept, read back once (`#recall`). */
  #recalled: Promise<void> | undefined;
  #remembering = false;
  /** The link check's timer while channels are open (`#watchLink`), and when a channel was last asked for. */
  #watch: ReturnType<typeof setInterval> | undefined;
  #askedAt = 0;
  /** The current link socket and when this instance last heard from it. */
  #link: { ws: WorkersWebSocket; heardAt: number; endpoint: LinkEndpoint } | undefined;

  constructor(state: DurableObjectState, env: SwitchyardEnv) {
    this.#state = state;
    this.#env = env;
    state.setWebSocketAutoResponse(autoResponse(JSON.stringify(KEEPALIVE_FRAME), JSON.stringify(KEEPALIVE_REPLY_FRAME)));
    // Woken from hibernation (or restarted with sockets still open): take the link back.
    const sockets = state.getWebSockets(LINK_TAG);
    if (sockets.length > 0) this.#restore(sockets);
  }

  async fetch(request: Request): Promise<Response> {
    const live = this.#liveOrRefusal();
    if (live instanceof Response) return live;
    // What an instance before this one kept, before anything is kept or reported here.
    await (this.#recalled ??= this.#recall(live));
    const path = new URL(request.url).pathname;
    const entityId = request.headers.get(ENTITY_ID_HEADER);
    // Named by the edge on its own paths only: a modern request is the agent's, headers and all.
    if (entityId !== null && (path === RELAY_PATH || path === STATUS_PATH)) this.#entityId ??= entityId;
    if (path === RELAY_PATH) {
      const host = this.#entityId ?? '';
      // Kept here for a session's object, which the edge's status never reads; the edge keeps its own opens.
      const kept = request.headers.get(OPENER_RECORDS_HEADER) === null ? { outcomes: live.outcomes, recentErrors: live.recentErrors } : {};
      const relay = serveRelay(request, { registry: live.registry, entityId: host, linked: () => this.#linkAlive(live), log: relayLog(live.log), ...kept });
      this.#watchLink(live);
      return relay;
    }
    if (path === STATUS_PATH) {
      // A link gone silent is closed first, so /healthz says so rather than "linked" after each wake.
      this.#linkAlive(live);
      return Response.json(this.#status(live));
    }
    if (path.startsWith('/servers/')) {
      // A modern request the edge routed here: a dead link is closed first, so it is refused
      // `host-offline` at once rather than left waiting on a silent socket.
      this.#linkAlive(live);
      this.#watchLink(live);
      const response = await this.#agentApp(live).fetch(request);
      // A refusal that read no body keeps the agent's connection (`unread-body.ts`).
      await drainUnreadBody(request);
      return response;
    }
    return this.#linkApp(live, entityId).fetch(request);
  }

  webSocketMessage(ws: WorkersWebSocket, message: string | ArrayBuffer): void {
    const live = this.#liveOrRefusal();
    if (live instanceof Response) return ws.close(1011, 'Worker config invalid');
    if (this.#link?.ws === ws) this.#link.heardAt = Date.now();
    if (live.sockets.message(ws, message)) return;
    this.#restore([ws]);
    if (this.#link?.ws === ws) this.#link.heardAt = Date.now();
    live.sockets.message(ws, message);
  }

  webSocketClose(ws: WorkersWebSocket, code: number, reason: string): void {
    this.#live?.sockets.closed(ws, code, reason);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }

  webSocketError(ws: WorkersWebSocket): void {
    this.#live?.sockets.failed(ws);
  }

  /**
   * The failures kept here (`outcomes`' and `recentErrors`') outlive this instance: the runtime
   * evicts an idle object within seconds, and the edge would then read none, and show a failing
   * server available. Saved, bounded, after each change; read back by the next instance.
   */
  async #recall(live: Live): Promise<void> {
    const saved = RememberedStatus.safeParse(await this.#state.storage.get(STATUS_MEMORY_KEY).catch(() => undefined));
    if (!saved.success) return;
    live.outcomes.merge(saved.data.failures);
    live.recentErrors.fromElsewhere('an earlier instance', saved.data.errors);
  }

  #remember(): void {
    if (this.#remembering) return;
    this.#remembering = true;
    // Once per turn, however many were kept in it.
    queueMicrotask(() => {
      this.#remembering = false;
      const live = this.#live;
      if (live === undefined) return;
      const failures = live.outcomes.entries().filter((entry) => entry.failure !== null).slice(-REMEMBERED_FAILURES);
      void this.#state.storage.put(STATUS_MEMORY_KEY, { failures, errors: live.recentErrors.list() }).catch(() => {});
    });
  }

  #liveOrRefusal(): Live | Response {
    if (this.#live !== undefined) return this.#live;
    const loaded = loadFromEnv(this.#env, 'host-link');
    if (!loaded.ok) return loaded.response();
    const { config, log, audit } = loaded;
    // A deployment's config is fixed, and a new one restarts this object and drops its link: a host
    // is told its roster when it links, and never again.
    const registry = new InMemoryHostLinkRegistry({ log, onEnded: (link) => this.#live?.audit().audit.linkEnded(link), roster: (entityId) => hostRoster(config, { entityId }) });
    const sockets = new HibernatingSockets(this.#state, [LINK_TAG]);
    // One audit for the link route and the agents' app: each made its own, with its own exporter.
    let made: WorkersAudit | undefined;
    const remember = () => this.#remember();
    this.#live = { log, registry, outcomes: new OpenOutcomes({ onFailures: remember }), recentErrors: new RecentErrors({ onRecorded: remember }), sockets, linkApp: undefined, agentApp: undefined, config, audit: () => (made ??= audit()) };
    return this.#live;
  }

  #agentApp(live: Live): { fetch(request: Request): Response | Promise<Response> } {
    live.agentApp ??= createApp({ config: live.config, router: new ExecutorTargetRouter({ registry: live.registry }), sessions: new NoSessionTable(), log: live.log, audit: live.audit().audit, openOutcomes: live.outcomes, recentErrors: live.recentErrors, ...workersOAuth(this.#env, live.config) });
    return live.agentApp;
  }

  /**
   * The link route of every runtime, knowing only this object's host: the edge routes a link here
   * by the entity id it announces, so one key is all this object ever checks (the whole list would
   * cost every object of a large fleet its size in time and memory).
   */
  #linkApp(live: Live, announced: string | null): Hono {
    if (live.linkApp !== undefined) return live.linkApp;
    const { config, log, registry, sockets } = live;
    const app = new Hono();
    app.route('/', createLinkRoute({
      upgradeWebSocket: sockets.upgradeWebSocket,
      registry,
      hosts: config.hosts.filter((h) => h['entity-id'] === announced),
      publicUrl: config['public-url'],
      allowedHosts: config['allowed-hosts'],
      // What doctor's probe compares with the host's files, as on every runtime.
      expectations: (entityId) => hostExpectations(config, entityId),
      log,
      audit: live.audit().audit,
      // A relay's open waits as long as the agent's own would on every runtime (`request-timeout-seconds`).
      endpoint: { liveness: false, openTimeoutMs: openTimeoutMsOf(config) },
      // Kept in storage: this instance's memory goes at the next hibernation.
      spent: new StoredSpentProofs(this.#state.storage, { windowSeconds: UPGRADE_PROOF_WINDOW_S }),
      onAccepted: (entityId, ws, endpoint) => this.#accepted(entityId, ws, endpoint),
    }));
    if (announced !== null) live.linkApp = app;
    return app;
  }

  #accepted(entityId: string, context: WSContext<unknown>, endpoint: LinkEndpoint): void {
    const ws = context.raw as WorkersWebSocket;
    this.#entityId = entityId;
    this.#link = { ws, heardAt: Date.now(), endpoint };
    const rttMs = endpoint.stats.roundTripMs;
    const attachment: LinkAttachment = { 'entity-id': entityId, since: new Date().toISOString(), wakes: 0, features: [...endpoint.peerFeatures], ...(rttMs !== null ? { rttMs } : {}) };
    ws.serializeAttachment(attachment);
  }

  /** Rebuilds the link over sockets that outlived this instance's memory; keeps the newest verified one. */
  #restore(sockets: WorkersWebSocket[]): void {
    const live = this.#liveOrRefusal();
    const verified = sockets
      .map((ws) => ({ ws, attachment: linkAttachmentOf(ws.deserializeAttachment()) }))
      .filter((s) => s.attachment !== null && s.ws !== this.#link?.ws)
      .sort((x, y) => y.attachment!.since.localeCompare(x.attachment!.since));
    for (const { ws } of verified.slice(1)) ws.close(1000, 'Replaced by a newer link from the same host');
    for (const ws of sockets) if (!verified.some((s) => s.ws === ws) && ws !== this.#link?.ws) ws.close(1008, 'Link handshake did not complete');
    const newest = verified[0];
    if (newest === undefined || live instanceof Response) return;
    const attachment = { ...newest.attachment!, wakes: newest.attachment!.wakes + 1 };
    newest.ws.serializeAttachment(attachment);
    const entityId = attachment['entity-id'];
    const socket = frameSocketOver(newest.ws);
    const peerFeatures = linkFeaturesOf(attachment.features?.join(','));
    const endpoint = new LinkEndpoint(socket, {
      role: 'worker',
      peer: entityId,
      liveness: false,
      openTimeoutMs: openTimeoutMsOf(live.config),
      log: live.log,
      peerFeatures,
      paced: peerFeatures.has('paced'),
      ...(attachment.rttMs !== undefined ? { handshakeRttMs: attachment.rttMs } : {}),
    });
    live.sockets.adopt(newest.ws, {
      onMessage: (event) => {
        if (typeof event.data === 'string') socket.receive(event.data);
        else endpoint.close({ reason: 'invalid-request', message: 'Link frames are text: a binary frame was refused' });
      },
      onClose: (event) => socket.ended({ code: event.code, reason: event.reason }),
    });
    live.registry.attach(entityId, endpoint, { linkedAt: new Date(attachment.since), resumed: true });
    this.#entityId = entityId;
    // Not the wake's time: a host gone silent while the object slept must still be found dead.
    this.#link = { ws: newest.ws, heardAt: lastHeardBeforeWake(this.#state.getWebSocketAutoResponseTimestamp(newest.ws), attachment.since), endpoint };
    live.log.info('Host link restored after hibernation', { 'entity-id': entityId, wakes: attachment.wakes });
  }

  /** True when the host has a live link; a link silent past `DEAD_AFTER_MS` is closed here as dead. */
  #linkAlive(live: Live): boolean {
    const entityId = this.#entityId;
    if (entityId === undefined || this.#link === undefined) return false;
    const linked = live.registry.status().find((h) => h['entity-id'] === entityId)?.linked === true;
    if (!linked) return false;
    const answered = this.#state.getWebSocketAutoResponseTimestamp(this.#link.ws)?.getTime() ?? 0;
    const silentMs = Date.now() - Math.max(this.#link.heardAt, answered);
    if (silentMs < DEAD_AFTER_MS) return true;
    live.log.warn('Link is dead', { peer: entityId, silentMs });
    this.#link.endpoint.closeAsDead(silentMs);
    this.#live?.sockets.closed(this.#link.ws, 1006, 'Link is dead');
    return false;
  }

  /**
   * While agents' channels are open the object stays in memory anyway (relays cannot hibernate):
   * a timer then checks the link, so a host gone silent fails them with `host-offline` within
   * `DEAD_AFTER_MS` or so, as on every runtime, not only when the next channel is asked for.
   * It stops once the link is gone, or no channel is open and none was asked for lately.
   */
  #watchLink(live: Live): void {
    this.#askedAt = Date.now();
    if (this.#watch !== undefined) return;
    this.#watch = setInterval(() => {
      const channels = live.registry.status().find((h) => h['entity-id'] === this.#entityId)?.channels ?? 0;
      const busy = channels > 0 || Date.now() - this.#askedAt < LINK_WATCH_MS * 2;
      if (busy && this.#linkAlive(live)) return;
      clearInterval(this.#watch);
      this.#watch = undefined;
    }, LINK_WATCH_MS);
  }

  #status(live: Live) {
    const entityId = this.#entityId;
    const line = live.registry.status().find((h) => h['entity-id'] === entityId);
    const attachment = this.#link !== undefined ? linkAttachmentOf(this.#link.ws.deserializeAttachment()) : null;
    return {
      'entity-id': entityId ?? null,
      linked: line?.linked ?? false,
      // When the host linked, not when this instance took the link back from hibernation.
      since: line?.linked === true && attachment !== null ? attachment.since : (line?.since ?? null),
      channels: line?.channels ?? 0,
      roundTripMs: line?.roundTripMs ?? null,
      wakes: attachment?.wakes ?? 0,
      // What the live endpoint uses, so that a wake that forgot the host's features shows.
      features: line?.linked === true && this.#link !== undefined ? [...this.#link.endpoint.peerFeatures] : [],
      // Taken out by the edge's registry, which reports them as the servers' states.
      opens: live.outcomes.entries(),
      errors: live.recentErrors.list(),
    };
  }
}

/** A socket attachment read back as a link's, or null when it is not one (a socket whose handshake never completed). */
export function linkAttachmentOf(value: unknown): LinkAttachment | null {
  if (typeof value !== 'object' || value === null) return null;
  const a = value as Partial<LinkAttachment>;
  if (typeof a['entity-id'] !== 'string' || typeof a.since !== 'string' || typeof a.wakes !== 'number') return null;
  // Features that do not read as a list of names are none: the link still restores, at two frames per open.
  const features = Array.isArray(a.features) ? a.features.filter((f): f is string => typeof f === 'string') : [];
  // A round trip that does not read as one is none: the window starts at its least.
  const rttMs = typeof a.rttMs === 'number' && Number.isFinite(a.rttMs) && a.rttMs >= 0 ? { rttMs: a.rttMs } : {};
  return { 'entity-id': a['entity-id'], since: a.since, wakes: a.wakes, features, ...rttMs };
}
