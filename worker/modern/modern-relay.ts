/**
 * Relays one modern request over its own channel and turns what comes back into the HTTP answer:
 * JSON when the response comes first, an SSE stream scoped to the request when a notification
 * (progress, a log line) comes before it, the response then ending the stream (notes §2,
 * "Choosing the response"). The channel is closed when the channel fails, at the deadline, or when
 * the agent goes away (its request aborted, its stream cancelled): closing it is how the host
 * learns to cancel the call upstream. After the response, a link channel's host closes it
 * (`HOST_CLOSE_WAIT_MS`); any other channel is closed here as soon as the response is out.
 *
 * Only notifications and the one response with the request's id reach the agent: 2026-07-28
 * forbids independent requests on a request's stream, and the host answers those itself.
 *
 * The SSE stream is bounded as the legacy endpoint's are (review isolation.md, finding 2): an
 * agent that stops reading while the server keeps notifying would make the worker hold all of it
 * (one unread `flood` call held 3 GB). Once the stream holds more than `maxUnreadBytes` unread
 * behind the event being sent (`MAX_SSE_QUEUED_BYTES`, `AnswerStream.queuedBehind`), the next notification ends it instead: the events not yet started are
 * dropped, a `limit-reached` error for the request is its last event (what the agent reads when it
 * reads again), and the channel is closed, so the host cancels the call upstream. A modern stream
 * cannot be resumed, so ending it with an answer beats cutting the connection. What the stream
 * holds counts against the agent's unread budget too (`meter`, `MAX_UNREAD_BYTES_PER_AGENT`), which
 * refuses the agent's new requests (`forwardModern`); past the hard bound well above it
 * (`hardUnreadLimit`), a stream the agent is not reading is ended the same way. A JSON answer
 * larger than `HELD_ANSWER_MIN_CHARS` is a body held until read, counted alike, and replaced by a
 * `limit-reached` error when the agent is already past that hard bound (review isolation.md, finding 3).
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { DelayQueue, type DelayEntry } from '../../shared/delay-queue.ts';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { McpChannelClientTransport, wasSentAhead } from '../../shared/link/mcp-channel-client-transport.ts';
import { AnswerStream, hardUnreadLimit, HELD_ANSWER_MIN_CHARS, MAX_UNREAD_BYTES_PER_STREAM, pastHardUnread, type UnreadMeter } from '../sessions/answer-stream.ts';
import { unreadLimitReached } from '../sessions/request-limits.ts';
import { statusForUpstreamError } from './modern-errors.ts';
import type { ModernRequest } from './validate-request.ts';

export interface RelayOptions {
  /**
   * The agent's request's signal: its abort (the connection went away) cancels the call. Read
   * only once the answer has taken `ABORT_WATCH_MS` (see there), so a getter here is not run for
   * a quick answer.
   */
  signal?: () => AbortSignal;
  /** Longest wait for the response; each notification starts the wait again. None when absent. */
  timeoutMs?: number;
  /**
   * With `signal`: an answer still pending this many ms after the abort is first watched is sent
   * as an event stream from then on, with an SSE comment every this many ms until it comes. Deno
   * cancels a streaming body whose agent left, where it did not abort the request's signal (for
   * some connections, review s24), and the stream's cancel then cancels the call; the comments
   * find one that left later, and keep idle proxies from cutting a long call.
   */
  keepAliveMs?: number;
  /** Told the answer sent (the audit log's outcome), or null when the agent went away first. */
  onAnswer?: (message: unknown) => void;
  /**
   * Told once the agent went away before the answer: its request was aborted (its body, if one
   * was returned, is closed too, but nothing makes a runtime read or cancel the body of a client
   * that is gone), or it cancelled the SSE body. The channel is closed, so the host cancels the
   * call, and `slot` is kept for the grace a cancelled legacy call gets.
   */
  onAbandoned?: () => void;
  /**
   * The agent's slot for this request: parked for the grace when the agent abandons it, given back
   * at once when the worker itself stopped waiting (`STOPPED_WAITING`). Its other release is the
   * caller's (`releasedWhenRead`).
   */
  slot?: { release(): void; park(): void };
  /**
   * Where work past the response must be handed over to run (Workers: `ctx.waitUntil`): the
   * channel's close. The host's close is then not waited for: a timer that outlives the request
   * there would need holding too, and the close is only a frame.
   */
  holdBackgroundWork?: (work: Promise<unknown>) => void;
  /** Unread bytes the SSE stream may hold before it is ended; `MAX_UNREAD_BYTES_PER_STREAM` by default. */
  maxUnreadBytes?: number;
  /** The agent's unread budget, which the answer's unread bytes count against. */
  meter?: UnreadMeter;
  /** Told when the answer was ended or dropped for what the agent left unread. */
  onUnread?: (unread: UnreadEnd) => void;
  /** Where that is logged, with the meter's agent, `server` and the request's method (fields, not a closure: issue 17). */
  log?: { info(message: string, fields: Record<string, unknown>): void };
  server?: string;
}

/**
 * The abort reason of a request the worker itself stops waiting for (the aggregate's `askInTime`
 * gives up on a slow server), where the agent is still there: its slot is given back at once,
 * not held for `CANCELLED_SLOT_GRACE_MS` as one the agent abandoned (review isolation-review.md,
 * finding 5: an agent listing again across starting servers ran into its own cap).
 */
export const STOPPED_WAITING = Symbol('the worker stopped waiting for this answer');

/** Tells `options` an answer was ended or dropped for what its agent left unread. */
export function reportUnread(options: Pick<RelayOptions, 'onUnread' | 'log' | 'server' | 'meter'>, method: string, unread: UnreadEnd): void {
  options.onUnread?.(unread);
  options.log?.info(unread.ended === 'stream' ? 'Answer stream ended: the agent left it unread' : 'Answer dropped: the agent left too much unread', {
    ...(options.meter !== undefined ? { agent: options.meter.agent } : {}),
    ...(options.server !== undefined ? { server: options.server } : {}),
    method,
    unreadBytes: unread.unreadBytes,
    limit: unread.limit,
  });
}

/** An answer ended for being left unread: the SSE stream past its own bound or the agent's, or a large answer dropped past the agent's. */
export interface UnreadEnd {
  ended: 'stream' | 'answer';
  unreadBytes: number;
  limit: number;
}

/**
 * JSON answers whose body is held until the agent reads it (`HELD_ANSWER_MIN_CHARS`):
 * `releasedWhenRead` keeps a request's place until such a body, as an SSE one, has been read.
 */
export const heldAnswers = new WeakSet<Response>();
const JSON_HEADERS = { 'content-type': 'application/json' };
/** The init of every 200 JSON answer, shared: one object less per call (issue 17). */
const JSON_200 = { status: 200, headers: JSON_HEADERS };
const jsonInit = (status: number) => (status === 200 ? JSON_200 : { status, headers: JSON_HEADERS });

/**
 * How long an answer may take before the agent's abort is watched. Deno builds a request's
 * `AbortSignal` only when it is read, and then aborts it when the response is done, whether or
 * not the agent left: a `DOMException` with its stack and an abort event, about 90 µs of the
 * worker's CPU per modern call (issue 17). Most answers take a few ms; an agent that leaves
 * before this is seen this late (the signal read then is already aborted), never missed.
 */
export const ABORT_WATCH_MS = 250;
/** How long past the abort watch an answer may take before it goes as an event stream, and how often that stream writes a comment ({@link RelayOptions.keepAliveMs}). */
export const PENDING_KEEPALIVE_MS = 5_000;

/** Every request's abort watch without a deadline, on one timer: a `setTimeout` per call cost 40 µs of it under Deno. */
const abortWatches = new DelayQueue(ABORT_WATCH_MS);
/**
 * How long a link channel's host may take to close it after its response before the worker does.
 * Every host closes a modern channel right after its response (`serveModernChannel`'s `reply`,
 * since modern channels exist), in the same socket write, so the worker's own `channel-close`
 * there was a frame and a wake-up of the host spent only to be dropped (issue 17); this bounds
 * what a host that did not would hold open.
 */
export const HOST_CLOSE_WAIT_MS = 1000;
const hostCloseWaits = new DelayQueue(HOST_CLOSE_WAIT_MS);

/** The headers of every SSE answer to a modern request (no proxy buffering: events must flow at once). */
export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
const encoder = new TextEncoder();
const KEEPALIVE_COMMENT = encoder.encode(': keepalive\n\n');
/** One JSON-RPC message as an SSE event. */
export const sseEvent = (message: unknown): Uint8Array => encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);

/** Sends `request` on `channel` (open, not started) and answers with what the channel returns. */
export function relayModernRequest(channel: Transport, request: ModernRequest, options: RelayOptions = {}): Promise<Response> {
  return new Promise<Response>((resolve) => {
    let stream: AnswerStream | undefined;
    let done = false;
    let failure: WireError | undefined;
    const maxUnread = options.maxUnreadBytes ?? MAX_UNREAD_BYTES_PER_STREAM;
    const meter = options.meter;
    // One timer at a time, for the earlier of two things: watching the agent's abort, the deadline.
    let timer: ReturnType<typeof setTimeout> | undefined;
    let watch: DelayEntry | undefined;
    let deadlineAt: number | undefined;
    let watched: AbortSignal | undefined;
    let watchPending = options.signal !== undefined;
    let hostCloseWait: DelayEntry | undefined;
    let keepAlive: ReturnType<typeof setInterval> | undefined;
    const hold = options.holdBackgroundWork;
    const close = () => {
      const closing = channel.close().catch(() => {});
      hold?.(closing);
    };

    /** `byHost`: the host's response ended it, and the host closes the channel behind it. */
    const finish = (byHost = false) => {
      if (done) return;
      done = true;
      if (timer !== undefined) clearTimeout(timer);
      if (keepAlive !== undefined) clearInterval(keepAlive);
      if (watch !== undefined) abortWatches.cancel(watch);
      watched?.removeEventListener('abort', abandoned);
      // A host's `channel-reply` has closed the channel already: nothing to wait for or to close.
      if (channel instanceof McpChannelClientTransport && channel.closed) return;
      if (byHost && hold === undefined && channel instanceof McpChannelClientTransport) hostCloseWait = hostCloseWaits.add(close);
      else close();
    };
    // Nobody reads this answer: it only settles the handler. A stream already returned ends
    // (what it holds can still be read), so whoever holds it sees its end.
    const abandoned = () => {
      if (!done) options.onAnswer?.(null);
      finish();
      stream?.end();
      if (watched?.reason === STOPPED_WAITING) options.slot?.release();
      else options.slot?.park();
      options.onAbandoned?.();
      resolve(new Response(null, { status: 499 }));
    };
    const answer = (message: unknown, status: number, byHost = false) => {
      if (done) return;
      if (stream !== undefined && unreadPast(stream, maxUnread, meter)) {
        // As for a notification: a stream the agent left unread is cut, its answer not added (review s24).
        leftUnread(stream, maxUnread, request, options);
        return finish(byHost);
      }
      options.onAnswer?.(message);
      if (stream !== undefined) {
        stream.push(sseEvent(message));
        stream.end();
      } else {
        const text = JSON.stringify(message);
        resolve(text.length > HELD_ANSWER_MIN_CHARS ? heldAnswer(text, status, request, options) : new Response(text, jsonInit(status)));
      }
      finish(byHost);
    };
    const fail = (error: WireError) => answer(jsonRpcErrorBody(request.id, error), httpStatusFor(error.reason));
    const schedule = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      if (watch !== undefined) abortWatches.cancel(watch);
      watch = undefined;
      if (deadlineAt === undefined && !watchPending) return;
      if (deadlineAt === undefined) {
        watch = abortWatches.add(onTimer);
        return;
      }
      const untilDeadline = deadlineAt === undefined ? Infinity : Math.max(0, deadlineAt - performance.now());
      timer = setTimeout(onTimer, watchPending ? Math.min(ABORT_WATCH_MS, untilDeadline) : untilDeadline);
    };
    const onTimer = () => {
      timer = undefined;
      watch = undefined;
      if (done) return;
      if (watchPending) {
        watchPending = false;
        watched = options.signal!();
        if (watched.aborted) return abandoned();
        watched.addEventListener('abort', abandoned, { once: true });
        // Still unanswered a keepalive later, the answer goes as an event stream (one already
        // streaming gets the comments too): a quicker one keeps its JSON and its HTTP status.
        if (options.keepAliveMs !== undefined) {
          keepAlive = setInterval(() => {
            stream ??= openStream();
            stream.push(KEEPALIVE_COMMENT);
          }, options.keepAliveMs);
        }
      }
      if (deadlineAt !== undefined && performance.now() >= deadlineAt) {
        return fail(new WireError('request-timeout', `The server did not answer ${request.method} within ${Math.round(options.timeoutMs! / 1000)} s`));
      }
      schedule();
    };
    // (Re)starts the deadline: at the request, and again at each notification.
    const arm = () => {
      if (options.timeoutMs !== undefined) deadlineAt = performance.now() + options.timeoutMs;
      schedule();
    };
    const openStream = (): AnswerStream => {
      const opened = new AnswerStream({
        meter,
        oncancel: () => {
          if (done) return;
          options.onAnswer?.(null);
          finish();
          options.slot?.park();
          options.onAbandoned?.();
        },
      });
      resolve(new Response(opened.body, { status: 200, headers: SSE_HEADERS }));
      return opened;
    };
    const notify = (message: JSONRPCMessage) => {
      if (stream === undefined) {
        stream = openStream();
      } else if (unreadPast(stream, maxUnread, meter)) {
        leftUnread(stream, maxUnread, request, options);
        return finish();
      }
      stream.push(sseEvent(message));
      arm();
    };
    channel.onmessage = (message) => {
      if (done) return;
      const { id, method } = message as { id?: unknown; method?: unknown };
      if (method === undefined && id === request.id) {
        const error = (message as { error?: { code?: unknown } }).error;
        answer(message, error === undefined ? 200 : statusForUpstreamError(error.code), true);
      } else if (typeof method === 'string' && id === undefined) {
        notify(message);
      }
    };
    channel.onerror = (error) => {
      if (error instanceof WireError) failure = error;
    };
    // Closed after the answer too (by the host, or by `finish`): only a close before it is an error worth building.
    channel.onclose = () => {
      if (hostCloseWait !== undefined) hostCloseWaits.cancel(hostCloseWait);
      if (!done) fail(failure ?? new WireError('server-exited', `The server's channel closed before it answered ${request.method}`));
    };

    arm();
    // A request that went right behind the channel's open (`forwardModern`) is not sent twice.
    void channel.start().then(
      () => (wasSentAhead(channel, request as JSONRPCMessage) ? undefined : channel.send(request as JSONRPCMessage)),
    ).catch((error: unknown) => fail(error instanceof WireError ? error : new WireError('server-exited', `Could not send ${request.method} to the server`)));
  });
}

/** Whether the agent left more of `open` unread than the stream's bound, or its own hard bound, allows (a function, not a closure per request: issue 17). */
function unreadPast(open: AnswerStream, maxUnread: number, meter: UnreadMeter | undefined): boolean {
  return open.queuedBehind > maxUnread || (pastHardUnread(meter) && !open.reading);
}

/** The agent stopped reading `open`: what it has not started is dropped, the error is its last event (the caller finishes). */
function leftUnread(open: AnswerStream, maxUnread: number, request: ModernRequest, options: RelayOptions): void {
  const meter = options.meter;
  const own = open.queuedBehind > maxUnread;
  const limit = own ? maxUnread : hardUnreadLimit(meter!);
  const why = own ? `more than ${limit} bytes of it were left unread` : `agent "${meter!.agent}" holds more than ${limit} bytes of answers unread`;
  const error = new WireError('limit-reached', `Answer stream ended: ${why}, so the call was cancelled`, { detail: { limit } });
  const body = jsonRpcErrorBody(request.id, error);
  reportUnread(options, request.method, { ended: 'stream', unreadBytes: own ? open.queuedBehind : meter!.unreadBytes, limit });
  options.onAnswer?.(body);
  open.cut(error, sseEvent(body));
}

/** A large JSON answer: held until read, or, past the agent's hard bound, an error instead. */
function heldAnswer(text: string, status: number, request: ModernRequest, options: RelayOptions): Response {
  const meter = options.meter;
  if (pastHardUnread(meter)) {
    const limit = hardUnreadLimit(meter);
    reportUnread(options, request.method, { ended: 'answer', unreadBytes: meter.unreadBytes, limit });
    const refusal = unreadLimitReached(meter.agent, limit);
    return Response.json(jsonRpcErrorBody(request.id, refusal), { status: httpStatusFor(refusal.reason) });
  }
  const held = new AnswerStream({ meter });
  held.push(encoder.encode(text));
  held.end();
  const response = new Response(held.body, jsonInit(status));
  heldAnswers.add(response);
  return response;
}
