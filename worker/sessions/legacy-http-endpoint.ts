/**
 * LegacyHttpEndpoint: the agent-facing side of one legacy (session-based, 2025-03-26 to
 * 2025-11-25) Streamable HTTP session, as an MCP `Transport`: agent messages come out of
 * `onmessage`, messages for the agent go in through `send`. It answers what the SDK's
 * `WebStandardStreamableHTTPServerTransport` answered, with the same status codes, JSON-RPC codes
 * and messages (the suite and the legacy conformance runs pin them), plus the `data.reason`
 * (`invalid-request`) every agent-facing error carries (DESIGN §4):
 *
 * - POST: `Accept` must name JSON and SSE (406), the body must be JSON (415, 400 -32700, 413 over
 *   4 MiB), a batch at most 100 messages (400 -32600), each message JSON-RPC (400 -32700). Only
 *   notifications and responses: 202. Any request: an SSE stream that carries the answers of its
 *   requests (and what the session relates to them) and ends after the last answer. One request
 *   alone (not a batch, not `initialize`) whose answer is the first thing sent for it, within
 *   `JSON_ANSWER_WINDOW_MS`, is answered with that message as plain `application/json` instead:
 *   Streamable HTTP lets a server answer a request either way and every client must take both
 *   (2025-03-26 and 2025-11-25, "Sending Messages to the Server" 5), and under Deno the SSE body
 *   (a stream, its priming event, the stored events) cost 70-90 µs of the worker's CPU per call
 *   (issue 17). A notification or a server request for it first, or the window passing, starts
 *   the SSE stream as before, priming event id included, so a long call stays resumable.
 * - a request whose id is in flight in the session, or taken by an earlier request of its batch, is
 *   refused before anything is recorded for it (-32600 `invalid-request`, naming the id): answers
 *   are routed to their stream by id alone, so it would take the first request's answer or leave
 *   a stream without one. Inside a batch each such request gets its error on the batch's stream
 *   and the rest go on; a POST with no other request is answered 400. `onrefused` is told, so
 *   the session can audit the refusal.
 * - an agent's `notifications/cancelled` naming a request in flight ends it here, before it goes
 *   on: the server that honours it never answers (MCP, "Cancellation"), so the stream it alone
 *   kept open ends now. Its place under the caps is kept until its late answer comes (and is
 *   dropped) or `CANCELLED_SLOT_GRACE_MS` passes, whichever is first, not until the session ends:
 *   a server that does not honour it is still working, and a place given back at the cancel let
 *   an agent queue unbounded work on a host (review isolation.md, finding 4).
 * - GET: the session's one standalone SSE stream (409 for a second), or with `Last-Event-ID` a
 *   resumed stream: what it missed, replayed from the event store, then whatever follows. With no
 *   event store, what is sent for the standalone stream while none is open goes nowhere: the
 *   session can ask whether one is (`standaloneOpen`), and is told when a GET opens one
 *   (`onstandaloneopen`), to send then what the agent must not miss.
 * - DELETE: ends the session (`onsessionclosed`, then `close`).
 * - an `initialize` the agent stops waiting for: its connection to the initialize POST went away
 *   before the answer (a client that gave up, `curl -m`; seen as its stream's cancel, or as the
 *   request's aborted signal when it left before the session was made), and it did not resume that stream within
 *   `INITIALIZE_RESUME_GRACE_MS` (only a stream that began with a priming event id can be
 *   resumed; one that did not is given up at once). `oninitializeabandoned` is told, so the session
 *   can end: the agent has no session to go on with nor, an SDK client at least, the id to
 *   DELETE it by, and a session left open kept its server process and a place under the agent's
 *   session limit until the in-flight rule expired it, an hour later.
 * - every request but the initialize POST: `Mcp-Session-Id` must be this session's (400 when
 *   missing, 404 when another), `MCP-Protocol-Version`, when sent, one the SDK supports (400).
 *
 * An agent that closes a response stream loses nothing the event store keeps: what is sent for it
 * meanwhile is stored and replayed on resume. SSE streams get a keep-alive comment every 15 s
 * from one timer per session, armed while a stream is open.
 *
 * Bounds, so one agent cannot make the worker hold unbounded memory (review dos.md):
 * - requests in flight: at most `maxRequestsInFlight` per session, and the agent's own cap across
 *   sessions when the route hands one over (`request-limits.ts`). A request past either is
 *   answered `limit-reached` at once: a lone one with HTTP 429, one in a batch with an error
 *   event on the batch's stream, a batch none of whose requests fit with 429 and those errors as
 *   a JSON array. Notifications and responses always go on: they are how an agent drains.
 * - answers the agent has not read (review isolation.md, finding 3): a request keeps its place
 *   under both caps until its answer has been read, not just sent, since until then the worker
 *   holds it. A JSON answer up to `HELD_ANSWER_MIN_CHARS` is a plain body and gives its place back
 *   at once (the connection's socket buffers take it whole); a larger one is a body held until
 *   read or cancelled (`answer-stream.ts`), and an SSE stream's answered requests keep their
 *   places until the stream has been read up to them. Such places outlive the session: the
 *   answers are still in memory. Every unread byte also counts against the agent's budget
 *   (`MAX_UNREAD_BYTES_PER_AGENT`): an agent past it gets a large JSON answer replaced by a
 *   `limit-reached` error.
 * - SSE backpressure: an agent that stops reading leaves its events queued in the worker. A
 *   stream holding more than `maxQueuedBytes` unread, or written to while its agent is past its
 *   unread budget and not reading it, is ended (errored, which drops the queue) instead of
 *   queueing more; what it would have carried stays in the event store, so the agent resumes
 *   with `Last-Event-ID` as after any dropped connection.
 * - the event store: a stream that ended with every event already taken by the agent's
 *   connection is forgotten, so the store's budget goes to streams still running. A stream that
 *   ended while events were still queued keeps them, in case that connection drops.
 * - a resumed stream whose requests were all answered already is ended after its replay, as the
 *   spec asks of a stream once its response is sent.
 *
 * Why not the SDK's transport (issue 17): it ran a zod parse of every agent message, two or three
 * more zod guards per message sent, copied every request's headers into an object, and used an
 * asynchronous event store (so every event cost awaits, and a resume had to dedupe races). Here a
 * body is parsed once by the caller (`session-route.ts`), messages are checked by shape
 * (`shared/json-rpc-guards.ts`), headers are copied only when asked for, and the event store is
 * synchronous, so a resume replays and registers its stream in one step. A large message forwarded
 * unchanged is written as the text it was read from (`shared/raw-message-text.ts`).
 *
 * @module
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { InitializeRequest, JSONRPCMessage, JSONRPCRequest, MessageExtraInfo, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isCancellation, isInitializeRequest, isJsonRpcMessage, isRequest, isResponse } from '../../shared/json-rpc-guards.ts';
import { DelayQueue, type DelayEntry } from '../../shared/delay-queue.ts';
import { rawTextOf } from '../../shared/raw-message-text.ts';
import { jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { isJsonContentType, refuse, sessionNotFound } from './legacy-http-refusals.ts';
import { MAX_LEGACY_BODY_BYTES, readLegacyPostBody, type LegacyPostBody } from './legacy-post-body.ts';
import { AnswerStream, HELD_ANSWER_MIN_CHARS, MAX_UNREAD_BYTES_PER_STREAM, pastHardUnread } from './answer-stream.ts';
import { extraFor } from './message-extra.ts';
import { agentRequestsFor, agentRequestsLimitReached, CANCELLED_SLOT_GRACES, MAX_REQUESTS_PER_SESSION, sessionRequestsLimitReached, unreadLimitReached, type AgentRequests } from './request-limits.ts';
import type { WorkerLogger } from '../log.ts';
import { unrefTimer } from '../../shared/unref-timer.ts';

/** The versions a session accepts in `MCP-Protocol-Version` (the SDK's `SUPPORTED_PROTOCOL_VERSIONS`). */
export const SUPPORTED_LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];
/** What a request without `MCP-Protocol-Version` speaks, by the spec. */
const DEFAULT_NEGOTIATED_VERSION = '2025-03-26';
/** The first version whose clients read an event with empty data, so a stream can start with an id. */
const PRIMING_VERSION = '2025-11-25';
const MAX_BATCH = 100;
export const SSE_KEEP_ALIVE_MS = 15_000;
/** Unread bytes one SSE stream may hold before it is ended (`answer-stream.ts`). */
export const MAX_SSE_QUEUED_BYTES = MAX_UNREAD_BYTES_PER_STREAM;
const STANDALONE = '_GET_stream';
/** Cancelled requests whose late answer a session still recognises; an older one's answer is refused as unknown, as before. */
const MAX_CANCELLED_REMEMBERED = 256;
/** An id a session remembers after its request ended: a number, or a string no longer than a real client's (an id may be megabytes). */
const rememberable = (id: RequestId): boolean => typeof id === 'number' || id.length <= 256;
/**
 * How long a lone request's POST waits for its answer before it starts the SSE stream anyway.
 * Short: most calls are answered in a few ms, and a call that takes longer should get its stream
 * (and the priming event id that makes it resumable, and keep-alives) without a noticeable delay.
 */
export const JSON_ANSWER_WINDOW_MS = 100;
/** The JSON windows of every session, on one timer (`shared/delay-queue.ts`: a timer per POST cost more than the window saves). */
const jsonAnswerWindows = new DelayQueue(JSON_ANSWER_WINDOW_MS);
/**
 * How long an `initialize` whose stream the agent's connection dropped waits for the agent to
 * resume it (`Last-Event-ID`) before it counts as abandoned. An SDK client resumes a POST stream
 * that began with a priming event after 1 s, then 1.5 s later, so 5 s covers its first tries.
 */
export const INITIALIZE_RESUME_GRACE_MS = 5000;

/**
 * Remembers the events of a session's streams for `Last-Event-ID`. Synchronous: it lives with
 * its session (DESIGN §8), so nothing can happen between storing an event and writing it.
 */
export interface LegacyEventStore {
  /** Stores an event's `data` (empty for a stream's priming event) and returns its event id, kept or not. */
  storeEvent(streamId: string, text: string): string;
  /** The stream of an event id this store issued, even when its event is no longer kept. */
  streamIdOf(eventId: string): string | undefined;
  /** Calls `send` for each event of that event's stream still kept after it, in order. */
  replayAfter(eventId: string, send: (eventId: string, text: string) => void): void;
  /** Drops what is kept of a stream no agent will resume. */
  forgetStream?(streamId: string): void;
}

export interface LegacyHttpEndpointOptions {
  sessionId: string;
  /** Makes every SSE stream resumable; without one, events carry no id. */
  eventStore?: LegacyEventStore;
  /** Called on DELETE, before the endpoint closes. */
  onsessionclosed?: () => void | Promise<void>;
  keepAliveMs?: number;
  /** Requests this session may have in flight; `MAX_REQUESTS_PER_SESSION` by default. */
  maxRequestsInFlight?: number;
  /** Unread bytes an SSE stream may hold before it is ended; `MAX_SSE_QUEUED_BYTES` by default. */
  maxQueuedBytes?: number;
  /** Where an answer ended or dropped for being left unread is told. */
  log?: WorkerLogger;
}

interface Stream {
  answer: AnswerStream;
  /** Answered requests of this stream whose places are held until the agent has read what is queued. */
  owed: number;
}

/** The requests of one POST, answered when `pending` is empty. */
interface Exchange {
  ids: RequestId[];
  pending: Set<RequestId>;
}

/** A lone request's POST whose answer may still go out as plain JSON (`JSON_ANSWER_WINDOW_MS`). */
interface JsonWait {
  resolve: (response: Response) => void;
  window: DelayEntry;
  /** Whether its SSE stream, if it comes to one, starts with a priming event. */
  priming: boolean;
}

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(': keepalive\n\n');
/**
 * Whether a GET for a stream still open takes its place instead of getting 409. Set by the Workers
 * build: a Durable Object learns that an agent's connection is gone only at a write that fails,
 * which a keep-alive makes up to 30 s later (a write into the stream is not one: nothing reads it),
 * so an agent reconnecting got 409 for 30 to 45 s, by which time SDK clients had given the stream
 * up and lost every later server notification (review s22). Deno and Node see a gone connection at
 * once, so a GET that finds its stream open there is another client's, refused.
 */
let takeOverStreams = false;
/** Least time between two take-overs of one stream. */
const TAKE_OVER_EVERY_MS = 5000;

/** Lets a GET take the place of a stream still open (once in `TAKE_OVER_EVERY_MS` per stream): for runtimes that see a gone connection late. */
export function takeOverOpenStreams(on = true): void {
  takeOverStreams = on;
}

const textOf = (message: JSONRPCMessage): string => rawTextOf(message) ?? JSON.stringify(message);
const SSE_HEADERS: Record<string, string> = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };

export class LegacyHttpEndpoint implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Told of each request refused here (an id in flight, a limit reached), already answered to the agent, so it can be audited. */
  onrefused?: (request: JSONRPCRequest, error: WireError, extra?: MessageExtraInfo) => void;
  /** Told when a GET opens the standalone stream afresh (not a resume, which replays what it missed), before its response goes out. */
  onstandaloneopen?: () => void;
  /** Told once the agent has left its `initialize` unanswered: its stream's connection gone and not resumed in time (see the module comment). */
  oninitializeabandoned?: () => void;
  sessionId?: string;

  readonly #id: string;
  readonly #store: LegacyEventStore | undefined;
  readonly #onSessionClosed: (() => void | Promise<void>) | undefined;
  readonly #keepAliveMs: number;
  readonly #maxInFlight: number;
  readonly #maxQueuedBytes: number;
  readonly #log: WorkerLogger | undefined;
  /** Requests taken and not answered yet, or answered and not yet read, as counted against the caps. */
  #inFlight = 0;
  /** Of `#inFlight`, those answered and held until the agent reads the answer (they outlive the session). */
  #held = 0;
  /** The agent's cap the session's requests draw from, once a request has brought it. */
  #agentRequests: AgentRequests | undefined;
  readonly #sseHeaders: Record<string, string>;
  readonly #jsonHeaders: Record<string, string>;
  readonly #streams = new Map<string, Stream>();
  readonly #exchanges = new Map<string, Exchange>();
  readonly #requestStream = new Map<RequestId, string>();
  /** Streams whose agent holds an event id (it read one), so an answer it missed is replayable. */
  readonly #resumable = new Set<string>();
  /** Requests the agent cancelled while in flight, whose answer, if one still comes, is dropped (oldest forgotten first). */
  readonly #cancelled = new Set<RequestId>();
  /** Of those, the ones whose place is still taken, until their answer or their grace's end. */
  readonly #cancelledHeld = new Map<RequestId, DelayEntry>();
  /** Streams not started yet: their one request may still be answered with plain JSON. */
  readonly #jsonWaits = new Map<string, JsonWait>();
  #keepAlive: ReturnType<typeof setInterval> | undefined;
  #nextStream = 0;
  #started = false;
  #initialized = false;
  #initializeId: RequestId | undefined;
  /** The initialize's stream, and whether it began with a priming event (so the agent can resume it). */
  #initializeStream: { id: string; resumable: boolean } | undefined;
  /** Running while the initialize's stream is gone, until the agent resumes it or the grace ends. */
  #abandonTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** When a GET last took each stream's place (`#takeOver`), on the monotonic clock; kept `TAKE_OVER_EVERY_MS`. */
  readonly #tookOverAt = new Map<string, number>();

  constructor(options: LegacyHttpEndpointOptions) {
    this.#id = options.sessionId;
    this.#store = options.eventStore;
    this.#onSessionClosed = options.onsessionclosed;
    this.#keepAliveMs = options.keepAliveMs ?? SSE_KEEP_ALIVE_MS;
    this.#maxInFlight = options.maxRequestsInFlight ?? MAX_REQUESTS_PER_SESSION;
    this.#maxQueuedBytes = options.maxQueuedBytes ?? MAX_SSE_QUEUED_BYTES;
    this.#log = options.log;
    this.#sseHeaders = { ...SSE_HEADERS, 'mcp-session-id': options.sessionId };
    this.#jsonHeaders = { 'content-type': 'application/json', 'mcp-session-id': options.sessionId };
  }

  /** Whether the agent has the standalone stream open now. */
  get standaloneOpen(): boolean {
    return this.#streams.has(STANDALONE);
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('Transport already started');
    this.#started = true;
  }

  /** One HTTP request of the session. A POST's body may come already read (`body`); else it is read here. */
  async handleRequest(request: Request, body?: LegacyPostBody): Promise<Response> {
    if (this.#closed) return sessionNotFound();
    switch (request.method) {
      case 'POST':
        return this.#post(request, body);
      case 'GET':
        return this.#get(request);
      case 'DELETE':
        return this.#delete(request);
      default:
        return refuse(405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
    }
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const response = isResponse(message);
    const requestId = response ? (message as { id?: RequestId }).id : options?.relatedRequestId;
    if (requestId === undefined) {
      if (response) throw new Error('Cannot send a response on a standalone SSE stream unless resuming a previous client request');
      const stream = this.#streams.get(STANDALONE);
      if (stream === undefined && this.#store === undefined) return;
      const text = textOf(message);
      const eventId = this.#store?.storeEvent(STANDALONE, text); // stored while no GET stream is open too, for a resume
      if (stream !== undefined) this.#write(STANDALONE, stream, text, eventId);
      return;
    }
    // Answered, the initialize's id is free: a later request that reuses it may be cancelled.
    if (response && requestId === this.#initializeId) this.#initializeId = undefined;
    const streamId = this.#requestStream.get(requestId);
    if (streamId === undefined) {
      if (response && this.#cancelled.delete(requestId)) {
        // The agent cancelled it: its answer goes nowhere, and its place comes back now.
        this.#releaseCancelled(requestId);
        return;
      }
      throw new Error(`No connection established for request ID: ${String(requestId)}`);
    }
    // A second answer for a request of a batch still running (a server that answers late, after
    // its transport answered for it): the agent has its one answer already.
    if (response && this.#exchanges.get(streamId)?.pending.has(requestId) === false) return;
    const wait = this.#jsonWaits.get(streamId);
    if (wait !== undefined) {
      if (response) {
        // The lone request's answer came first: the whole exchange is this one JSON body.
        this.#stopWaiting(streamId, wait);
        const pending = this.#exchanges.get(streamId)?.pending.has(requestId) === true;
        this.#exchanges.delete(streamId);
        this.#requestStream.delete(requestId);
        const text = rawTextOf(message) ?? JSON.stringify(message);
        if (text.length > HELD_ANSWER_MIN_CHARS) return wait.resolve(this.#heldAnswer(requestId, text, pending));
        if (pending) this.#settle(1);
        wait.resolve(new Response(text, { status: 200, headers: this.#jsonHeaders }));
        return;
      }
      this.#startWaitingStream(streamId);
    }
    const stream = this.#streams.get(streamId);
    if (stream !== undefined || this.#store !== undefined) {
      const text = textOf(message);
      const eventId = this.#store?.storeEvent(streamId, text);
      if (stream !== undefined && this.#write(streamId, stream, text, eventId) && eventId !== undefined) this.#resumable.add(streamId);
    }
    if (!response) return;
    const exchange = this.#exchanges.get(streamId);
    if (exchange === undefined) return;
    if (exchange.pending.delete(requestId)) this.#settleRead(stream);
    if (exchange.pending.size > 0) return;
    this.#exchanges.delete(streamId);
    // An id answered earlier in the exchange may already name a newer request's stream.
    for (const id of exchange.ids) if (this.#requestStream.get(id) === streamId) this.#requestStream.delete(id);
    const resumable = this.#resumable.delete(streamId);
    if (this.#streams.get(streamId) === stream && stream !== undefined) {
      // Everything written was taken by the agent's connection: nothing left for it to resume.
      const delivered = stream.answer.unread === 0;
      this.#endStream(streamId, stream);
      if (delivered) this.#store?.forgetStream?.(streamId);
    } else if (!this.#closed && !resumable) throw new Error(`No connection established for request ID: ${String(requestId)}`);
  }

  /**
   * Answers every request still waiting for its answer with `error`: for a session the worker
   * ends (a config change, a shutdown), whose streams would otherwise end with no answer and no
   * event to resume from. Before `close`.
   */
  async answerPending(error: WireError): Promise<void> {
    for (const id of [...this.#requestStream.keys()]) {
      if (id === this.#initializeId) continue;
      await this.send(jsonRpcErrorBody(id, error) as JSONRPCMessage).catch(() => {});
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopAbandonTimer();
    // A POST still waiting gets the (empty, ended) stream it would have had.
    for (const streamId of [...this.#jsonWaits.keys()]) this.#startWaitingStream(streamId);
    for (const [id, stream] of [...this.#streams]) this.#endStream(id, stream);
    // Answers still unread keep their places until read: they are in memory until then.
    this.#settle(this.#inFlight - this.#held);
    this.#exchanges.clear();
    this.#requestStream.clear();
    this.#resumable.clear();
    this.#cancelled.clear();
    // Their places were given back above with the rest; their graces then find the session closed.
    this.#cancelledHeld.clear();
    this.onclose?.();
  }

  async #post(request: Request, given: LegacyPostBody | undefined): Promise<Response> {
    const accept = request.headers.get('accept');
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    if (!isJsonContentType(request.headers.get('content-type'))) return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    const body = given ?? (await readLegacyPostBody(request));
    if (body.kind === 'too-large') return refuse(413, -32000, `Payload Too Large: Request body must not exceed ${MAX_LEGACY_BODY_BYTES} bytes`);
    if (body.kind === 'not-json') return refuse(400, -32700, 'Parse error: Invalid JSON');
    const batch = Array.isArray(body.value);
    const messages = (batch ? body.value : [body.value]) as unknown[];
    if (messages.length > MAX_BATCH) return refuse(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`);
    if (!messages.every(isJsonRpcMessage)) return refuse(400, -32700, 'Parse error: Invalid JSON-RPC message');
    if (this.#closed) return sessionNotFound();

    const initialize = messages.find((message) => isInitializeRequest(message)) as (JSONRPCMessage & InitializeRequest) | undefined;
    if (initialize !== undefined) {
      if (this.#initialized) return refuse(400, -32600, 'Invalid Request: Server already initialized');
      if (messages.length > 1) return refuse(400, -32600, 'Invalid Request: Only one initialization request is allowed');
      this.#initialized = true;
      this.#initializeId = (initialize as { id?: RequestId }).id;
      this.sessionId = this.#id;
    } else {
      const refused = this.#checkSession(request);
      if (refused !== undefined) return refused;
    }

    const all = messages.filter(isRequest);
    const extra = extraFor(request);
    if (all.length === 0) {
      for (const message of messages) if (isCancellation(message)) this.#cancel(message.params.requestId);
      for (const message of messages) this.onmessage?.(message, extra);
      return new Response(null, { status: 202 });
    }
    this.#agentRequests ??= agentRequestsFor(request);
    let refused = this.#reusedIds(all, extra);
    // After the id check, which is against requests sent before this POST; before the caps, so a
    // cancellation makes room for a request beside it.
    if (all.length < messages.length) for (const message of messages) if (isCancellation(message)) this.#cancel(message.params.requestId);
    const candidates = refused === undefined ? all : all.filter((r) => !refused!.has(r));
    const { admitted: requests, refusal } = this.#admit(candidates);
    if (requests.length < candidates.length) {
      refused ??= new Map();
      for (const r of candidates.slice(requests.length)) {
        refused.set(r, refusal!);
        this.onrefused?.(r, refusal!, extra);
      }
    }
    const goesOn = (message: JSONRPCMessage) => refused === undefined || !refused.has(message as JSONRPCRequest);
    const errors = refused === undefined ? [] : all.flatMap((r) => (refused!.has(r) ? [jsonRpcErrorBody(r.id, refused!.get(r)!)] : []));
    if (requests.length === 0) {
      for (const message of messages) if (goesOn(message)) this.onmessage?.(message, extra);
      return Response.json(batch ? errors : errors[0], { status: refusal !== undefined ? 429 : 400 });
    }
    const version = initialize !== undefined ? initialize.params.protocolVersion : (request.headers.get('mcp-protocol-version') ?? DEFAULT_NEGOTIATED_VERSION);
    const streamId = `${++this.#nextStream}`;
    const ids = requests.map((r) => r.id);
    if (this.#cancelled.size > 0) {
      // A reused id: its answer is this request's, and the cancelled one's place waits out its grace.
      for (const id of ids) if (this.#cancelled.delete(id)) this.#cancelledHeld.delete(id);
    }
    const exchange = { ids, pending: new Set(ids) };
    this.#exchanges.set(streamId, exchange);
    this.#take(exchange.pending.size);
    for (const id of ids) this.#requestStream.set(id, streamId);
    const priming = this.#store !== undefined && version >= PRIMING_VERSION;
    if (initialize !== undefined) this.#initializeStream = { id: streamId, resumable: priming };
    // Registered before the message goes on, so an answer however quick finds it.
    const answered = !batch && initialize === undefined ? this.#waitForJsonAnswer(streamId, priming) : Promise.resolve(this.#sseResponse(streamId, priming));
    // A batch that cancels a request of its own: settled like one sent before it.
    if (ids.length < messages.length) for (const message of messages) if (isCancellation(message) && exchange.pending.has(message.params.requestId)) this.#cancel(message.params.requestId);
    // Only a batch is partly refused, and a batch's stream is open by now.
    for (const error of errors) this.#emit(streamId, JSON.stringify(error));
    for (const message of messages) if (goesOn(message)) this.onmessage?.(message, extra);
    // The agent left while its server was being opened: no runtime cancels a body it never began
    // to send (Node does not), so its stream's loss is seen here.
    if (initialize !== undefined && request.signal.aborted) this.#initializeStreamLost(false);
    return answered;
  }

  /**
   * The requests that reuse an id in flight in this session, or one taken earlier in the same
   * batch, with their refusals, told to `onrefused`; undefined when there are none. Answers are
   * routed to their stream by id alone, so a second request under a live id would take the first
   * one's answer (or leave its stream without one): it never goes on, and nothing is recorded for it.
   */
  #reusedIds(requests: JSONRPCRequest[], extra: MessageExtraInfo | undefined): Map<JSONRPCRequest, WireError> | undefined {
    let refused: Map<JSONRPCRequest, WireError> | undefined;
    const taken = requests.length > 1 ? new Set<RequestId>() : undefined;
    for (const r of requests) {
      const repeated = taken !== undefined && taken.has(r.id);
      if (!repeated && !this.#isInFlight(r.id)) {
        taken?.add(r.id);
        continue;
      }
      const id = JSON.stringify(r.id).slice(0, 64);
      const error = new WireError('invalid-request', repeated ? `Request refused: id ${id} is used by an earlier request of this batch` : `Request refused: id ${id} is already in use by a request in flight in this session`);
      (refused ??= new Map()).set(r, error);
      this.onrefused?.(r, error, extra);
    }
    return refused;
  }

  /**
   * The agent cancelled request `id`: if it is in flight here, it ends now, since a server that
   * honours the cancellation never answers it (MCP, "Cancellation": the receiver should not send a
   * response), and the POST it alone kept open would otherwise stay open until the session ends.
   * An answer already on its way is dropped when it comes. Its place under the caps is kept until
   * that answer or the grace's end (`#holdCancelled`).
   */
  #cancel(id: RequestId): void {
    // MCP forbids cancelling initialize: the session would be left half made.
    if (!this.#isInFlight(id) || id === this.#initializeId) return;
    const streamId = this.#requestStream.get(id)!;
    const exchange = this.#exchanges.get(streamId)!;
    exchange.pending.delete(id);
    this.#requestStream.delete(id);
    const remembered = rememberable(id);
    if (remembered) {
      if (this.#cancelled.size >= MAX_CANCELLED_REMEMBERED) this.#cancelled.delete(this.#cancelled.values().next().value!);
      this.#cancelled.add(id);
    }
    this.#holdCancelled(id, remembered);
    if (exchange.pending.size > 0) return;
    this.#exchanges.delete(streamId);
    for (const other of exchange.ids) if (this.#requestStream.get(other) === streamId) this.#requestStream.delete(other);
    // A lone request's POST still waiting gets its (empty, ended) stream, as on close. The stream's
    // events are forgotten only once its connection took them all, as for an answer: a batch's
    // other answers, written while the agent was away, are still to be resumed.
    this.#startWaitingStream(streamId);
    this.#resumable.delete(streamId);
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) {
      const delivered = stream.answer.unread === 0;
      this.#endStream(streamId, stream);
      if (delivered) this.#store?.forgetStream?.(streamId);
    }
  }

  /**
   * Keeps a cancelled request's place until `#releaseCancelled` (its late answer came) or the
   * grace ends: a server that ignores the cancellation is still working on it, and the caps are
   * what bound the work an agent can leave on a host. An id too long to remember gets the grace only.
   */
  #holdCancelled(id: RequestId, remembered: boolean): void {
    const graces = this.#agentRequests?.cancelGraces ?? CANCELLED_SLOT_GRACES;
    const entry: DelayEntry = graces.add(() => {
      if (this.#closed) return;
      if (this.#cancelledHeld.get(id) === entry) this.#cancelledHeld.delete(id);
      this.#settle(1);
    });
    if (remembered) this.#cancelledHeld.set(id, entry);
  }

  /** The late answer of cancelled request `id` came: its place comes back now, if its grace still held it. */
  #releaseCancelled(id: RequestId): void {
    const entry = this.#cancelledHeld.get(id);
    if (entry === undefined) return;
    this.#cancelledHeld.delete(id);
    (this.#agentRequests?.cancelGraces ?? CANCELLED_SLOT_GRACES).cancel(entry);
    this.#settle(1);
  }

  #isInFlight(id: RequestId): boolean {
    const streamId = this.#requestStream.get(id);
    return streamId !== undefined && this.#exchanges.get(streamId)?.pending.has(id) === true;
  }

  /** The leading requests that fit under both caps, and why the rest do not. */
  #admit(requests: JSONRPCRequest[]): { admitted: JSONRPCRequest[]; refusal?: WireError } {
    const sessionRoom = Math.max(0, this.#maxInFlight - this.#inFlight);
    const agent = this.#agentRequests;
    // An agent over its unread budget gets no new request in until it reads (`request-limits.ts`).
    if (agent?.overUnread === true) return { admitted: [], refusal: agent.refusal() };
    const room = agent === undefined ? sessionRoom : Math.min(sessionRoom, agent.room);
    if (requests.length <= room) return { admitted: requests };
    const refusal = agent !== undefined && agent.room < sessionRoom ? agentRequestsLimitReached(agent.agent, agent.limit) : sessionRequestsLimitReached(this.#maxInFlight);
    return { admitted: requests.slice(0, room), refusal };
  }

  #take(count: number): void {
    this.#inFlight += count;
    this.#agentRequests?.take(count);
  }

  #settle(count: number): void {
    if (count === 0) return;
    this.#inFlight -= count;
    this.#agentRequests?.release(count);
  }

  /** A request's answer went out on `stream`: its place is given back once the agent has read it. */
  #settleRead(stream: Stream | undefined): void {
    if (stream === undefined || stream.answer.unread === 0) return this.#settle(1);
    stream.owed++;
    this.#held++;
  }

  /** What `stream` held was read (or will never be): the places of its answered requests come back. */
  #payOwed(stream: Stream): void {
    const owed = stream.owed;
    if (owed === 0) return;
    stream.owed = 0;
    this.#held -= owed;
    this.#settle(owed);
  }

  /**
   * A lone request's JSON answer too large to give its place back at once: a body held until the
   * agent has read it, its place with it. An agent past its unread budget still gets it (its new
   * requests are refused instead); only one past the hard bound (`hardUnreadLimit`) gets a
   * `limit-reached` error instead (the server's work is lost, but the worker holds nothing more).
   */
  #heldAnswer(id: RequestId, text: string, pending: boolean): Response {
    const agent = this.#agentRequests;
    if (pastHardUnread(agent)) {
      if (pending) this.#settle(1);
      this.#log?.info('Answer dropped: the agent left too much unread', { agent: agent.agent, unreadBytes: agent.unreadBytes, limit: agent.hardUnreadBytes });
      const refusal = unreadLimitReached(agent.agent, agent.hardUnreadBytes);
      return new Response(JSON.stringify(jsonRpcErrorBody(id, refusal)), { status: 200, headers: this.#jsonHeaders });
    }
    let holding = pending;
    if (holding) this.#held++;
    const read = () => {
      if (!holding) return;
      holding = false;
      this.#held--;
      this.#settle(1);
    };
    const answer = new AnswerStream({ meter: agent, ondrained: read, oncancel: read });
    answer.push(encoder.encode(text));
    answer.end();
    return new Response(answer.body, { status: 200, headers: this.#jsonHeaders });
  }

  /** Stores and writes one event on `streamId`, whether or not its stream is connected. */
  #emit(streamId: string, text: string): void {
    const eventId = this.#store?.storeEvent(streamId, text);
    const stream = this.#streams.get(streamId);
    if (stream !== undefined && this.#write(streamId, stream, text, eventId) && eventId !== undefined) this.#resumable.add(streamId);
  }

  /** Starts the SSE stream `streamId` as the POST's response. */
  #sseResponse(streamId: string, priming: boolean): Response {
    const readable = this.#openStream(streamId);
    if (priming) {
      // An id before any message, so an agent whose stream drops at once can still resume it.
      const eventId = this.#store!.storeEvent(streamId, '');
      this.#streams.get(streamId)!.answer.push(encoder.encode(`id: ${eventId}\ndata: \n\n`));
      this.#resumable.add(streamId);
    }
    return new Response(readable, { status: 200, headers: this.#sseHeaders });
  }

  #waitForJsonAnswer(streamId: string, priming: boolean): Promise<Response> {
    return new Promise<Response>((resolve) => {
      const window = jsonAnswerWindows.add(() => this.#startWaitingStream(streamId));
      this.#jsonWaits.set(streamId, { resolve, window, priming });
    });
  }

  /** A waiting POST's answer will not be plain JSON: its SSE stream starts now. */
  #startWaitingStream(streamId: string): void {
    const wait = this.#jsonWaits.get(streamId);
    if (wait === undefined) return;
    this.#stopWaiting(streamId, wait);
    wait.resolve(this.#sseResponse(streamId, wait.priming));
  }

  #stopWaiting(streamId: string, wait: JsonWait): void {
    this.#jsonWaits.delete(streamId);
    jsonAnswerWindows.cancel(wait.window);
  }

  #get(request: Request): Response {
    if (!request.headers.get('accept')?.includes('text/event-stream')) return refuse(406, -32000, 'Not Acceptable: Client must accept text/event-stream');
    const refused = this.#checkSession(request);
    if (refused !== undefined) return refused;
    const lastEventId = request.headers.get('last-event-id');
    if (this.#store !== undefined && lastEventId) return this.#resume(this.#store, lastEventId);
    if (this.#streams.has(STANDALONE) && !this.#takeOver(STANDALONE)) return refuse(409, -32000, 'Conflict: Only one SSE stream is allowed per session');
    const readable = this.#openStream(STANDALONE);
    this.onstandaloneopen?.();
    return new Response(readable, { headers: this.#sseHeaders });
  }

  #resume(store: LegacyEventStore, lastEventId: string): Response {
    const streamId = store.streamIdOf(lastEventId);
    if (streamId === undefined) return refuse(400, -32000, 'Invalid event ID format');
    // A replay skips the streams' bound, and a stream whose requests were all answered is ended
    // (unregistered) at once: each GET would queue one more copy of its events, so an agent that
    // reads none could fill the memory every agent shares. Past its budget it gets none, as it gets
    // no new request; what it holds unread is then at most the budget and one replay.
    const agent = this.#agentRequests;
    if (agent?.overUnread === true) return Response.json(jsonRpcErrorBody(null, agent.refusal()), { status: 429 });
    if (this.#streams.has(streamId) && !this.#takeOver(streamId)) return refuse(409, -32000, 'Conflict: Stream already has an active connection');
    // The agent came back for its initialize's answer: it has not given up on it.
    if (streamId === this.#initializeStream?.id) this.#stopAbandonTimer();
    const readable = this.#openStream(streamId);
    const stream = this.#streams.get(streamId)!;
    // Not held to the queue bound: a replay is at most the store's budget, and it must go out whole.
    store.replayAfter(lastEventId, (eventId, text) => void this.#write(streamId, stream, text, eventId, true));
    // Every request of the stream was answered already (or it never was one): nothing more will come.
    if (streamId !== STANDALONE && !this.#exchanges.has(streamId)) this.#endStream(streamId, stream);
    else this.#resumable.add(streamId);
    return new Response(readable, { headers: this.#sseHeaders });
  }

  async #delete(request: Request): Promise<Response> {
    const refused = this.#checkSession(request);
    if (refused !== undefined) return refused;
    try {
      await this.#onSessionClosed?.();
      return new Response(null, { status: 200 });
    } finally {
      await this.close();
    }
  }

  /** The session and version checks every request but the initialize POST gets. */
  #checkSession(request: Request): Response | undefined {
    if (!this.#initialized) return refuse(400, -32000, 'Bad Request: Server not initialized');
    const sessionId = request.headers.get('mcp-session-id');
    if (!sessionId) return refuse(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    if (sessionId !== this.#id) return sessionNotFound();
    const version = request.headers.get('mcp-protocol-version');
    if (version !== null && !SUPPORTED_LEGACY_VERSIONS.includes(version)) {
      return refuse(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_LEGACY_VERSIONS.join(', ')})`);
    }
    return undefined;
  }

  /**
   * A new SSE body registered as `streamId`; the agent cancelling it unregisters it (a later one
   * under that id stays). What it holds counts against the agent's unread budget.
   */
  #openStream(streamId: string): ReadableStream<Uint8Array> {
    const stream: Stream = { answer: undefined!, owed: 0 };
    stream.answer = new AnswerStream({
      meter: this.#agentRequests,
      ondrained: () => this.#payOwed(stream),
      oncancel: () => {
        if (this.#streams.get(streamId) !== stream) return this.#payOwed(stream);
        this.#unregister(streamId);
        this.#payOwed(stream);
        if (streamId === this.#initializeStream?.id) this.#initializeStreamLost(this.#initializeStream.resumable);
      },
    });
    this.#streams.set(streamId, stream);
    if (this.#keepAlive === undefined && this.#keepAliveMs > 0) {
      this.#keepAlive = setInterval(() => this.#tick(), this.#keepAliveMs);
      (this.#keepAlive as { unref?: () => void }).unref?.();
    }
    return stream.answer.body;
  }

  /**
   * Whether a GET for the stream `streamId`, still open here, takes its place: only where a gone
   * connection is seen late (`takeOverOpenStreams`), and at most once in `TAKE_OVER_EVERY_MS` per
   * stream, so two clients sharing one session cannot take a stream from each other in a loop (the
   * loser gets 409, as everywhere else), while an agent that lost its GET stream and a POST's
   * stream at once takes both back. What the old stream held unread is dropped, and a resumption
   * (Last-Event-ID) replays it.
   */
  #takeOver(streamId: string): boolean {
    const old = this.#streams.get(streamId);
    if (old === undefined) return true;
    if (!takeOverStreams) return false;
    const now = performance.now();
    for (const [id, at] of this.#tookOverAt) if (now - at >= TAKE_OVER_EVERY_MS) this.#tookOverAt.delete(id);
    if (this.#tookOverAt.has(streamId)) return false;
    this.#tookOverAt.set(streamId, now);
    this.#unregister(streamId);
    old.answer.cut(new Error('A newer GET took this stream\'s place'));
    this.#payOwed(old);
    return true;
  }

  /**
   * The agent's connection to its initialize's stream went away. Unanswered, the initialize is
   * abandoned now, or when the grace ends without a resume if the agent holds an event id of it.
   */
  #initializeStreamLost(resumable: boolean): void {
    if (this.#closed || this.#initializeId === undefined || this.#abandonTimer !== undefined) return;
    if (!resumable) return this.#abandonInitialize();
    this.#abandonTimer = setTimeout(() => this.#abandonInitialize(), INITIALIZE_RESUME_GRACE_MS);
    unrefTimer(this.#abandonTimer);
  }

  #abandonInitialize(): void {
    this.#abandonTimer = undefined;
    // Answered meanwhile (the answer waits in the event store for a resume that never came), or ended.
    if (this.#closed || this.#initializeId === undefined) return;
    this.oninitializeabandoned?.();
  }

  #stopAbandonTimer(): void {
    if (this.#abandonTimer === undefined) return;
    clearTimeout(this.#abandonTimer);
    this.#abandonTimer = undefined;
  }

  /** Unregisters `stream`; it closes once the agent has read what it holds. */
  #endStream(streamId: string, stream: Stream): void {
    this.#unregister(streamId);
    stream.answer.end();
  }

  #unregister(streamId: string): void {
    this.#streams.delete(streamId);
    if (this.#streams.size === 0 && this.#keepAlive !== undefined) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = undefined;
    }
  }

  #tick(): void {
    for (const [streamId, stream] of [...this.#streams]) {
      // Its own bound only: a keep-alive adds nothing worth cutting a stream the agent reads.
      if (this.#overflowing(streamId, stream, false)) continue;
      if (!stream.answer.push(KEEP_ALIVE)) this.#unregister(streamId);
    }
  }

  /** Writes one event; false when the stream is gone, or was ended for not being read. */
  #write(streamId: string, stream: Stream, data: string, eventId: string | undefined, replay = false): boolean {
    if (!replay && this.#overflowing(streamId, stream, true)) return false;
    return stream.answer.push(encoder.encode(eventId === undefined ? `event: message\ndata: ${data}\n\n` : `event: message\nid: ${eventId}\ndata: ${data}\n\n`));
  }

  /**
   * Ends `stream` when its agent has left more than `maxQueuedBytes` unread on it behind the event
   * being sent (`queuedBehind`: the rest of a large event being read does not count), or (`agentToo`)
   * when the agent holds more than the hard bound unread over all its answers (`hardUnreadLimit`,
   * well above the budget that refuses its new requests) and is not reading this stream either.
   * Errored rather than closed: a close would wait behind the queue, and an error
   * drops it now (the agent's connection is cut, and it resumes from the event store). The places
   * of the answers it held come back: they are no longer in memory.
   */
  #overflowing(streamId: string, stream: Stream, agentToo: boolean): boolean {
    const unread = stream.answer.queuedBehind;
    const agent = this.#agentRequests;
    const agentOver = agentToo && pastHardUnread(agent) && !stream.answer.reading;
    if (unread <= this.#maxQueuedBytes && !agentOver) return false;
    if (this.#streams.get(streamId) === stream) this.#unregister(streamId);
    const why = unread > this.#maxQueuedBytes
      ? `the agent left more than ${this.#maxQueuedBytes} bytes unread`
      : `agent "${agent!.agent}" holds more than ${agent!.hardUnreadBytes} bytes of answers unread`;
    this.#log?.info('SSE stream ended: the agent left it unread', { unreadBytes: unread, ...(agent !== undefined ? { agent: agent.agent, agentUnreadBytes: agent.unreadBytes } : {}) });
    stream.answer.cut(new Error(`SSE stream ended: ${why}`));
    this.#payOwed(stream);
    return true;
  }
}
