/**
 * The transport of a modern agent's instance on a host's HTTP target (a server this workstation
 * reaches over Streamable HTTP), so the same instance code serves stdio and HTTP servers
 * (`server-instance.ts`): the era probe and a modern server's requests go as modern POSTs
 * (`shared/modern-http-transport.ts`); the host's `initialize`, sent when the probe said legacy,
 * switches it to the session-based Streamable HTTP client for good (the worker's own,
 * `shared/legacy-http-client-transport.ts`), whose `close` ends the server's session with a DELETE
 * (`HttpUpstreamTransport`).
 *
 * A modern server's `tools/call` gets its `Mcp-Param-*` headers again: the host checked the
 * agent's against the arguments and took them out of the request (`param-headers.ts`), so they
 * are made anew from the arguments and the `x-mcp-header` annotations of the tool lists this
 * transport has carried (the host's header check asks for the list before any call it checks).
 *
 * The era verdict of an HTTP server is cached under its name and a fingerprint of its URL and
 * headers, as a stdio server's is under its launch (`server-era.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { httpUpstream, type HttpUpstreamTransport } from '../../../shared/http-upstream-transport.ts';
import { ModernHttpClientTransport } from '../../../shared/modern-http-transport.ts';
import { BorrowedReadGate, ReadGate } from '../../../shared/read-gate.ts';
import { PARAM_HEADERS_META_KEY } from '../../../shared/param-headers-meta.ts';
import type { HttpServerConfig } from '../server-config.ts';
import { annotatedArguments, type AnnotatedArgument } from './x-mcp-header.ts';
import { isCancellation } from '../../../shared/json-rpc-guards.ts';
import { jsonRpcErrorBody, WireError } from '../../../shared/errors.ts';
import { hostAnswer } from '../../../shared/audit/host-answers.ts';

type Id = string | number;

/** The era cache key of an HTTP server config: its name and where and how it is reached. */
export function httpServerEraKey(name: string, config: Pick<HttpServerConfig, 'url' | 'headers'>): string {
  const headers = Object.entries(config.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const fingerprint = createHash('sha256').update(JSON.stringify([config.url, headers])).digest('hex').slice(0, 32);
  return `${name}#http#${fingerprint}`;
}

/** The session-based client to `config`, fit to be bridged raw. */
function legacyHttpTransport(config: Pick<HttpServerConfig, 'url' | 'headers'>, readGate?: ReadGate): HttpUpstreamTransport {
  return httpUpstream({ url: new URL(config.url), headers: config.headers, ...(readGate ? { readGate } : {}) });
}

export class DualEraHttpTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #config: Pick<HttpServerConfig, 'url' | 'headers'>;
  readonly #modern: ModernHttpClientTransport;
  #legacy: Transport | null = null;
  #closed = false;
  /** The `tools/list` requests in flight, whose answers carry the annotations. */
  readonly #toolLists = new Set<Id>();
  /** Each listed tool's annotated arguments (none: the tool mirrors nothing, or is invalid for it). */
  readonly #annotations = new Map<string, AnnotatedArgument[]>();

  /** One gate for both clients: whichever of them the server turns out to speak is held. */
  readonly #gate = new ReadGate();

  constructor(config: Pick<HttpServerConfig, 'url' | 'headers'>) {
    this.#config = config;
    this.#modern = new ModernHttpClientTransport({ url: new URL(config.url), headers: config.headers, readGate: new BorrowedReadGate(this.#gate) });
    this.#modern.onmessage = (message) => {
      this.#learnAnnotations(message);
      this.onmessage?.(message);
    };
    this.#modern.onerror = (error) => this.onerror?.(error);
    this.#modern.onclose = () => this.#legacy === null && this.#ended();
  }

  /** Holds back the server's answers, whichever era it speaks (`ReadHold`, `shared/read-gate.ts`). */
  holdReading(): () => void {
    return this.#gate.hold();
  }

  /** Which protocol the transport speaks now. */
  get era(): 'modern' | 'legacy' {
    return this.#legacy === null ? 'modern' : 'legacy';
  }

  start(): Promise<void> {
    return this.#modern.start();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#legacy === null && 'method' in message && 'id' in message && message.method === 'initialize') return this.#initializeLegacy(message);
    if (this.#legacy !== null) return this.#legacy.send(message);
    if ('method' in message && 'id' in message && message.method === 'tools/list') this.#toolLists.add(message.id);
    // A cancelled POST is dropped without an answer: its id would stay for good.
    if (isCancellation(message)) this.#toolLists.delete(message.params.requestId);
    await this.#modern.send('method' in message && message.method === 'tools/call' ? this.#withParamHeaders(message) : message);
  }

  async close(): Promise<void> {
    await Promise.all([this.#modern.close(), this.#legacy?.close()]);
    this.#ended();
  }

  /**
   * An `initialize` opens a session on the server, and the transport speaks legacy for good once
   * the server answers it with a result. Refused (a modern-only server answers a legacy
   * `initialize` with a 4xx; or any error answer), the session was never opened: the transport
   * speaks modern again, so what comes next, a legacy agent's `server/discover`
   * (`legacy-agent-transport.ts`), reaches the server the modern way. A refusal that failed the
   * POST comes back as the request's error answer (`launch-failed`, saying what the server
   * answered), as a refusal in the body does, so the agent's transport sees a refusal either way.
   */
  async #initializeLegacy(initialize: JSONRPCMessage & { id: Id }): Promise<void> {
    const legacy = legacyHttpTransport(this.#config, new BorrowedReadGate(this.#gate));
    legacy.onmessage = (message) => {
      if (this.#legacy === legacy && 'id' in message && message.id === initialize.id && !('method' in message)) {
        if ('result' in message) void this.#modern.close();
        else this.#backToModern(legacy);
      }
      this.onmessage?.(message);
    };
    legacy.onerror = (error) => this.onerror?.(error);
    legacy.onclose = () => this.#legacy === legacy && this.#ended();
    this.#legacy = legacy;
    try {
      await legacy.start();
      await legacy.send(initialize);
    } catch (error) {
      if (this.#legacy !== legacy) throw error;
      this.#backToModern(legacy);
      const failure = error instanceof WireError ? error : new WireError('launch-failed', error instanceof Error ? error.message : String(error));
      this.onmessage?.(hostAnswer(jsonRpcErrorBody(initialize.id, failure)) as JSONRPCMessage);
    }
  }

  #backToModern(legacy: Transport): void {
    this.#legacy = null;
    void legacy.close();
  }

  #learnAnnotations(message: JSONRPCMessage): void {
    // Any answer ends the wait, an error's too: an id kept for good would grow the set, and a cancelled one's never comes.
    if (!('id' in message) || message.id === undefined || 'method' in message || !this.#toolLists.delete(message.id) || !('result' in message)) return;
    const tools = (message.result as { tools?: unknown }).tools;
    if (!Array.isArray(tools)) return;
    for (const tool of tools as Array<{ name?: unknown; inputSchema?: unknown }>) {
      if (typeof tool?.name === 'string') this.#annotations.set(tool.name, annotatedArguments(tool.inputSchema) ?? []);
    }
  }

  /** A `tools/call` with the values its tool mirrors into headers, where `modern-http-transport.ts` sends them from. */
  #withParamHeaders(message: JSONRPCMessage): JSONRPCMessage {
    const params = (message as { params?: { name?: unknown; arguments?: unknown; _meta?: Record<string, unknown> } }).params;
    const annotated = typeof params?.name === 'string' ? this.#annotations.get(params.name) : undefined;
    if (params === undefined || annotated === undefined || annotated.length === 0) return message;
    const headers: Record<string, string> = {};
    for (const argument of annotated) {
      const value = argument.path.reduce<unknown>((at, key) => (typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined), params.arguments);
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') headers[argument.header] = String(value);
    }
    return { ...message, params: { ...params, _meta: { ...params._meta, [PARAM_HEADERS_META_KEY]: headers } } } as JSONRPCMessage;
  }

  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
