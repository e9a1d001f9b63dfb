/**
 * AggregateSession: one agent session of `/mcp`. It pairs the agent-facing transport
 * (`LegacyHttpEndpoint`) with an `AggregateServer` and its upstream clients,
 * and ends them together: on DELETE from the agent, on idle expiry, on shutdown.
 *
 * Unlike a passthrough session, an upstream going away does not end it: that server turns into its
 * `<server>__unavailable` placeholder and the others keep working. Nor does a worker config change
 * to its servers (`reconfigure`): a server taken from the agent, or removed, is closed and leaves
 * its lists; a server given to the agent is opened as at initialize; a server bound elsewhere is
 * closed and opened again at its new binding; the agent is sent list changes for each. Only a
 * change to who the agent is (removed, its token or trust context changed) ends the session, as
 * `config/config-reload.ts` decides.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AggregateServer, type AggregateServerOptions } from './aggregate-server.ts';
import type { CallLedger } from '../../shared/audit/call-ledger.ts';
import type { WorkerLogger } from '../log.ts';
import { LegacyHttpEndpoint } from '../sessions/legacy-http-endpoint.ts';
import { requestHeaderOf } from '../sessions/message-extra.ts';
import { parseTraceparent, TRACEPARENT_KEY } from '../../shared/trace-context.ts';
import type { LegacyPostBody } from '../sessions/legacy-post-body.ts';
import type { AgentSession, ConfigInForce } from '../sessions/session-table.ts';
import { inFlightAnswerOf, type SessionEnd } from '../sessions/ended-sessions.ts';

/** A session's servers under one worker config: which the agent may use, how each is opened, where each is bound, and its audit. */
export interface AggregateBinding {
  /** The agent's servers the config has, in config order. */
  servers: readonly string[];
  open: (server: string) => Promise<Transport>;
  /** Each server's binding (its executor, as JSON): a server whose binding changes is opened again. */
  bindings: ReadonlyMap<string, string>;
  ledger?: (server: string | null) => CallLedger;
}

export interface AggregateSessionOptions extends Omit<AggregateServerOptions, 'servers' | 'open' | 'ledger'> {
  id: string;
  agent: string;
  log: WorkerLogger;
  onClosed: (session: AggregateSession) => void;
  /** The session's servers under the config in force at initialize. */
  binding: AggregateBinding;
  /** The same under a config a reload put in force (`reconfigure`). */
  rebind: (next: ConfigInForce) => AggregateBinding;
}

export class AggregateSession implements AgentSession {
  readonly id: string;
  readonly agent: string;
  readonly route = 'aggregate';
  readonly #aggregate: AggregateServer;
  readonly #transport: LegacyHttpEndpoint;
  readonly #log: WorkerLogger;
  readonly #onClosed: (session: AggregateSession) => void;
  readonly #rebind: (next: ConfigInForce) => AggregateBinding;
  #binding: AggregateBinding;
  #closed = false;

  /** Connects the upstreams (in parallel) and wires the agent-facing server to a new transport. */
  static async open(options: AggregateSessionOptions): Promise<AggregateSession> {
    const log = options.log.child({ session: options.id });
    const { binding } = options;
    const aggregate = await AggregateServer.create({ ...options, servers: binding.servers, open: binding.open, ...(binding.ledger !== undefined ? { ledger: binding.ledger } : {}), log });
    const session = new AggregateSession(options, aggregate, log);
    await aggregate.server.connect(session.#transport);
    return session;
  }

  private constructor(options: AggregateSessionOptions, aggregate: AggregateServer, log: WorkerLogger) {
    this.id = options.id;
    this.agent = options.agent;
    this.#aggregate = aggregate;
    this.#log = log;
    this.#onClosed = options.onClosed;
    this.#binding = options.binding;
    this.#rebind = options.rebind;
    this.#transport = new LegacyHttpEndpoint({
      sessionId: options.id,
      onsessionclosed: () => this.close('closed by the agent'),
      // Its lines on answers left unread (README, "Limits") name the session and the agent.
      log,
    });
    // Set before `Server.connect`, which chains its own handler after this one.
    this.#transport.onclose = () => void this.close('transport closed');
    // The endpoint refused it (an id in flight): the server never saw it, so the record is written here.
    this.#transport.onrefused = (message, error, extra) => aggregate.refusedBySession(message, error.reason, parseTraceparent(requestHeaderOf(extra, TRACEPARENT_KEY)));
  }

  get servers(): readonly string[] {
    return this.#aggregate.upstreams.servers;
  }

  get channelCount(): number {
    return this.#aggregate.upstreams.channelCount;
  }

  get inFlight(): number {
    return this.#aggregate.inFlight;
  }

  get oldestInFlightAt(): number | undefined {
    return this.#aggregate.oldestInFlightAt;
  }

  /**
   * Follows a config a reload put in force: the agent's servers as it has them now, each bound
   * where it says (see the module doc). Resolves once the servers the agent lost are closed; the
   * opens of the others go on, announced when they end.
   */
  async reconfigure(next: ConfigInForce): Promise<void> {
    if (this.#closed) return;
    const before = this.#binding;
    const binding = this.#rebind(next);
    this.#binding = binding;
    const rebound = binding.servers.filter((s) => before.bindings.has(s) && before.bindings.get(s) !== binding.bindings.get(s));
    const change = await this.#aggregate.reconfigure({ servers: binding.servers, open: binding.open, rebound, ...(binding.ledger !== undefined ? { ledger: binding.ledger } : {}) });
    if (change.removed.length + change.added.length + change.rebound.length === 0) return;
    this.#log.info('Aggregate session follows the config change', { agent: this.agent, ...change });
  }

  handle(request: Request, body?: LegacyPostBody): Promise<Response> {
    return this.#transport.handleRequest(request, body);
  }

  /** `end`: why the worker ended it, which every request still in flight is answered with first, as on a passthrough session. */
  async close(why = 'closed', end?: SessionEnd): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#log.debug('Aggregate session closing', { why });
    const error = end === undefined ? undefined : inFlightAnswerOf(end);
    if (error !== undefined) await this.#transport.answerPending(error);
    this.#onClosed(this);
    await this.#aggregate.close();
    await this.#transport.close().catch(() => {});
  }
}
