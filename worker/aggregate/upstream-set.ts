/**
 * UpstreamSet: the `UpstreamClient`s of one aggregate session, one per server the agent may use,
 * each connected straight to the channel (an MCP SDK `Transport`) the router opened for it.
 *
 * Every server is connected, failed with a stable reason, or still opening; none is ever silently
 * missing. All are opened in parallel at initialize, and the aggregate waits for them only so long
 * (`connectAll(waitMs)`): one that never answers must not hold the agent's initialize, and so its
 * other servers, for the open deadline. An open still going when a waiter stopped waiting goes on,
 * and its end, either way, is told to `onAvailabilityChanged` (the agent was shown the server as
 * starting). A server that fails later (its channel
 * closes) flips to failed and the aggregate is told, so it can announce a list change. A failed
 * server whose reason may be temporary (`host-offline`, `server-exited`, `launch-failed`,
 * `request-timeout`) is tried again lazily, when the agent next lists something or calls
 * something of that server, at most once per `retryAfterMs`, except that a call asks an offline
 * host's server again at once (`reconnect`); a list waits for such opens as initialize does, a
 * call for the whole open of the server it names, and a request by resource URI that no connected
 * server is known to serve for the opens of every server that may come up (`reconnectAll`),
 * at most the open deadline. Failures after
 * the open (initialize failed, a channel ended with a reason) go to `onUpstreamFailed`, where the
 * status page records them: a channel's failure reaches the client as a `WireError` on
 * `onerror` just before `onclose`.
 *
 * Server→client traffic of each upstream (sampling, elicitation, roots, logging, list changes) is
 * handed to the aggregate through `hooks`, because only it knows the agent; so is each server
 * connecting (`onConnected`), however late in the session, so the aggregate can tell it what the
 * agent asked of the servers before it was there (its log level).
 *
 * A worker config change is followed, not an end (`reconfigure`): a server taken from the agent
 * (no longer allowed, or removed) is closed and forgotten at once, its departure announced; a
 * server given to the agent is opened as at initialize, and one bound elsewhere is closed and
 * opened again at its new binding, each announced when its open ends. An open in flight for a
 * server taken away or bound elsewhere is dropped when it ends, its channel closed.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ClientCapabilities, Implementation, ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { WireError, type FailureReason } from '../../shared/errors.ts';
import type { WorkerLogger } from '../log.ts';
import type { UpstreamFailure } from './rpc-errors.ts';
import type { IncomingNotification, IncomingRequest, Result } from './rpc/json-rpc-peer.ts';
import { RequestTimeoutError } from './rpc/peer-errors.ts';
import { UpstreamClient } from './upstream-client.ts';
import { fetchErrorText } from '../../shared/fetch-error-text.ts';

export interface UpstreamHooks {
  /** A server→client request from upstream `server`; resolves to the agent's result. */
  onRequest(server: string, request: IncomingRequest, signal: AbortSignal): Promise<Result>;
  /** A notification from upstream `server` (all but cancellations and progress, which the client handles). */
  onNotification(server: string, notification: IncomingNotification): void;
  /**
   * `server` became unavailable or available again, or its open ended after the agent was shown
   * it as starting; `capabilities` are what it offers (now, or before it went away), `{}` when it
   * never came up.
   */
  onAvailabilityChanged(server: string, capabilities: ServerCapabilities): void;
  /**
   * `server` just connected (at initialize, tried again, or given by a config change), before
   * anyone else can send it a request: the aggregate brings it up to the session (the agent's log level).
   */
  onConnected(server: string, client: UpstreamClient): void;
}

export interface UpstreamSetOptions {
  /** The agent's servers, in config order. */
  servers: readonly string[];
  /** Opens the channel to one server (the router call, bounded in time). */
  open: (server: string) => Promise<Transport>;
  /** Presented to every upstream: the agent's own client info. */
  clientInfo: Implementation;
  /** Presented to every upstream: mirrors what the agent declared (sampling, elicitation, roots). */
  capabilities: ClientCapabilities;
  hooks: UpstreamHooks;
  log: WorkerLogger;
  /** Longest wait for an upstream's initialize answer. */
  timeoutMs: number;
  /** Least time between two lazy reconnect attempts of one server. Default 2 s. */
  retryAfterMs?: number;
  now?: () => number;
  /**
   * Told when a server's channel opened but its MCP initialize failed, and when a connected
   * server's channel ends because something failed (for the status page's recent errors; failed
   * opens are recorded by the channel opener).
   */
  onUpstreamFailed?: (server: string, error: WireError) => void;
}

export const RETRYABLE: ReadonlySet<FailureReason> = new Set(['host-offline', 'server-exited', 'launch-failed', 'request-timeout']);

/**
 * An open in flight; `overdue` once someone stopped waiting for it, so its end is announced, as
 * it always is for a server a config change gave the agent or bound elsewhere (`announce`);
 * `channel`: the open's channel once it has one, while the server answers initialize.
 */
type Connecting = { kind: 'connecting'; attempt: Promise<void>; overdue: boolean; announce: boolean; channel?: Transport };

/** How `reconfigure` changes a session's servers: the agent's servers now, how each is opened now, and which of them are bound elsewhere. */
export interface UpstreamChange {
  servers: readonly string[];
  open: (server: string) => Promise<Transport>;
  /** Servers kept whose binding changed: closed and opened again with `open`. */
  rebound: readonly string[];
}

type State =
  | Connecting
  | { kind: 'connected'; client: UpstreamClient }
  | { kind: 'failed'; failure: UpstreamFailure; at: number };

export class UpstreamSet {
  readonly #options: UpstreamSetOptions;
  readonly #states = new Map<string, State>();
  /** The agent's servers and how each is opened, as the config in force says (`reconfigure`). */
  #servers: readonly string[];
  #open: (server: string) => Promise<Transport>;
  /** Why a server's channel was closed by a config change: what a request still in flight on it is answered. */
  readonly #departed = new Map<string, UpstreamFailure>();
  #closed = false;

  constructor(options: UpstreamSetOptions) {
    this.#options = options;
    this.#servers = options.servers;
    this.#open = options.open;
  }

  get servers(): readonly string[] {
    return this.#servers;
  }

  /**
   * Follows a worker config change (see the module doc): servers no longer in `change.servers`
   * are closed and forgotten, their departure announced at once; servers new in it, and those in
   * `change.rebound`, are opened with `change.open` (a rebound one's old channel closed first),
   * each announced when its open ends. Resolves once the closed channels are closed; opens go on.
   */
  async reconfigure(change: UpstreamChange): Promise<{ removed: string[]; added: string[]; rebound: string[] }> {
    const before = this.#servers;
    const removed = before.filter((s) => !change.servers.includes(s));
    const added = change.servers.filter((s) => !before.includes(s));
    const rebound = change.rebound.filter((s) => before.includes(s) && change.servers.includes(s));
    if (this.#closed) return { removed: [], added: [], rebound: [] };
    this.#servers = change.servers;
    this.#open = change.open;
    const closing: Array<Promise<void>> = [];
    const takeDown = (server: string, failure: UpstreamFailure): ServerCapabilities => {
      const state = this.#states.get(server);
      // Forgotten before it closes: its client's `onclose` then sees it is no longer the server's, and fails nothing.
      this.#states.delete(server);
      this.#departed.set(server, failure);
      if (state?.kind !== 'connected') return {};
      closing.push(state.client.close().catch(() => {}));
      return state.client.capabilities;
    };
    for (const server of removed) {
      const capabilities = takeDown(server, { reason: 'server-not-found', message: "it was taken from this session by a worker config change: it is no longer one of this agent's servers" });
      this.#options.hooks.onAvailabilityChanged(server, capabilities);
    }
    for (const server of rebound) takeDown(server, { reason: 'server-exited', message: 'it was bound elsewhere by a worker config change, and this session opens it there: call it again' });
    for (const server of added) this.#departed.delete(server);
    for (const server of [...added, ...rebound]) void this.#connect(server, false, true);
    await Promise.all(closing);
    return { removed, added, rebound };
  }

  /** Why `server`'s channel was closed by a config change, if it was: for a request that was in flight on it. */
  departure(server: string): UpstreamFailure | undefined {
    return this.#departed.get(server);
  }

  /**
   * Opens every server in parallel; resolves when each is connected or failed, or after `waitMs`
   * with the rest still opening (`isStarting`), each announced when its open ends.
   */
  async connectAll(waitMs: number): Promise<void> {
    await this.#within(this.#servers.map((server) => this.#connect(server, false, false)), waitMs);
  }

  /**
   * Tries failed servers again whose reason may have gone away; waits for those attempts, and for
   * opens in flight that nobody has stopped waiting for yet, at most `waitMs`, as `connectAll` does.
   */
  async retryFailed(waitMs: number): Promise<void> {
    await this.#within([...this.#states.keys()].map((server) => this.#retry(server, false)), waitMs);
  }

  /** Waits for `attempts`, at most `waitMs`; opens still going then are marked to be announced when they end. */
  async #within(attempts: Array<Promise<void>>, waitMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    try {
      await Promise.race([Promise.all(attempts), late]);
    } finally {
      clearTimeout(timer);
    }
    for (const state of this.#states.values()) if (state.kind === 'connecting') state.overdue = true;
  }

  /**
   * Before a call that names `server`: waits for its open in flight, or tries it again if it
   * failed for a reason that may have gone away, so the call reaches a server that is back without
   * the agent listing first. Resolves when `server` is connected or failed again.
   */
  async reconnect(server: string): Promise<void> {
    await this.#retry(server, true);
    // A list may have begun another attempt meanwhile: the call goes by that one's outcome.
    let state = this.#states.get(server);
    while (state?.kind === 'connecting' && !this.#closed) {
      await state.attempt;
      state = this.#states.get(server);
    }
  }

  /**
   * Before a request that may be for any of `servers` (a resource URI none of the connected
   * servers is known to serve): `reconnect` of each at once, waited for at most `waitMs`.
   */
  async reconnectAll(servers: readonly string[], waitMs: number): Promise<void> {
    await this.#within(servers.map((server) => this.reconnect(server)), waitMs);
  }

  #retry(server: string, forCall: boolean): Promise<void> {
    const state = this.#states.get(server);
    // An open someone already stopped waiting for announces itself when it ends: a list does not
    // wait it out again (each would, for as long as a server never answers). A call naming it does.
    if (state?.kind === 'connecting') return forCall || !state.overdue ? state.attempt : Promise.resolve();
    if (state?.kind !== 'failed' || !this.#due(state, forCall)) return Promise.resolve();
    return this.#connect(server, true, false);
  }

  #due(state: Extract<State, { kind: 'failed' }>, forCall: boolean): boolean {
    if (!RETRYABLE.has(state.failure.reason)) return false;
    // The spacing spares a host relaunching a failing server on every list. An open to a host
    // that is still offline is refused by the worker's own side of the link, asking no host, so a
    // call that names its server asks again at once: it works the moment the host is back.
    if (forCall && state.failure.reason === 'host-offline') return true;
    return (this.#options.now ?? Date.now)() - state.at >= (this.#options.retryAfterMs ?? 2_000);
  }

  client(server: string): UpstreamClient | undefined {
    const state = this.#states.get(server);
    return state?.kind === 'connected' ? state.client : undefined;
  }

  capabilities(server: string): ServerCapabilities {
    return this.client(server)?.capabilities ?? {};
  }

  failure(server: string): UpstreamFailure | undefined {
    const state = this.#states.get(server);
    return state?.kind === 'failed' ? state.failure : undefined;
  }

  /** Whether `server`'s open is in flight (at initialize, or tried again). */
  isStarting(server: string): boolean {
    return this.#states.get(server)?.kind === 'connecting';
  }

  /** Servers not connected that may be soon, in config order: opening, or failed for a reason that may have gone away. */
  mayComeUp(): string[] {
    return this.#servers.filter((s) => {
      const state = this.#states.get(s);
      return state?.kind === 'connecting' || (state?.kind === 'failed' && RETRYABLE.has(state.failure.reason));
    });
  }

  /** Connected servers in config order. */
  connected(): Array<[string, UpstreamClient]> {
    return this.#servers.flatMap((s) => {
      const client = this.client(s);
      return client === undefined ? [] : [[s, client] as [string, UpstreamClient]];
    });
  }

  get channelCount(): number {
    return this.connected().length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const clients = this.connected().map(([, client]) => client);
    // And the channels of servers still answering initialize: now that a session does not wait
    // for them, one closed meanwhile would keep them (and their processes) until the open deadline.
    const opening = [...this.#states.values()].flatMap((state) => (state.kind === 'connecting' && state.channel !== undefined ? [state.channel] : []));
    await Promise.allSettled([...clients.map((client) => client.close()), ...opening.map((channel) => channel.close())]);
  }

  /**
   * Opens `server`; its end is announced when someone stopped waiting for it (`overdue`), for a
   * second try (`again`) when it connected (a call may bring a server back that no list showed),
   * and always for one a config change gave the agent or bound elsewhere (`announce`). An open
   * whose server a later config change took away or bound elsewhere ends unannounced.
   */
  #connect(server: string, again: boolean, announce: boolean): Promise<void> {
    const state: Connecting = { kind: 'connecting', attempt: Promise.resolve(), overdue: false, announce };
    this.#states.set(server, state);
    state.attempt = this.#attempt(server, state).then((current) => {
      const now = this.#states.get(server);
      if (this.#closed || !current || !(state.announce || state.overdue || (again && now?.kind === 'connected'))) return;
      this.#options.hooks.onAvailabilityChanged(server, now?.kind === 'connected' ? now.client.capabilities : {});
    });
    return state.attempt;
  }

  /** Whether `state` is still `server`'s open: a config change may have taken the server away, or opened it again elsewhere. */
  #current(server: string, state: Connecting): boolean {
    return !this.#closed && this.#states.get(server) === state;
  }

  /** Opens `server` for `state`; resolves false when `state` stopped being its open meanwhile (what it opened is closed). */
  async #attempt(server: string, state: Connecting): Promise<boolean> {
    const { log, hooks } = this.#options;
    let channel: Transport;
    try {
      channel = await this.#open(server);
    } catch (error) {
      if (!this.#current(server, state)) return false;
      this.#fail(server, error instanceof WireError ? error : new WireError('launch-failed', `Could not open server "${server}"`));
      return true;
    }
    if (!this.#current(server, state)) {
      void channel.close().catch(() => {});
      return false;
    }
    state.channel = channel;

    let lastWire: WireError | undefined;
    let connected = false;
    const client: UpstreamClient = new UpstreamClient({
      clientInfo: this.#options.clientInfo,
      capabilities: this.#options.capabilities,
      onRequest: (request, signal) => hooks.onRequest(server, request, signal),
      onNotification: (notification) => hooks.onNotification(server, notification),
      onerror: (error) => {
        if (error instanceof WireError) lastWire = error;
        else log.debug('Upstream transport error', { server, error: error.message });
      },
      onclose: () => {
        const now = this.#states.get(server);
        if (this.#closed || !connected || now?.kind !== 'connected' || now.client !== client) return;
        if (lastWire !== undefined) this.#options.onUpstreamFailed?.(server, lastWire);
        this.#fail(server, lastWire ?? new WireError('server-exited', 'the server closed the connection'));
        hooks.onAvailabilityChanged(server, client.capabilities);
      },
    });
    try {
      await client.connect(channel, this.#options.timeoutMs);
    } catch (error) {
      await channel.close().catch(() => {});
      if (!this.#current(server, state)) return false;
      const failure = lastWire ?? connectFailure(server, error);
      this.#options.onUpstreamFailed?.(server, failure);
      this.#fail(server, failure);
      return true;
    }
    if (!this.#current(server, state)) {
      void client.close().catch(() => {});
      return false;
    }
    connected = true;
    this.#states.set(server, { kind: 'connected', client });
    log.debug('Upstream connected', { server });
    hooks.onConnected(server, client);
    return true;
  }

  #fail(server: string, error: WireError): void {
    this.#options.log.info('Upstream unavailable', { server, reason: error.reason });
    this.#states.set(server, { kind: 'failed', failure: { reason: error.reason, message: error.message }, at: (this.#options.now ?? Date.now)() });
  }
}

function connectFailure(server: string, error: unknown): WireError {
  if (error instanceof RequestTimeoutError) {
    return new WireError('request-timeout', `Server "${server}" did not answer initialize in time`);
  }
  return new WireError('launch-failed', `Server "${server}" did not initialize: ${fetchErrorText(error)}`);
}
