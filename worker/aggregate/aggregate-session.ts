/**
 * AggregateSession: one agent session of `/mcp`. It pairs the agent-facing transport
 * (`LegacyHttpEndpoint`) with an `AggregateServer` and its upstream clients,
 * and ends them together: on DELETE from the agent, on idle expiry, on shutdown.
 *
 * Unlike a passthrough session, an upstream going away does not end it: that server turns into its
 * `<server>__unavailable` placeholder and the others keep working.
 *
 * @module
 */
import { AggregateServer, type AggregateServerOptions } from './aggregate-server.ts';
import type { WorkerLogger } from '../log.ts';
import { LegacyHttpEndpoint } from '../sessions/legacy-http-endpoint.ts';
import { requestHeaderOf } from '../sessions/message-extra.ts';
import { parseTraceparent, TRACEPARENT_KEY } from '../../shared/trace-context.ts';
import type { LegacyPostBody } from '../sessions/legacy-post-body.ts';
import type { AgentSession } from '../sessions/session-table.ts';

export interface AggregateSessionOptions extends AggregateServerOptions {
  id: string;
  agent: string;
  log: WorkerLogger;
  onClosed: (session: AggregateSession) => void;
}

export class AggregateSession implements AgentSession {
  readonly id: string;
  readonly agent: string;
  readonly route = 'aggregate';
  readonly #aggregate: AggregateServer;
  readonly #transport: LegacyHttpEndpoint;
  readonly #log: WorkerLogger;
  readonly #onClosed: (session: AggregateSession) => void;
  #closed = false;

  /** Connects the upstreams (in parallel) and wires the agent-facing server to a new transport. */
  static async open(options: AggregateSessionOptions): Promise<AggregateSession> {
    const log = options.log.child({ session: options.id });
    const aggregate = await AggregateServer.create({ ...options, log });
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
    this.#transport = new LegacyHttpEndpoint({
      sessionId: options.id,
      onsessionclosed: () => this.close('closed by the agent'),
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

  handle(request: Request, body?: LegacyPostBody): Promise<Response> {
    return this.#transport.handleRequest(request, body);
  }

  async close(why = 'closed'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#log.debug('Aggregate session closing', { why });
    this.#onClosed(this);
    await this.#aggregate.close();
    await this.#transport.close().catch(() => {});
  }
}
