/**
 * The channel of one modern request to an edge-direct HTTP server (`{"type":"http"}` in the
 * worker's config), opened by the router as every modern request's channel is, so the relays,
 * the listen stream and the `/mcp` aggregate serve it unchanged.
 *
 * Which era the server speaks is learnt per request, as the spec's dual-era client does on HTTP
 * (versioning.mdx): the request goes first as the agent sent it, a modern POST with its headers
 * (`shared/modern-http-transport.ts`). A modern server's answer (a result, or a modern error) is
 * relayed as it is. An answer that is not modern (a legacy server's "no session" 400) sends the
 * same request on a short legacy session of its own (`legacy-http-session.ts`). A legacy server
 * without sessions (an SDK server in stateless mode) answers the modern POST itself: its result
 * is made modern on the way (`resultType`, caching hints), and its error to `server/discover`
 * (a modern server answers that) sends the request on a legacy session too. Nothing is kept
 * between requests, the era verdict included: another worker instance needs nothing from this
 * one (DESIGN §8). The price, one refused POST before each legacy request, is the spec's own
 * fallback; a host's HTTP target caches the verdict instead, on the host.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { postModern, type ModernHttpTarget } from '../../shared/modern-http-transport.ts';
import { logLevelPasses, modernError, modernMetaOf, modernResult } from '../../shared/modern-results.ts';
import { serveOnLegacySession, type LegacySession } from './legacy-http-session.ts';

const UNSUPPORTED_PROTOCOL_VERSION = -32022;

export class EdgeDirectModernChannel implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #target: ModernHttpTarget;
  readonly #abort = new AbortController();
  #session: LegacySession | null = null;
  #sent = false;
  #closed = false;

  constructor(target: ModernHttpTarget) {
    this.#target = target;
  }

  async start(): Promise<void> {}

  /** Sends the channel's one request; anything else is refused (a modern channel carries one request). */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new WireError('server-exited', 'The channel to the HTTP server is closed');
    if (this.#sent || !('method' in message) || !('id' in message)) throw new WireError('invalid-request', 'A modern channel to an HTTP server carries exactly one request');
    this.#sent = true;
    const request = message as JSONRPCMessage & { id: string | number; method: string; params?: Record<string, unknown> };
    const emit = (answer: JSONRPCMessage) => {
      if (!this.#closed) this.onmessage?.(answer);
    };
    let legacyAnswer = false;
    // A server answering statelessly may be a legacy one, which logs whatever its level: a request
    // without `logLevel` gets no notifications/message, one with it only those at or above it.
    const logLevel = modernMetaOf(request.params).logLevel;
    const relay = (answer: JSONRPCMessage) => {
      if ('method' in answer && answer.method === 'notifications/message' && (logLevel === null || !logLevelPasses((answer.params as { level?: unknown } | undefined)?.level, logLevel))) return;
      if ('method' in answer || !('id' in answer) || answer.id !== request.id) return emit(answer);
      if ('error' in answer) {
        if (request.method === 'server/discover' && answer.error.code !== UNSUPPORTED_PROTOCOL_VERSION) legacyAnswer = true;
        else emit({ ...answer, error: modernError(request.method, request.params, answer.error, 'either') } as JSONRPCMessage);
        return;
      }
      emit({ ...answer, result: modernResult(request.method, answer.result) } as JSONRPCMessage);
    };
    void postModern(this.#target, message, relay, this.#abort.signal).then(
      (outcome) => {
        if (this.#closed) return;
        if (outcome.modern && !legacyAnswer) return this.#ended();
        this.#session = serveOnLegacySession(this.#target, request, emit);
      },
      (error: unknown) => {
        emit(jsonRpcErrorBody(request.id, error instanceof WireError ? error : new WireError('server-exited', `Could not send ${request.method} to the HTTP server`)) as JSONRPCMessage);
        this.#ended();
      },
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#abort.abort();
    await this.#session?.close();
    this.onclose?.();
  }

  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
