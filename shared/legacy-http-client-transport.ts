/**
 * Legacy (session-based, 2025-11-25 and before) Streamable HTTP, client side: Switchyard's own,
 * web-standard, in place of the SDK's `StreamableHTTPClientTransport`, which brings OAuth client
 * code and an SSE parser library into the worker's bundle for nothing it uses here. It does what
 * that one did for edge-direct servers, and no more (no auth provider: configured headers carry
 * any credential):
 *
 * - each message is one POST; a request's answer is JSON or an SSE stream of the request's own,
 *   whose messages (progress, server requests, the response) arrive in order;
 * - the `Mcp-Session-Id` the server hands out is sent on every later request, and the protocol
 *   version once set (`setProtocolVersion`, `HttpUpstreamTransport` does it after `initialize`)
 *   as `MCP-Protocol-Version`;
 * - once `notifications/initialized` is accepted, a GET opens the standalone stream for messages
 *   the server sends outside any request (405: the server has none);
 * - a stream that ends before its response (the GET stream always, a POST stream when its events
 *   carried ids) is taken up again with a GET carrying `Last-Event-ID`, after the server's `retry`
 *   or a backoff (1 s growing 1.5 times), giving up after two failed attempts in a row;
 * - a redirect is followed only within the URL's origin (307 and 308 for a POST), at most five;
 * - `terminateSession` is the session's DELETE (405 is fine: the server keeps no sessions);
 *   `close` aborts every request and stream.
 *
 * Failures are plain `Error`s, thrown from `send` and reported to `onerror`, as the SDK's were:
 * the caller names the wire reason (`launch-failed` at `initialize`, `server-exited` later). A
 * message that is no JSON-RPC message is reported and dropped (on a stream) or fails the send
 * (a JSON answer). SSE lines and events are bounded (`sse-messages.ts`), JSON answers likewise.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { readStreamWithin } from './bounded-stream.ts';
import { jsonRpcMessageOf } from './json-rpc-message.ts';
import { jsonRpcErrorBody, WireError } from './errors.ts';
import type { ModernHttpTarget } from './modern-http-transport.ts';
import { MAX_SSE_EVENT_CHARS, readSseEvents } from './sse-messages.ts';
import { ReadGate } from './read-gate.ts';
import { fetchErrorText, withoutHeaderValues } from './fetch-error-text.ts';
import { fetchWithinOrigin, mediaType, redirectNote } from './origin-bound-fetch.ts';

const MAX_ERROR_TEXT_BYTES = 4 * 1024;
/**
 * Taking a broken SSE stream up again. A server's own `retry:` is kept within the same bounds:
 * `retry: 0` (or one past the timer's range, which runs at once) on a stream that ends at once was
 * a GET loop of hundreds a second.
 */
const RECONNECT = { initialMs: 1_000, maxMs: 30_000, growth: 1.5, maxRetries: 2 };

/** A stream taken up again: from the last event id it carried. */
interface Resume {
  lastEventId: string | undefined;
  /** The request whose answer the stream was to carry (none: the standalone stream). */
  requestId?: string | number;
  /** How many times that request's stream was taken up already. */
  takeUps?: number;
}

/** How many times one request's stream is taken up, each ending unanswered, before the request is answered as failed. */
const MAX_TAKE_UPS = 5;

export class LegacyHttpClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #target: ModernHttpTarget;
  readonly #standaloneStream: boolean;
  readonly #gate: ReadGate;
  #abort: AbortController | undefined;
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #retryMs: number | undefined;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param options `standaloneStream: false`: no GET stream once initialized, for a session opened
   *   for one request (a modern request to a legacy server), which forwards nothing outside it: the
   *   GET was one more connection and, on Workers, one more subrequest of the 50 a request may make.
   */
  constructor(target: ModernHttpTarget, options: { standaloneStream?: boolean } = {}) {
    this.#target = target;
    this.#standaloneStream = options.standaloneStream !== false;
    this.#gate = target.readGate ?? new ReadGate();
  }

  /** Holds back the server's messages: its SSE streams are not read until the release (`ReadHold`). */
  holdReading(): () => void {
    return this.#gate.hold();
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  setProtocolVersion(version: string): void {
    this.#protocolVersion = version;
  }

  async start(): Promise<void> {
    if (this.#abort !== undefined) throw new Error('The HTTP client transport was already started');
    this.#abort = new AbortController();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    try {
      await this.#post(message);
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      this.onerror?.(failure);
      throw failure;
    }
  }

  /** Ends the server's session with a DELETE; nothing to do without a session. */
  async terminateSession(): Promise<void> {
    if (this.#sessionId === undefined) return;
    try {
      const response = await this.#fetch('DELETE', this.#headers());
      await response.body?.cancel();
      if (!response.ok && response.status !== 405) throw new Error(`The HTTP server refused to end its session: HTTP ${response.status}${redirectNote(response)}`);
      this.#sessionId = undefined;
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      this.onerror?.(failure);
      throw failure;
    }
  }

  async close(): Promise<void> {
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    this.#gate.dispose();
    this.#abort?.abort();
    this.onclose?.();
  }

  async #post(message: JSONRPCMessage): Promise<void> {
    const headers = this.#headers();
    headers.set('content-type', 'application/json');
    headers.set('accept', 'application/json, text/event-stream');
    const sentSession = this.#sessionId !== undefined;
    const response = await this.#fetch('POST', headers, JSON.stringify(message));
    const sessionId = response.headers.get('mcp-session-id');
    if (sessionId) this.#sessionId = sessionId;
    const what = 'method' in message ? message.method : 'a response';
    if (!response.ok) {
      const text = (await readStreamWithin(response.body, MAX_ERROR_TEXT_BYTES).catch(() => null)) ?? '';
      const said = withoutHeaderValues(text, this.#target.headers).slice(0, 300);
      // 404 to a request naming the session: the server ended it (a restart, an expiry). Every
      // later request would get the same: the transport closes, so its session ends with it and
      // the agent opens a new one, as the spec has a client do.
      if (response.status === 404 && sentSession) queueMicrotask(() => void this.close());
      throw new Error(`The HTTP server answered ${what} with HTTP ${response.status}${redirectNote(response)}${said === '' ? '' : `: ${said}`}`);
    }
    if (response.status === 202 || !('method' in message && 'id' in message)) {
      await response.body?.cancel();
      if (this.#standaloneStream && response.status === 202 && 'method' in message && message.method === 'notifications/initialized') {
        this.#openStandaloneStream({ lastEventId: undefined }).catch((error: Error) => this.onerror?.(error));
      }
      return;
    }
    const type = mediaType(response.headers.get('content-type'));
    if (type === 'text/event-stream' && response.body !== null) {
      void this.#readStream(response.body, false, undefined, message.id);
    } else if (type === 'application/json') {
      const text = await readStreamWithin(response.body, MAX_SSE_EVENT_CHARS);
      if (text === null) throw new Error(`The HTTP server's answer to ${what} is larger than ${MAX_SSE_EVENT_CHARS} bytes`);
      const parsed: unknown = JSON.parse(text);
      const messages = (Array.isArray(parsed) ? parsed : [parsed]).map((value) => {
        const read = jsonRpcMessageOf(value);
        if (read === null) throw new Error(`The HTTP server answered ${what} with JSON that is no JSON-RPC message`);
        return read;
      });
      for (const read of messages) this.onmessage?.(read);
    } else {
      await response.body?.cancel();
      throw new Error(`The HTTP server answered ${what} with an unexpected content type: ${response.headers.get('content-type') ?? 'none'}`);
    }
  }

  /** The GET stream of server messages outside any request, from `resume.lastEventId` when taken up again. */
  async #openStandaloneStream(resume: Resume): Promise<void> {
    const headers = this.#headers();
    headers.set('accept', 'text/event-stream');
    if (resume.lastEventId !== undefined) headers.set('last-event-id', resume.lastEventId);
    const response = await this.#fetch('GET', headers);
    if (!response.ok) {
      await response.body?.cancel();
      if (response.status === 405) {
        // No stream to take a request's answer up from: nothing else will answer it.
        if (resume.requestId !== undefined) this.#unanswered(resume.requestId, 'broke off its answer\'s stream and offers none to take it up from');
        return;
      }
      throw new Error(`The HTTP server refused its SSE stream: HTTP ${response.status}${redirectNote(response)}`);
    }
    if (response.body !== null) void this.#readStream(response.body, true, resume.lastEventId, resume.requestId, resume.takeUps);
    else if (resume.requestId !== undefined) this.#unanswered(resume.requestId, 'broke off its answer\'s stream and took it up with no body');
  }

  /** Reads one SSE stream to its end; takes it up again when it ended before its response and can be resumed. */
  async #readStream(body: ReadableStream<Uint8Array>, standalone: boolean, lastEventId?: string, requestId?: string | number, takeUps = 0): Promise<void> {
    let resumable = standalone;
    let answered = false;
    let failure: Error | undefined;
    let brokeOff: string | undefined;
    try {
      await readSseEvents(
        body,
        (event) => {
          if (event.id !== undefined) {
            lastEventId = event.id;
            resumable = true;
          }
          if (event.data === '' || (event.event !== undefined && event.event !== 'message')) return;
          let message: JSONRPCMessage | null = null;
          try {
            message = jsonRpcMessageOf(JSON.parse(event.data));
          } catch {}
          if (message === null) return this.onerror?.(new Error('The HTTP server sent an SSE event that is no JSON-RPC message: dropped'));
          if ('result' in message || 'error' in message) answered = true;
          this.onmessage?.(message);
        },
        { onRetry: (ms) => (this.#retryMs = Math.min(Math.max(ms, RECONNECT.initialMs), RECONNECT.maxMs)), gate: this.#gate, ...(this.#abort ? { signal: this.#abort.signal } : {}) },
      );
    } catch (error) {
      brokeOff = fetchErrorText(error);
      failure = new Error(`The HTTP server's SSE stream broke off: ${brokeOff}`);
    }
    if (this.#abort?.signal.aborted) return;
    if (failure !== undefined) this.onerror?.(failure);
    if (answered) return;
    if (resumable && (requestId === undefined || takeUps < MAX_TAKE_UPS)) this.#reconnect({ lastEventId, ...(requestId !== undefined ? { requestId, takeUps: takeUps + 1 } : {}) }, 0);
    // A request's stream that ended unanswered and cannot be taken up again (or no longer): nothing else will answer it.
    // Why it broke off, when it did (an answer past the message bound): "ended without answering" hid it (review s22).
    else if (requestId !== undefined) this.#unanswered(requestId, brokeOff !== undefined ? `broke off its answer's stream: ${brokeOff}` : takeUps === 0 ? 'ended its answer\'s stream without answering' : `ended its answer's stream without answering, taken up ${takeUps} times`);
  }

  /** Answers `requestId` with the error the server never sent, so its caller does not wait for ever. */
  #unanswered(requestId: string | number, what: string): void {
    this.onmessage?.(jsonRpcErrorBody(requestId, new WireError('server-exited', `The HTTP server ${what}`)) as JSONRPCMessage);
  }

  #reconnect(resume: Resume, attempt: number): void {
    if (attempt >= RECONNECT.maxRetries) {
      this.onerror?.(new Error(`The HTTP server's SSE stream could not be taken up again after ${RECONNECT.maxRetries} attempts`));
      if (resume.requestId !== undefined) this.#unanswered(resume.requestId, `broke off its answer's stream, which could not be taken up again after ${RECONNECT.maxRetries} attempts`);
      return;
    }
    const delay = this.#retryMs ?? Math.min(RECONNECT.initialMs * RECONNECT.growth ** attempt, RECONNECT.maxMs);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#openStandaloneStream(resume).catch((error: Error) => {
        if (this.#abort?.signal.aborted) return;
        this.onerror?.(new Error(`Could not take up the HTTP server's SSE stream again: ${error.message}`));
        this.#reconnect(resume, attempt + 1);
      });
    }, delay);
  }

  /** The session's headers, then the configured ones (they win, as they did with the SDK). */
  #headers(): Headers {
    const headers = new Headers();
    if (this.#sessionId !== undefined) headers.set('mcp-session-id', this.#sessionId);
    if (this.#protocolVersion !== undefined) headers.set('mcp-protocol-version', this.#protocolVersion);
    for (const [name, value] of Object.entries(this.#target.headers ?? {})) headers.set(name, value);
    return headers;
  }

  /** A fetch of the target URL that follows redirects only within its origin. */
  #fetch(method: string, headers: Headers, body?: string): Promise<Response> {
    return fetchWithinOrigin(this.#target.fetch ?? fetch, this.#target.url, { method, headers, ...(body !== undefined ? { body } : {}), ...(this.#abort ? { signal: this.#abort.signal } : {}) });
  }
}

