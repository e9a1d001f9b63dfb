/**
 * LegacyAgentTransport: the server side of a legacy (session-based) agent's channel, wrapped so
 * that a modern (2026-07-28) server can serve it (issue 14, item 3, "modern server → legacy
 * agent"): a stdio server or a host's HTTP target, wrapped by the host, or an edge-direct HTTP
 * server, wrapped by the worker (`dual-era-http-transport.ts` beneath it on HTTP); "the host"
 * below is whichever wraps it. A legacy server sees nothing of it: the agent's `initialize` goes
 * to the server first, exactly as before, and once answered everything passes through untouched.
 *
 * Only when the server refuses `initialize` (a modern-only server does, naming its versions) does
 * the host ask it `server/discover` with the modern `_meta`; a `DiscoverResult` makes the
 * session modern on the server side:
 * - the agent's `initialize` is answered by the host from the discover result: the version the
 *   agent asked for when the SDK speaks it (else the latest it does), the server's capabilities,
 *   serverInfo and instructions;
 * - `notifications/initialized` is swallowed; `ping` and `logging/setLevel` (removed in
 *   2026-07-28) are answered by the host, the level then sent as each request's `logLevel`;
 * - every later request gets the modern `_meta` (protocolVersion, the capabilities the agent
 *   declared at `initialize`, its clientInfo) before it goes to the server; results come back as
 *   the server gave them (legacy clients ignore `resultType`, `ttlMs`, `cacheScope`).
 * The era verdict is shared with the modern agents' probe (`ServerEraCache`): a config known to
 * be modern skips the refused `initialize`; one known legacy is asked `server/discover` only if
 * it refuses `initialize` after all.
 *
 * An `InputRequiredResult` from the server becomes real server→client requests to the agent, and
 * the host retries with its answers (`legacy-agent-rounds.ts`); the server's change notifications
 * reach the agent through a listen the host keeps open for it, its `resources/subscribe` included
 * (`legacy-agent-listen.ts`).
 *
 * @module
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { negotiatedVersion } from '../protocol-versions.ts';
import type { Logger } from '../log.ts';
import { MODERN_PROTOCOL_VERSION, SERVER_INFO_KEY } from '../modern-results.ts';
import { LegacyAgentListen } from './legacy-agent-listen.ts';
import { LegacyAgentRounds } from './legacy-agent-rounds.ts';
import { DEFAULT_PROBE_TIMEOUT_MS, discoverResultSchema, verdictOf, type DiscoverResult, type ServerEraCache } from './discover-verdict.ts';
import { isRecord } from '../records.ts';
import { holdReadingOf } from '../link/link-flow.ts';
import { hostAnswer } from '../audit/host-answers.ts';
import { unrefTimer } from '../unref-timer.ts';

type Id = string | number;
type Request = { jsonrpc: '2.0'; id: Id; method: string; params?: Record<string, unknown> };

export interface LegacyAgentTransportOptions {
  server: string;
  eraKey: string;
  eras: ServerEraCache;
  log: Logger;
}

const DISCOVER_ID = 'switchyard-legacy-agent-discover';

export class LegacyAgentTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;

  readonly #inner: Transport;
  readonly #options: LegacyAgentTransportOptions;
  /** `legacy`: pass everything through; `modern`: the host speaks for the agent. */
  #mode: 'unknown' | 'legacy' | 'modern' = 'unknown';
  /** The agent's `initialize`, while the server's answer to it (or to discover) is awaited. */
  #initialize: Request | null = null;
  /** The server's refusal of the agent's `initialize`, answered to the agent if the server is not modern either. */
  #refusal: JSONRPCMessage | null = null;
  /** The agent's send of its `initialize` to a server known modern, until the discover's outcome (`#initializeKnownModern`). */
  #initializeSend: { resolve(): void; reject(error: unknown): void } | null = null;
  #clientMeta: Record<string, unknown> = {};
  #logLevel: unknown;
  /** The agent's capabilities from its `initialize`, for the questions a modern server's rounds put to it. */
  #capabilities: Record<string, unknown> = {};
  /** The listen the host keeps open on the agent's behalf once the session is modern. */
  #listen: LegacyAgentListen | null = null;
  readonly #rounds = new LegacyAgentRounds({
    toAgent: (message) => this.onmessage?.(message),
    toServer: (message) => void this.#inner.send(message).catch((error: unknown) => this.onerror?.(error as Error)),
    capabilities: () => this.#capabilities,
  });

  constructor(inner: Transport, options: LegacyAgentTransportOptions) {
    this.#inner = inner;
    this.#options = options;
    // A legacy verdict is not taken on trust: the agent's initialize goes to the server as it
    // would anyway, and a refusal of it (a server updated to modern-only, say) still finds the
    // server's era out (review s23). A modern one spares the server a refused initialize.
    if (options.eras.get(options.eraKey)?.era === 'modern') this.#mode = 'modern';
  }

  /** The process id, when the wrapped transport has one. */
  get pid(): number | undefined {
    return (this.#inner as { pid?: number }).pid;
  }

  /** Holds back the wrapped server's output (`shared/link/link-flow.ts`). */
  holdReading(): () => void {
    return holdReadingOf(this.#inner);
  }

  async start(): Promise<void> {
    this.#inner.onmessage = (message) => this.#fromServer(message);
    this.#inner.onerror = (error) => this.onerror?.(error);
    this.#inner.onclose = () => {
      this.#listen?.close();
      this.onclose?.();
    };
    await this.#inner.start();
  }

  async close(): Promise<void> {
    this.#listen?.close();
    this.#settleInitializeSend();
    await this.#inner.close();
  }

  /**
   * The agent's `initialize` to a server known modern is a `server/discover`, and its send settles
   * with the discover's outcome: a server that proves not modern after all gets the initialize
   * itself, and a failure to send that fails the agent's send, as it would have without the
   * verdict (an HTTP server that is down or refuses the agent), instead of leaving it unanswered.
   */
  #initializeKnownModern(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#initializeSend = { resolve, reject };
      this.#discover().catch((error: unknown) => this.#settleInitializeSend(error));
    });
  }

  #settleInitializeSend(error?: unknown): void {
    const pending = this.#initializeSend;
    this.#initializeSend = null;
    if (pending === null) return;
    if (error === undefined) pending.resolve();
    else pending.reject(error);
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.#mode === 'legacy') return this.#inner.send(message, options);
    if (isRequest(message) && message.method === 'initialize') {
      this.#initialize = message;
      const params = message.params ?? {};
      this.#capabilities = isRecord(params.capabilities) ? params.capabilities : {};
      this.#clientMeta = {
        'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
        'io.modelcontextprotocol/clientCapabilities': isRecord(params.capabilities) ? params.capabilities : {},
        ...(isRecord(params.clientInfo) ? { 'io.modelcontextprotocol/clientInfo': params.clientInfo } : {}),
      };
      // A server not known to be modern gets the agent's own initialize first: a legacy one answers it.
      return this.#mode === 'modern' ? this.#initializeKnownModern() : this.#inner.send(message, options);
    }
    if (this.#mode !== 'modern') return this.#inner.send(message, options);
    if (!isRequest(message)) {
      if ('method' in message && message.method === 'notifications/initialized') return;
      if (this.#rounds.fromAgent(message)) return;
      return this.#inner.send(message, options);
    }
    if (message.method === 'ping') return this.#answer(message.id, {});
    if ((message.method === 'resources/subscribe' || message.method === 'resources/unsubscribe') && this.#listen !== null) {
      const uri = message.params?.uri;
      if (typeof uri !== 'string' || !this.#listen.subscribable) {
        queueMicrotask(() => this.onmessage?.(hostAnswer({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `Method not found: ${message.method} (the server offers no resource subscriptions)`, data: { reason: 'invalid-request' } } }) as JSONRPCMessage));
        return;
      }
      const refused = this.#listen.watch(uri, message.method === 'resources/subscribe');
      if (refused !== null) {
        queueMicrotask(() => this.onmessage?.(hostAnswer({ jsonrpc: '2.0', id: message.id, error: { code: -32602, message: `Invalid params: ${refused}`, data: { reason: 'invalid-request' } } }) as JSONRPCMessage));
        return;
      }
      return this.#answer(message.id, {});
    }
    if (message.method === 'logging/setLevel') {
      this.#logLevel = message.params?.level;
      return this.#answer(message.id, {});
    }
    const params = message.params ?? {};
    const meta = isRecord(params._meta) ? params._meta : {};
    const modernMeta = { ...meta, ...this.#clientMeta, ...(this.#logLevel !== undefined ? { 'io.modelcontextprotocol/logLevel': this.#logLevel } : {}) };
    const modern = { ...message, params: { ...params, _meta: modernMeta } };
    this.#rounds.track(modern);
    return this.#inner.send(modern as JSONRPCMessage, options);
  }

  #fromServer(message: JSONRPCMessage): void {
    const initialize = this.#initialize;
    if (initialize !== null && 'id' in message && !('method' in message)) {
      if (message.id === initialize.id && this.#mode === 'unknown') {
        if ('result' in message) {
          this.#settleEra('legacy');
          this.onmessage?.(message);
        } else {
          // Refused: perhaps a modern-only server. Ask it the modern way; its refusal stays in reserve.
          this.#refusal = message;
          this.#discover().catch((error: unknown) => this.onerror?.(error as Error));
        }
        return;
      }
      if (message.id === DISCOVER_ID) return this.#discovered(message);
    }
    // An answer to the host's discover that came after its wait: the agent asked nothing of it.
    if ('id' in message && message.id === DISCOVER_ID && !('method' in message)) return;
    if (this.#mode === 'modern' && (this.#listen?.fromServer(message) === true || this.#rounds.fromServer(message))) return;
    this.onmessage?.(message);
  }

  async #discover(): Promise<void> {
    const initialize = this.#initialize;
    // A server that refused initialize and then never answers discover either: after the probe's
    // wait the agent gets the refusal, as from a legacy server, instead of waiting for good (review of s23).
    if (this.#refusal !== null) {
      const timer = setTimeout(() => {
        if (this.#initialize !== initialize || initialize === null || this.#refusal === null) return;
        this.#initialize = null;
        this.#options.log.debug('Server refused initialize and did not answer server/discover in time', { server: this.#options.server });
        this.onmessage?.(this.#refusal);
      }, DEFAULT_PROBE_TIMEOUT_MS);
      unrefTimer(timer);
    }
    await this.#inner.send({ jsonrpc: '2.0', id: DISCOVER_ID, method: 'server/discover', params: { _meta: this.#clientMeta } });
  }

  #discovered(answer: JSONRPCMessage): void {
    const initialize = this.#initialize!;
    const verdict = verdictOf(answer);
    const discover = 'result' in answer ? discoverResultSchema().safeParse(answer.result) : undefined;
    if (verdict.era !== 'modern' || discover === undefined || !discover.success) {
      this.#mode = 'unknown';
      if (this.#refusal === null) {
        // Cached as modern, yet no modern answer: forget that, and let the server answer initialize itself.
        this.#options.log.info('A server cached as modern did not answer server/discover: its era is learnt again', { server: this.#options.server });
        this.#options.eras.forget(this.#options.eraKey);
        this.#inner.send(initialize as JSONRPCMessage).then(() => this.#settleInitializeSend(), (error: unknown) => this.#settleInitializeSend(error));
        return;
      }
      this.#initialize = null;
      this.#options.log.debug('Server refused initialize and is not modern either', { server: this.#options.server });
      this.onmessage?.(this.#refusal);
      return;
    }
    this.#initialize = null;
    this.#settleInitializeSend();
    this.#settleEra('modern', discover.data);
    this.#options.log.info('A legacy agent is served by a modern server', { server: this.#options.server });
    this.onmessage?.({ jsonrpc: '2.0', id: initialize.id, result: initializeResultOf(discover.data, initialize.params?.protocolVersion, this.#options.server) } as JSONRPCMessage);
    this.#listen = new LegacyAgentListen({
      toServer: (message) => void this.#inner.send(message).catch((error: unknown) => this.onerror?.(error as Error)),
      toAgent: (message) => this.onmessage?.(message),
      meta: () => this.#clientMeta,
      capabilities: discover.data.capabilities,
    });
    this.#listen.open();
  }

  #settleEra(era: 'legacy' | 'modern', discover?: DiscoverResult): void {
    this.#mode = era;
    this.#options.eras.set(this.#options.eraKey, era === 'legacy' ? { era } : { era, discover: discover ?? null, supported: discover?.supportedVersions ?? [] });
  }

  async #answer(id: Id, result: Record<string, unknown>): Promise<void> {
    queueMicrotask(() => this.onmessage?.({ jsonrpc: '2.0', id, result } as JSONRPCMessage));
  }
}

/** The legacy `initialize` result a modern server's `server/discover` stands for. */
export function initializeResultOf(discover: DiscoverResult, requested: unknown, server: string): Record<string, unknown> {
  const meta = isRecord(discover._meta) ? discover._meta : {};
  const serverInfo = isRecord(meta[SERVER_INFO_KEY]) ? meta[SERVER_INFO_KEY] : { name: server, version: '0.0.0' };
  return {
    protocolVersion: negotiatedVersion(requested),
    capabilities: discover.capabilities,
    serverInfo,
    ...(discover.instructions !== undefined ? { instructions: discover.instructions } : {}),
  };
}

function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & Request {
  return 'method' in message && 'id' in message;
}
