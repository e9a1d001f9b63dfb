/**
 * Modern (2026-07-28) Streamable HTTP, client side: each JSON-RPC request is one POST of its own,
 * with the standard headers mirrored from the body (`MCP-Protocol-Version` from `_meta`,
 * `Mcp-Method`, `Mcp-Name` from `params.name` or `params.uri`, Base64-sentinel encoded when the
 * value is not plain visible ASCII) and the `Mcp-Param-*` values the worker decoded into `_meta`
 * (`param-headers-meta.ts`) sent as headers again, the Switchyard key taken out of the body. The
 * answer is JSON or the request's own SSE stream. There is no session: nothing here outlives a
 * request but the open fetches.
 *
 * `postModern` says whether the answer is a modern one. A 2xx is; a 4xx or 5xx is modern only when
 * its body is a JSON-RPC error for this request with a code 2026-07-28 answers on HTTP (-32020,
 * -32021, -32022, -32601, -32602). Anything else (a legacy server's "no session" 400 with id null,
 * an HTML error page) is not, which is how a dual-era client tells a legacy HTTP server (the
 * spec's versioning.mdx, "a 4xx without a recognized modern error body, then initialize").
 *
 * `ModernHttpClientTransport` is the SDK `Transport` over it, for code written against one: a
 * non-modern answer becomes an error response for the request (`data.reason` `server-exited`,
 * `data.status`), a `notifications/cancelled` aborts the POST of the request it names (closing
 * the stream is how HTTP cancels), and `close` aborts every POST in flight.
 *
 * @module
 */
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, WireError } from './errors.ts';
import { exceedsDepth, MAX_JSON_DEPTH } from './json-depth.ts';
import { PARAM_HEADERS_META_KEY } from './param-headers-meta.ts';
import { MAX_SSE_EVENT_CHARS, readSseMessages } from './sse-messages.ts';
import { readStreamWithin } from './bounded-stream.ts';
import { fetchWithinOrigin, mediaType } from './origin-bound-fetch.ts';
import { ReadGate } from './read-gate.ts';
import { isRecord } from './records.ts';
import { fetchErrorText } from './fetch-error-text.ts';

export const MODERN_VERSION = '2026-07-28';
const MODERN_HTTP_ERROR_CODES = new Set([-32020, -32021, -32022, -32601, -32602]);
/** A modern error answer is a short JSON-RPC error: more than this is not one. */
const MAX_ERROR_ANSWER_BYTES = 64 * 1024;
const PLAIN_HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

export interface ModernHttpTarget {
  url: URL;
  /** Configured headers (an API key): sent on every POST, after the mirrored ones. */
  headers?: Record<string, string>;
  fetch?: FetchLike;
  /** Held while the link holds this server's output (`read-gate.ts`): its SSE answers are not read meanwhile. */
  readGate?: ReadGate;
}

export type ModernPostOutcome = { modern: true } | { modern: false; status: number };

type Id = string | number;
type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };

/**
 * POSTs one request (or notification) and hands every message of the answer to `onMessage`, in
 * order; resolves when the answer has ended. Rejects with `server-exited` when the server cannot
 * be reached; an abort of `signal` ends it quietly.
 */
export async function postModern(target: ModernHttpTarget, message: JSONRPCMessage, onMessage: (message: JSONRPCMessage) => void, signal?: AbortSignal): Promise<ModernPostOutcome> {
  const { body, headers } = modernPost(message);
  // The configured headers first, then the protocol's own over them, whatever case either is
  // written in (a plain object would send both): a configured Accept must not drop SSE answers.
  const sent = new Headers(target.headers);
  for (const [name, value] of Object.entries(headers)) sent.set(name, value);
  let response: Response;
  try {
    response = await fetchWithinOrigin(target.fetch ?? fetch, target.url, { method: 'POST', headers: sent, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
  } catch (error) {
    if (signal?.aborted) return { modern: true };
    throw new WireError('server-exited', `Could not reach the HTTP server: ${fetchErrorText(error)}`);
  }
  const id = 'id' in message ? message.id : undefined;
  const type = mediaType(response.headers.get('content-type'));
  if (!response.ok) {
    // Read within a bound: a body that never ends must not grow the worker (this is also how a
    // legacy server's refusal is told, so every such server is read here once).
    const answer = type === 'application/json' ? parsedWithin(await readStreamWithin(response.body, MAX_ERROR_ANSWER_BYTES).catch(() => null)) : (await response.body?.cancel(), null);
    if (isModernError(answer, id) && !exceedsDepth(answer, MAX_JSON_DEPTH)) {
      onMessage(answer as JSONRPCMessage);
      return { modern: true };
    }
    return { modern: false, status: response.status };
  }
  // Once the request's answer is out, a stream that breaks off after it is no failure: reported,
  // it would be a second answer for the same id.
  let answered = false;
  const deliver = (value: unknown) => {
    const answers = id !== undefined && isRecord(value) && value.id === id && !('method' in value);
    if (exceedsDepth(value, MAX_JSON_DEPTH)) {
      if (answers) onMessage(jsonRpcErrorBody(id, new WireError('invalid-request', `Server output nested deeper than ${MAX_JSON_DEPTH} levels`)) as JSONRPCMessage);
      answered ||= answers;
      return;
    }
    if (isRecord(value) && value.jsonrpc === '2.0') {
      answered ||= answers;
      onMessage(value as JSONRPCMessage);
    }
  };
  try {
    if (type === 'text/event-stream' && response.body !== null) await readSseMessages(response.body, deliver, { ...(target.readGate ? { gate: target.readGate } : {}), ...(signal ? { signal } : {}) });
    else if (type === 'application/json') {
      const text = await readStreamWithin(response.body, MAX_SSE_EVENT_CHARS);
      if (text === null) throw new Error(`its JSON answer is larger than ${MAX_SSE_EVENT_CHARS} bytes`);
      deliver(JSON.parse(text));
    } else await response.body?.cancel();
  } catch (error) {
    if (!signal?.aborted && !answered) throw new WireError('server-exited', `The HTTP server's answer broke off: ${fetchErrorText(error)}`);
  }
  return { modern: true };
}

/** `text` as JSON, or null when there is none or it is not JSON. */
function parsedWithin(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The body and headers of one modern POST for `message`. */
export function modernPost(message: JSONRPCMessage): { body: JSONRPCMessage; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (!('method' in message)) return { body: message, headers };
  const params = isRecord(message.params) ? (message.params as Params) : undefined;
  const meta = isRecord(params?._meta) ? params._meta : undefined;
  const version = meta?.['io.modelcontextprotocol/protocolVersion'];
  headers['mcp-protocol-version'] = typeof version === 'string' ? version : MODERN_VERSION;
  headers['mcp-method'] = message.method;
  const name = message.method === 'resources/read' ? params?.uri : message.method === 'tools/call' || message.method === 'prompts/get' ? params?.name : undefined;
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  const sent = meta?.[PARAM_HEADERS_META_KEY];
  if (meta === undefined || !isRecord(sent)) return { body: message, headers };
  for (const [param, value] of Object.entries(sent)) if (typeof value === 'string') headers[`mcp-param-${param}`] = encodeHeaderValue(value);
  const { [PARAM_HEADERS_META_KEY]: _taken, ...kept } = meta;
  return { body: { ...message, params: { ...params, _meta: kept } } as JSONRPCMessage, headers };
}

/** A header value as 2026-07-28 sends it: as it is when plain visible ASCII, else `=?base64?…?=`. */
export function encodeHeaderValue(value: string): string {
  if (PLAIN_HEADER_VALUE.test(value) && !/^=\?base64\?.*\?=$/s.test(value)) return value;
  const bytes = new TextEncoder().encode(value);
  return `=?base64?${btoa(String.fromCharCode(...bytes))}?=`;
}

function isModernError(answer: unknown, id: Id | undefined): boolean {
  if (!isRecord(answer) || id === undefined || answer.id !== id || !isRecord(answer.error)) return false;
  return MODERN_HTTP_ERROR_CODES.has(answer.error.code as number);
}

/**
 * Whether an error answer is this transport's word that a server's answer broke off or never came
 * (a dropped stream, a server out of reach): `server-exited`, but not with the HTTP 4xx of the
 * server's own refusal. A listen that ended so is a drop, to listen again after; one refused is not.
 */
export function answerBrokeOff(error: unknown): boolean {
  if (!isRecord(error) || !isRecord(error.data)) return false;
  const status = error.data.status;
  return error.data.reason === 'server-exited' && !(typeof status === 'number' && status >= 400 && status < 500);
}

/** The SDK `Transport` over `postModern`: one POST per request, answers as messages. */
export class ModernHttpClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #target: ModernHttpTarget;
  readonly #gate: ReadGate;
  readonly #inFlight = new Map<Id, AbortController>();
  readonly #notifying = new Set<AbortController>();
  #closed = false;

  constructor(target: ModernHttpTarget) {
    this.#gate = target.readGate ?? new ReadGate();
    this.#target = { ...target, readGate: this.#gate };
  }

  /** Holds back the server's answers: their SSE streams are not read until the release (`ReadHold`). */
  holdReading(): () => void {
    return this.#gate.hold();
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new WireError('server-exited', 'The HTTP server transport is closed');
    if ('method' in message && message.method === 'notifications/cancelled') {
      const requestId = (message.params as { requestId?: Id } | undefined)?.requestId;
      if (requestId !== undefined) this.#inFlight.get(requestId)?.abort();
      return;
    }
    if (!('method' in message) || !('id' in message)) {
      // Aborted with the rest on close: a server that never answers a notification's POST holds nothing.
      const abort = new AbortController();
      this.#notifying.add(abort);
      void postModern(this.#target, message, () => {}, abort.signal)
        .catch((error: Error) => this.onerror?.(error))
        .finally(() => this.#notifying.delete(abort));
      return;
    }
    const id = message.id;
    const abort = new AbortController();
    this.#inFlight.set(id, abort);
    let answered = false;
    const deliver = (answer: JSONRPCMessage) => {
      answered ||= 'id' in answer && answer.id === id && !('method' in answer);
      this.onmessage?.(answer);
    };
    void postModern(this.#target, message, deliver, abort.signal)
      .then((outcome) => {
        if (abort.signal.aborted) return; // cancelled or closed: nothing more for it
        if (!outcome.modern) {
          const error = new WireError('server-exited', `The HTTP server answered ${message.method} with HTTP ${outcome.status} and no modern error`, { detail: { status: outcome.status } });
          this.onmessage?.(jsonRpcErrorBody(id, error) as JSONRPCMessage);
        } else if (!answered) {
          // A stream that ended without the answer: nothing more will come for this request.
          this.onmessage?.(jsonRpcErrorBody(id, new WireError('server-exited', `The HTTP server ended its answer to ${message.method} without one`)) as JSONRPCMessage);
        }
      })
      .catch((error: unknown) => {
        const failure = error instanceof WireError ? error : new WireError('server-exited', `Could not send ${message.method} to the HTTP server`);
        this.onmessage?.(jsonRpcErrorBody(id, failure) as JSONRPCMessage);
      })
      .finally(() => {
        if (this.#inFlight.get(id) === abort) this.#inFlight.delete(id);
      });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#gate.dispose();
    for (const abort of [...this.#inFlight.values(), ...this.#notifying]) abort.abort();
    this.#inFlight.clear();
    this.#notifying.clear();
    this.onclose?.();
  }
}
