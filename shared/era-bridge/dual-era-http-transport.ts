/**
 * A client to an HTTP MCP server of either era, for code that speaks to it as one `Transport`:
 * a modern agent's instance on a host's HTTP target (`sidecar/host/modern/server-instance.ts`),
 * and a legacy agent's session on a host's HTTP target or an edge-direct server, under its
 * `LegacyAgentTransport`. Requests go as modern POSTs (`shared/modern-http-transport.ts`) until an
 * `initialize` is sent: answered with a result, it switches the transport to the session-based
 * Streamable HTTP client for good (`shared/legacy-http-client-transport.ts`), whose `close` ends
 * the server's session with a DELETE (`HttpUpstreamTransport`).
 *
 * A refused `initialize` (a modern-only server answers one with a 4xx, or an error) opened no
 * session: the transport speaks modern again. The server is then asked `server/discover`; if it
 * answers as a modern one, the refusal comes back as the request's error answer, which a legacy
 * agent's transport takes as its cue to ask it the modern way itself. Any other refusal fails the
 * send as it did, so a server that is down or refuses the agent says so as it always has.
 *
 * A modern server's `tools/call` gets its `Mcp-Param-*` headers again: a host checked the
 * agent's against the arguments and took them out of the request (`param-headers.ts`), and a
 * legacy agent never sent any, so they are made anew from the arguments and the `x-mcp-header`
 * annotations of the tool lists this transport has carried.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { httpUpstream } from '../http-upstream-transport.ts';
import { MODERN_VERSION, ModernHttpClientTransport, postModern, type ModernHttpTarget } from '../modern-http-transport.ts';
import { BorrowedReadGate, ReadGate } from '../read-gate.ts';
import { PARAM_HEADERS_META_KEY } from '../param-headers-meta.ts';
import { annotatedArguments, type AnnotatedArgument } from './x-mcp-header.ts';
import { isCancellation } from '../json-rpc-guards.ts';
import { jsonRpcErrorBody, WireError } from '../errors.ts';
import { hostAnswer } from '../audit/host-answers.ts';
import { DEFAULT_PROBE_TIMEOUT_MS, verdictOf } from './discover-verdict.ts';
import { redactUrlsIn } from '../url-redaction.ts';

type Id = string | number;

export class DualEraHttpTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #target: ModernHttpTarget;
  readonly #modern: ModernHttpClientTransport;
  #legacy: Transport | null = null;
  #closed = false;
  /** The `server/discover` asked after a refused `initialize`, while it is on its way: a close ends it. */
  #probing: AbortController | undefined;
  /** That discover's result, for the next message if it is the same question; any other message drops it. */
  #discovered: Record<string, unknown> | null = null;
  /** The `tools/list` requests in flight, whose answers carry the annotations. */
  readonly #toolLists = new Set<Id>();
  /** Each listed tool's annotated arguments (none: the tool mirrors nothing, or is invalid for it). */
  readonly #annotations = new Map<string, AnnotatedArgument[]>();

  /** One gate for both clients: whichever of them the server turns out to speak is held. */
  readonly #gate = new ReadGate();

  constructor(target: ModernHttpTarget) {
    this.#target = target;
    this.#modern = new ModernHttpClientTransport({ ...target, readGate: new BorrowedReadGate(this.#gate) });
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
    const discovered = this.#discovered;
    this.#discovered = null;
    if (discovered !== null && 'method' in message && 'id' in message && message.method === 'server/discover') {
      // Asked again right after the refusal it explained (a legacy agent's transport does): the
      // answer just had, not one more POST, which on Workers is a subrequest of each such session.
      queueMicrotask(() => this.onmessage?.({ jsonrpc: '2.0', id: message.id, result: discovered } as JSONRPCMessage));
      return;
    }
    if ('method' in message && 'id' in message && message.method === 'tools/list') this.#toolLists.add(message.id);
    // A cancelled POST is dropped without an answer: its id would stay for good.
    if (isCancellation(message)) this.#toolLists.delete(message.params.requestId);
    await this.#modern.send('method' in message && message.method === 'tools/call' ? this.#withParamHeaders(message) : message);
  }

  async close(): Promise<void> {
    this.#probing?.abort();
    this.#discovered = null;
    await Promise.all([this.#modern.close(), this.#legacy?.close()]);
    this.#ended();
  }

  /**
   * An `initialize` opens a session, tentatively (above), until its first answer: a later answer
   * under the same id (an agent reusing it) is the session's own business.
   */
  async #initializeLegacy(initialize: JSONRPCMessage & { id: Id }): Promise<void> {
    const legacy = httpUpstream({ ...this.#target, readGate: new BorrowedReadGate(this.#gate) });
    let tentative = true;
    legacy.onmessage = (message) => {
      if (tentative && this.#legacy === legacy && 'id' in message && message.id === initialize.id && !('method' in message)) {
        tentative = false;
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
      if (this.#legacy !== legacy || !tentative) throw error;
      tentative = false;
      this.#backToModern(legacy);
      if (error instanceof WireError || !(await this.#answersModern()) || this.#closed) throw error;
      const refusal = new WireError('launch-failed', redactUrlsIn(error instanceof Error ? error.message : String(error)));
      this.onmessage?.(hostAnswer(jsonRpcErrorBody(initialize.id, refusal)) as JSONRPCMessage);
    }
  }

  /** Whether the server answers `server/discover` as a modern one, within the probe's wait. */
  async #answersModern(): Promise<boolean> {
    const discover = { jsonrpc: '2.0', id: 'switchyard-refusal-discover', method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } } } as JSONRPCMessage;
    let answer: JSONRPCMessage | 'timeout' = 'timeout';
    this.#discovered = null;
    const abort = new AbortController();
    this.#probing = abort;
    const timer = setTimeout(() => abort.abort(), DEFAULT_PROBE_TIMEOUT_MS);
    try {
      const outcome = await postModern(this.#target, discover, (message) => {
        if ('id' in message && message.id === 'switchyard-refusal-discover' && !('method' in message)) answer = message;
      }, abort.signal);
      const got = answer as JSONRPCMessage | 'timeout'; // set in the callback above
      const modern = outcome.modern && verdictOf(got).era === 'modern';
      if (modern && got !== 'timeout' && 'result' in got) this.#discovered = got.result as Record<string, unknown>;
      return modern;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      if (this.#probing === abort) this.#probing = undefined;
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
