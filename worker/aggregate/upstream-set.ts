/**
 * UpstreamSet: the `UpstreamClient`s of one aggregate session, one per server the agent may use,
 * each connected straight to the channel (an MCP SDK `Transport`) the router opened for it.
 *
 * Every server is either connected or failed with a stable reason; none is ever silently
 * missing. All are connected in parallel at initialize. A server that fails later (its channel
 * closes) flips to failed and the aggregate is told, so it can announce a list change. A failed
 * server whose reason may be temporary (`host-offline`, `server-exited`, `launch-failed`,
 * `request-timeout`) is tried again lazily, when the agent next lists something or calls
 * something of that server, at most once per `retryAfterMs`, except that a call asks an offline
 * host's server again at once (`reconnect`). Failures after
 * the open (initialize failed, a channel ended with a reason) go to `onUpstreamFailed`, where the
 * status page records them: a channel's failure reaches the client as a `WireError` on
 * `onerror` just before `onclose`.
 *
 * Server→client traffic of each upstream (sampling, elicitation, roots, logging, list changes) is
 * handed to the aggregate through `hooks`, because only it knows the agent.
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
  /** A server became unavailable or available again. */
  onAvailabilityChanged(): void;
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

const RETRYABLE: ReadonlySet<FailureReason> = new Set(['host-offline', 'server-exited', 'launch-failed', 'request-timeout']);

type State =
  | { kind: 'connecting'; attempt: Promise<void> }
  | { kind: 'connected'; client: UpstreamClient }
  | { kind: 'failed'; failure: UpstreamFailure; at: number };

export class UpstreamSet {
  readonly #options: UpstreamSetOptions;
  readonly #states = new Map<string, State>();
  #closed = false;

  constructor(options: UpstreamSetOptions) {
    this.#options = options;
  }

  get servers(): readonly string[] {
    return this.#options.servers;
  }

  /** Connects every server in parallel; resolves when each is connected or failed. */
  async connectAll(): Promise<void> {
    await Promise.all(this.#options.servers.map((server) => this.#connect(server)));
  }

  /** Tries failed servers again whose reason may have gone away; waits for those attempts. */
  async retryFailed(): Promise<void> {
    await Promise.all([...this.#states.keys()].map((server) => this.#retry(server, false)));
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

  #retry(server: string, forCall: boolean): Promise<void> {
    const state = this.#states.get(server);
    if (state?.kind === 'connecting') return state.attempt;
    if (state?.kind !== 'failed' || !this.#due(state, forCall)) return Promise.resolve();
    return this.#connect(server).then(() => {
      if (this.#states.get(server)?.kind === 'connected') this.#options.hooks.onAvailabilityChanged();
    });
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

  /** Connected servers in config order. */
  connected(): Array<[string, UpstreamClient]> {
    return this.#options.servers.flatMap((s) => {
      const client = this.client(s);
      return client === undefined ? [] : [[s, client] as [string, UpstreamClient]];
    });
  }

  /** Failed servers in config order. */
  failed(): Array<[string, UpstreamFailure]> {
    return this.#options.servers.flatMap((s) => {
      const failure = this.failure(s);
      return failure === undefined ? [] : [[s, failure] as [string, UpstreamFailure]];
    });
  }

  get channelCount(): number {
    return this.connected().length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const clients = this.connected().map(([, client]) => client);
    await Promise.allSettled(clients.map((client) => client.close()));
  }

  #connect(server: string): Promise<void> {
    const attempt = this.#attempt(server);
    this.#states.set(server, { kind: 'connecting', attempt });
    return attempt;
  }

  async #attempt(server: string): Promise<void> {
    const { log, hooks } = this.#options;
    let channel: Transport;
    try {
      channel = await this.#options.open(server);
    } catch (error) {
      this.#fail(server, error instanceof WireError ? error : new WireError('launch-failed', `Could not open server "${server}"`));
      return;
    }
    if (this.#closed) return void channel.close();

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
        const state = this.#states.get(server);
        if (this.#closed || !connected || state?.kind !== 'connected' || state.client !== client) return;
        if (lastWire !== undefined) this.#options.onUpstreamFailed?.(server, lastWire);
        this.#fail(server, lastWire ?? new WireError('server-exited', 'the server closed the connection'));
        hooks.onAvailabilityChanged();
      },
    });
    try {
      await client.connect(channel, this.#options.timeoutMs);
    } catch (error) {
      await channel.close().catch(() => {});
      const failure = lastWire ?? connectFailure(server, error);
      this.#options.onUpstreamFailed?.(server, failure);
      this.#fail(server, failure);
      return;
    }
    if (this.#closed) return void client.close();
    connected = true;
    this.#states.set(server, { kind: 'connected', client });
    log.debug('Upstream connected', { server });
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
