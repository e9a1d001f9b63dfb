/**
 * PassthroughSession: one agent session of `/servers/:name/mcp`, bridged raw to one upstream
 * channel. The agent faces a `LegacyHttpEndpoint` (sessions, SSE, resumable framing); every JSON-RPC message is passed on unchanged both ways, so
 * the agent sees the server exactly as it is, including its own `initialize` result.
 *
 * The one decision this file makes is which SSE stream a server→client message travels on:
 * - responses: by their id (the transport does this);
 * - `notifications/progress`: the stream of the request that carried that progress token;
 * - other notifications and server requests (logging, sampling, elicitation, roots): the stream of
 *   the most recent agent request still in flight (a server sends these while handling a
 *   request), else the standalone GET stream.
 *
 * A request the agent cancels (`notifications/cancelled`) ends here as it goes on to the server:
 * a server that honours it never answers, and a call still counted in flight would keep the
 * session busy (never swept idle) and its audit line open until the session ended. Its line says
 * `cancelled`, unless an answer comes within the ledger's grace (`CallLedger.cancel`): the call
 * ran, and the line says how; the agent gets nothing more either way. A late answer still goes to
 * the endpoint, which drops it: that is when the request's place under the caps comes back
 * (`LegacyHttpEndpoint`, review isolation.md, finding 4).
 *
 * When the upstream channel ends (host offline, server exited), or the worker ends the session (a
 * config change, a shutdown: `close` with its end), every request still in flight gets a JSON-RPC
 * error carrying `data.reason`, and the session closes: the agent must initialize again.
 * A channel that ended with a failure reason is also reported through `onUpstreamFailed` (the
 * status page's recent errors): this is where the session sees it end, so no wrapper is needed.
 *
 * Per-request deadline (`requestTimeoutMs`, the worker's `request-timeout-seconds`; off unless that
 * is set, since long tools exist and a timer per request is hot-path cost): a request the
 * server has not answered in time gets a `request-timeout` error, and the server is sent
 * `notifications/cancelled` for it, so a hung server cannot hold an agent's call (or a session's
 * process, through the idle sweep's busy rule) forever. A progress notification for the request
 * restarts its deadline, as on `/mcp`, so long tools that report progress are not cut off. A
 * timed-out `initialize` also closes the session: nothing can follow a failed initialize, and
 * closing ends the server process at once instead of at idle expiry.
 *
 * `initialize` always has a deadline (`initializeTimeoutMs`, the worker's open deadline: its
 * `request-timeout-seconds`, else 60 s), since no long tool runs in it: a server that never
 * answers it held the agent's POST, its process and a place under the agent's session limit for
 * the in-flight rule's hour. And a session whose agent left its `initialize` unanswered (its
 * connection gone, not resumed: `LegacyHttpEndpoint`) ends at once with its channel: the agent
 * has nothing to go on with, so 16 such attempts locked it out of new sessions (`limit-reached`).
 *
 * Hot path (profiled with `npm run bench -- --profile`): a POST body is read in one
 * `Request.text()` and parsed once (by `sessions/session-route.ts`, which also refuses deep JSON),
 * and messages are classified by shape (`shared/json-rpc-guards.ts`), never with a zod parse.
 *
 * @module
 */
import { SessionEventStore } from './session-event-store.ts';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isCancellation, isRequest, isResponse } from '../../shared/json-rpc-guards.ts';
import { LegacyHttpEndpoint } from '../sessions/legacy-http-endpoint.ts';
import type { LegacyPostBody } from '../sessions/legacy-post-body.ts';
import { jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import type { WorkerLogger } from '../log.ts';
import type { AgentSession } from '../sessions/session-table.ts';
import { inFlightAnswerOf, type SessionEnd } from '../sessions/ended-sessions.ts';
import type { CallLedger } from '../../shared/audit/call-ledger.ts';
import { parseTraceparent, TRACEPARENT_KEY, type TraceContext } from '../../shared/trace-context.ts';
import { requestHeaderOf } from '../sessions/message-extra.ts';
import { redactUrlsIn } from '../../shared/url-redaction.ts';

/** Requests timed out here whose late answer a session still recognises, and drops. */
const MAX_SETTLED_REMEMBERED = 256;

export interface PassthroughSessionOptions {
  id: string;
  agent: string;
  server: string;
  /** The upstream channel as the router opened it, not yet started. */
  channel: Transport;
  log: WorkerLogger;
  /** Called once when the session has closed, for whatever reason; with `end` when the worker ended it (its upstream, or the session table). */
  onClosed: (session: PassthroughSession, end?: SessionEnd) => void;
  /** Longest wait for the server's answer to one agent request (progress restarts it); none when absent. */
  requestTimeoutMs?: number;
  /** Longest wait for the answer to the agent's `initialize`; `requestTimeoutMs` when absent. */
  initializeTimeoutMs?: number;
  /** Told when the upstream channel ends because something failed (its reason is set). */
  onUpstreamFailed?: (error: WireError) => void;
  /** The session's audited calls: timed from request to answer, with the trace context forwarded. */
  ledger?: CallLedger;
}

export class PassthroughSession implements AgentSession {
  readonly id: string;
  readonly agent: string;
  readonly route: string;
  readonly servers: readonly string[];
  readonly #server: string;
  readonly #channel: Transport;
  readonly #onUpstreamFailed: ((error: WireError) => void) | undefined;
  readonly #ledger: CallLedger | undefined;
  /** The failure the channel reported through `onerror` before closing, if any. */
  #upstreamFailure: WireError | undefined;
  #upstreamOpen = true;
  readonly #transport: LegacyHttpEndpoint;
  readonly #log: WorkerLogger;
  readonly #onClosed: (session: PassthroughSession, end?: SessionEnd) => void;
  /**
   * Agent requests awaiting the server's response, oldest first. Never two of one id: the endpoint
   * refuses a reused id before it gets here (`onrefused`), as only it can route that refusal to
   * the right stream, and a server given both would run both under one id.
   */
  /** Each request in flight and when it arrived, oldest first (an id in flight is never taken again: the endpoint refuses it). */
  readonly #inFlight = new Map<RequestId, number>();
  readonly #progress = new Map<string | number, RequestId>();
  readonly #requestTimeoutMs: number | undefined;
  readonly #initializeTimeoutMs: number | undefined;
  /** Deadline timers of in-flight requests, with their method for the error message. */
  readonly #deadlines = new Map<RequestId, { timer: ReturnType<typeof setTimeout>; method: string }>();
  /** Requests answered here with `request-timeout`: the server's late answer is dropped (a cancelled one's, by the endpoint). */
  readonly #settledHere = new Set<RequestId>();
  /** The agent's initialize, which a cancellation does not end. */
  #initializeId: RequestId | undefined;
  #closed = false;
  readonly initialized: Promise<boolean>;
  #markInitialized!: (ok: boolean) => void;

  constructor(options: PassthroughSessionOptions) {
    this.id = options.id;
    this.agent = options.agent;
    this.#server = options.server;
    this.route = `server:${options.server}`;
    this.servers = [options.server];
    this.#channel = options.channel;
    this.#log = options.log.child({ session: options.id, server: options.server });
    this.#onClosed = options.onClosed;
    this.initialized = new Promise((resolve) => (this.#markInitialized = resolve));
    this.#requestTimeoutMs = options.requestTimeoutMs;
    this.#initializeTimeoutMs = options.initializeTimeoutMs ?? options.requestTimeoutMs;
    this.#onUpstreamFailed = options.onUpstreamFailed;
    this.#ledger = options.ledger;
    this.#transport = new LegacyHttpEndpoint({
      sessionId: options.id,
      // Resumable streams, as the server itself offers them: a dropped SSE stream loses nothing.
      eventStore: new SessionEventStore(),
      onsessionclosed: () => this.close('closed by the agent'),
      log: this.#log,
    });
    this.#transport.onmessage = (message, extra) => this.#fromAgent(message, this.#ledger === undefined ? null : parseTraceparent(requestHeaderOf(extra, TRACEPARENT_KEY)));
    this.#transport.onrefused = (message, error, extra) => {
      this.#log.info('Request refused', { method: message.method.slice(0, 64), reason: error.reason });
      if (this.#ledger !== undefined) this.#ledger.refuse(message, 'refused', error.reason, parseTraceparent(requestHeaderOf(extra, TRACEPARENT_KEY)));
    };
    this.#transport.onclose = () => void this.close('transport closed');
    this.#transport.oninitializeabandoned = () => {
      this.#log.info('Agent session ended: the agent left before initialize was answered');
      void this.close('initialize abandoned by the agent');
    };
    this.#channel.onmessage = (message) => this.#fromServer(message);
    this.#channel.onerror = (error) => {
      if (error instanceof WireError) this.#upstreamFailure = error;
      else this.#log.debug('Upstream transport error', { error: error.message });
    };
    this.#channel.onclose = () => void this.#upstreamClosed();
    this.#channel.start().catch((error: unknown) => {
      this.#upstreamFailure = error instanceof WireError ? error : new WireError('launch-failed', `Server "${this.#server}" could not be started`);
      void this.#upstreamClosed();
    });
  }

  get channelCount(): number {
    return this.#upstreamOpen ? 1 : 0;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  get oldestInFlightAt(): number | undefined {
    return this.#inFlight.values().next().value;
  }

  /** One HTTP request of the agent; a POST's body comes already read (`sessions/session-route.ts`). */
  handle(request: Request, body?: LegacyPostBody): Promise<Response> {
    return this.#transport.handleRequest(request, body);
  }

  /**
   * `end`: why the worker ended the session (its upstream, a config change, a shutdown, a request
   * unanswered too long). Each request still in flight is answered with it, as `#upstreamClosed`
   * answers them, before the transport closes: its stream would otherwise end with no answer and
   * no event to resume from. A session its agent closed answers nothing (the agent left).
   */
  async close(why = 'closed', end?: SessionEnd): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#markInitialized(false);
    this.#log.debug('Passthrough session closing', { why });
    for (const { timer } of this.#deadlines.values()) clearTimeout(timer);
    this.#deadlines.clear();
    const error = end === undefined ? undefined : inFlightAnswerOf(end, { server: this.#server });
    if (error !== undefined) await Promise.all([...this.#inFlight.keys()].map((id) => this.#answer(id, error)));
    // Left unanswered only when the agent closed the session (or its transport went).
    this.#ledger?.failAll('session-closed');
    this.#onClosed(this, end);
    this.#upstreamOpen = false;
    await this.#channel.close().catch(() => {});
    await this.#transport.close().catch(() => {});
  }

  #fromAgent(message: JSONRPCMessage, trace: TraceContext | null): void {
    if (isRequest(message)) {
      if (this.#settledHere.size > 0) this.#settledHere.delete(message.id); // a reused id: its next answer belongs to this request
      if (message.method === 'initialize') this.#initializeId = message.id; // never cancelled (MCP forbids it)
      this.#inFlight.set(message.id, Date.now());
      const token = (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
      if (typeof token === 'string' || typeof token === 'number') this.#progress.set(token, message.id);
      this.#armDeadline(message.id, message.method);
    } else if (isCancellation(message) && this.#inFlight.has(message.params.requestId) && message.params.requestId !== this.#initializeId) {
      // A server that honours it never answers: the call ends here, or it would hold the session busy.
      const id = message.params.requestId;
      this.#settle(id);
      this.#ledger?.cancel(id);
    }
    const forwarded = this.#ledger === undefined ? message : this.#ledger.request(message, trace);
    // The request's arrival marks this send: a later request reusing its id is another's.
    const sentAt = isRequest(message) ? this.#inFlight.get(message.id) : undefined;
    this.#channel.send(forwarded).catch((error: unknown) => {
      if (!isRequest(message)) return;
      void this.#notTaken(message.id, message.method, error, sentAt);
    });
  }

  /**
   * A request the channel could not send: an HTTP server refused it or could not be reached (a
   * host's channel fails with a WireError of its own). Said as such, with the client's words (no
   * configured header value, URLs without their query), and on the status page. A failed
   * initialize ends the session, as one that timed out does: nothing was opened upstream, and a
   * session kept open only counted as live until the idle sweep (review s22).
   */
  async #notTaken(id: RequestId, method: string, error: unknown, sentAt: number | undefined): Promise<void> {
    // Answered already (a timeout; its id maybe taken again since), or the session closed and
    // aborted the send: not the server's doing.
    if (this.#closed || this.#inFlight.get(id) !== sentAt) return;
    const initialize = method === 'initialize';
    let wire: WireError;
    if (error instanceof WireError) wire = error;
    else {
      // Node's fetch says only "fetch failed"; why is its cause's code (ECONNREFUSED).
      const code = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
      const why = redactUrlsIn(`${error instanceof Error ? error.message : String(error)}${typeof code === 'string' ? ` (${code})` : ''}`).slice(0, 200);
      wire = initialize
        ? new WireError('launch-failed', `Server "${this.#server}" could not be reached: ${why}`)
        : new WireError('server-exited', `Server "${this.#server}" did not take the request: ${why}`);
      this.#onUpstreamFailed?.(wire);
    }
    await this.#answer(id, wire);
    if (initialize) await this.close('initialize failed');
  }

  #fromServer(message: JSONRPCMessage): void {
    if (isResponse(message)) {
      if (this.#settledHere.size > 0 && message.id !== undefined && this.#settledHere.delete(message.id)) {
        // Timed out: answered here already, and the agent gets nothing more.
        this.#ledger?.answer(message);
        return;
      }
      // A server that refuses initialize leaves nothing to talk to: the session ends behind its
      // answer, as a failed open's does, and no longer counts against the agent's sessions.
      const answersInitialize = message.id !== undefined && message.id === this.#initializeId;
      const refusedInitialize = answersInitialize && 'error' in message;
      // The session is open from its result on, never on an error.
      if (answersInitialize) this.#markInitialized(!refusedInitialize);
      // A cancelled call's answer goes on too: the endpoint drops it and gives its place back, and
      // its audit line, if still waiting, learns that the call ran after all.
      if (message.id !== undefined) this.#settle(message.id);
      this.#ledger?.answer(message);
      const sent = this.#transport.send(message).catch((error: unknown) => this.#log.debug('Response not delivered: the agent left', { error }));
      if (refusedInitialize) void sent.then(() => this.close('initialize failed'));
      return;
    }
    const related = this.#relatedRequest(message);
    const send = related === undefined ? this.#transport.send(message) : this.#transport.send(message, { relatedRequestId: related });
    send.catch(() => this.#transport.send(message)).catch((error: unknown) => this.#log.debug('Server message not delivered', { error }));
  }

  #relatedRequest(message: JSONRPCMessage): RequestId | undefined {
    if (!('method' in message)) return undefined;
    if (message.method === 'notifications/progress') {
      const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
      const id = typeof token === 'string' || typeof token === 'number' ? this.#progress.get(token) : undefined;
      if (id !== undefined && this.#inFlight.has(id)) {
        const deadline = this.#deadlines.get(id);
        if (deadline !== undefined) this.#armDeadline(id, deadline.method);
        return id;
      }
    }
    let latest: RequestId | undefined;
    for (const id of this.#inFlight.keys()) latest = id;
    return latest;
  }

  /** (Re)starts the deadline of request `id`; a no-op without `requestTimeoutMs` (`initializeTimeoutMs` for initialize). */
  #armDeadline(id: RequestId, method: string): void {
    const ms = method === 'initialize' ? this.#initializeTimeoutMs : this.#requestTimeoutMs;
    if (ms === undefined) return;
    const previous = this.#deadlines.get(id);
    if (previous !== undefined) clearTimeout(previous.timer);
    const timer = setTimeout(() => void this.#expire(id, method, ms), ms);
    this.#deadlines.set(id, { timer, method });
  }

  async #expire(id: RequestId, method: string, ms: number): Promise<void> {
    if (this.#closed || !this.#inFlight.has(id)) return;
    this.#rememberSettled(id);
    const seconds = Math.round(ms / 100) / 10;
    this.#log.info('Request timed out', { method, seconds });
    if (method !== 'initialize') {
      // MCP forbids cancelling initialize; the session closes below instead.
      this.#channel
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: `No answer within ${seconds} s` } })
        .catch(() => {});
    }
    const error = new WireError(
      'request-timeout',
      `Server "${this.#server}" did not answer "${method.slice(0, 64)}" within ${seconds} s; the request was cancelled${method === 'initialize' ? ' and the session closed' : ''}`,
      { detail: { server: this.#server } },
    );
    await this.#answer(id, error);
    if (method === 'initialize') await this.close('initialize timed out', { because: 'request-timeout', why: `Server "${this.#server}" did not answer initialize within ${seconds} s` });
  }

  /** `id` was answered here (timed out): its answer, if the server still sends one, is dropped (the oldest are forgotten). */
  #rememberSettled(id: RequestId): void {
    if (typeof id === 'string' && id.length > 256) return; // an id may be megabytes: not kept after its request
    if (this.#settledHere.size >= MAX_SETTLED_REMEMBERED) this.#settledHere.delete(this.#settledHere.values().next().value!);
    this.#settledHere.add(id);
  }

  #settle(id: RequestId): void {
    if (this.#deadlines.size > 0) {
      const deadline = this.#deadlines.get(id);
      if (deadline !== undefined) clearTimeout(deadline.timer);
      this.#deadlines.delete(id);
    }
    this.#inFlight.delete(id);
    // Answered, the initialize's id is free: a later request that reuses it may be cancelled.
    if (id === this.#initializeId) this.#initializeId = undefined;
    if (this.#progress.size === 0) return;
    for (const [token, requestId] of this.#progress) if (requestId === id) this.#progress.delete(token);
  }

  #answer(id: RequestId, error: WireError): Promise<void> {
    this.#settle(id);
    this.#ledger?.fail(id, error.reason);
    return this.#transport.send(jsonRpcErrorBody(id, error) as JSONRPCMessage).catch(() => {});
  }

  async #upstreamClosed(): Promise<void> {
    this.#upstreamOpen = false;
    if (this.#closed) return;
    const failure = this.#upstreamFailure;
    if (failure !== undefined) this.#onUpstreamFailed?.(failure);
    const error = new WireError(
      failure?.reason ?? 'server-exited',
      `Server "${this.#server}" ended the session${failure !== undefined ? `: ${failure.message}` : ''}; initialize a new session to retry`,
    );
    this.#log.info('Upstream channel closed', { reason: error.reason });
    await Promise.all([...this.#inFlight.keys()].map((id) => this.#answer(id, error)));
    await this.close('upstream closed', { because: error.reason, why: failure?.message ?? `Server "${this.#server}" ended the session` });
  }
}
