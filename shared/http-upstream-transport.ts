/**
 * HttpUpstreamTransport: an SDK client transport to an HTTP MCP server (Switchyard's own
 * `LegacyHttpClientTransport`, put together by `httpUpstream`) made fit to be bridged raw, with
 * or without an SDK `Client` on top. The worker uses it for edge-direct servers, the sidecar for
 * workstation-side HTTP servers.
 *
 * It is the same `Transport` with two additions a pass-through needs, because nothing else does
 * them when no `Client` is there:
 * - the protocol version learnt from the `initialize` answer is handed to the inner transport
 *   (the SDK `Client` normally does this), so later requests carry the right version header;
 * - `close` ends the server's HTTP session with a bounded DELETE, so the server does not keep
 *   state for an agent that is gone (the SDK `Client` does not do this either).
 * `close` is idempotent and `onclose` fires once.
 *
 * A server message nested deeper than `MAX_JSON_DEPTH` is refused on arrival (the HTTP transport
 * parsed it, but nothing recursive has seen it yet): an answer becomes an `invalid-request` error
 * for the request it answered, a server request is answered with that error, a notification is
 * dropped and reported, so no caller waits for a message nothing downstream could serialize.
 *
 * @module
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, WireError } from './errors.ts';
import { exceedsDepth, MAX_JSON_DEPTH, shallowRequestId } from './json-depth.ts';
import { LegacyHttpClientTransport } from './legacy-http-client-transport.ts';
import { holdReadingOf } from './link/link-flow.ts';
import type { ModernHttpTarget } from './modern-http-transport.ts';

const TERMINATE_TIMEOUT_MS = 2_000;

interface SessionTransport extends Transport {
  terminateSession?: () => Promise<void>;
}

/** A session-based client to the HTTP MCP server at `target`, fit to be bridged raw. */
export function httpUpstream(target: ModernHttpTarget, options: { standaloneStream?: boolean } = {}): HttpUpstreamTransport {
  return new HttpUpstreamTransport(new LegacyHttpClientTransport(target, options));
}

export class HttpUpstreamTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #inner: SessionTransport;
  #initializeId: string | number | undefined;
  /** The initialize's send while it is on its way: a close waits for it (bounded) to learn the session to end. */
  #initializing: Promise<void> | undefined;
  #closing = false;
  #closed = false;

  constructor(inner: Transport) {
    this.#inner = inner;
    inner.onmessage = (message: JSONRPCMessage) => this.#inbound(message);
    inner.onerror = (error: Error) => this.onerror?.(error);
    inner.onclose = () => this.#ended();
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  /** Holds back the server's messages (`ReadHold`): the client under it stops reading them. */
  holdReading(): () => void {
    return holdReadingOf(this.#inner);
  }

  get closed(): boolean {
    return this.#closed;
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (!('method' in message && message.method === 'initialize' && 'id' in message)) return this.#inner.send(message, options);
    this.#initializeId = message.id;
    const sent = this.#inner.send(message, options);
    this.#initializing = sent;
    try {
      await sent;
    } finally {
      if (this.#initializing === sent) this.#initializing = undefined;
    }
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version);
  }

  async close(): Promise<void> {
    if (this.#closing || this.#closed) return;
    this.#closing = true;
    const inner = this.#inner;
    if (inner.terminateSession !== undefined) {
      // Best effort, bounded: a server that does not answer must not hold up the close. An
      // initialize on its way is waited for, as its answer names the session the server opened,
      // which was otherwise left to the server's expiry (review of s22).
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, TERMINATE_TIMEOUT_MS)));
      if (this.#initializing !== undefined && inner.sessionId === undefined) await Promise.race([this.#initializing.catch(() => {}), timeout]);
      if (inner.sessionId !== undefined) await Promise.race([inner.terminateSession().catch(() => {}), timeout]);
      clearTimeout(timer);
    }
    await inner.close().catch(() => {});
    this.#ended();
  }

  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  #inbound(message: JSONRPCMessage): void {
    if (exceedsDepth(message, MAX_JSON_DEPTH)) return this.#tooDeep(message);
    if (this.#initializeId !== undefined && 'id' in message && message.id === this.#initializeId && 'result' in message) {
      this.#initializeId = undefined;
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') this.#inner.setProtocolVersion?.(version);
    }
    this.onmessage?.(message);
  }

  #tooDeep(message: JSONRPCMessage): void {
    this.onerror?.(new Error(`Server message nested deeper than ${MAX_JSON_DEPTH} levels: refused`));
    const id = shallowRequestId(message);
    if (id === null) return;
    const refusal = jsonRpcErrorBody(id, new WireError('invalid-request', `Server output nested deeper than ${MAX_JSON_DEPTH} levels`)) as JSONRPCMessage;
    if ('method' in message) this.#inner.send(refusal).catch(() => {});
    else this.onmessage?.(refusal);
  }
}
