/**
 * AgentServer: the MCP server end an agent talks to on `/mcp`, a `JsonRpcPeer` on the agent's
 * transport plus the server's half of the initialize handshake, as the MCP SDK's `Server` did it:
 * the agent's protocol version when it is a supported one, else the latest; the aggregate's
 * capabilities, server info and instructions.
 *
 * Requests are answered by the handler registered for their method (`Method not found`, -32601,
 * for any other); notifications go to theirs, or are dropped. `announce` sends a parameterless
 * notification (a list change) at most once per turn of the event loop however often it is
 * called, as the SDK's debounced notifications did, so one upstream going away together with a
 * list change is one announcement. On a transport that drops what it has no standalone stream
 * for (`StandaloneStream`: Streamable HTTP's GET stream, which an agent opens after initialize,
 * or later, or again after losing it), an announcement made while none is open is kept, once
 * per method, and sent when the agent opens one: a server that came up meanwhile would
 * otherwise never reach the agent's lists.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Implementation, ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcPeer, type IncomingRequest, type Params, type RequestContext, type RequestOptions, type Result } from './rpc/json-rpc-peer.ts';
import { RPC_CODES, RpcError } from './rpc/peer-errors.ts';
import { negotiatedVersion } from '../../shared/protocol-versions.ts';
import { unrefTimer } from '../../shared/unref-timer.ts';

export type AgentRequestHandler = (params: Params, context: RequestContext) => Promise<Result>;

export interface AgentServerOptions {
  serverInfo: Implementation;
  capabilities: ServerCapabilities;
  instructions?: string;
  requests: Readonly<Record<string, AgentRequestHandler>>;
  notifications: Readonly<Record<string, () => void>>;
}

/** A transport's standalone stream, where what is sent while it is not open is lost (`LegacyHttpEndpoint`). */
export interface StandaloneStream {
  readonly standaloneOpen: boolean;
  onstandaloneopen?: (() => void) | undefined;
}

/**
 * How long a request to the agent waits for its standalone stream to open (a client opens its GET
 * right after initialize), and how many may wait at once: what is sent while none is open is
 * lost, and the server that asked would wait out the request timeout for an answer.
 */
export const STANDALONE_WAIT_MS = 10_000;
export const MAX_WAITING_FOR_STANDALONE = 16;

export class AgentServer {
  readonly #options: AgentServerOptions;
  readonly #peer: JsonRpcPeer;
  readonly #announcing = new Set<string>();
  /** Announcements made while the agent had no standalone stream open. */
  readonly #missed = new Set<string>();
  #stream: StandaloneStream | undefined;
  /** Requests waiting for the standalone stream to open. */
  readonly #waiting = new Set<() => void>();

  constructor(options: AgentServerOptions) {
    this.#options = options;
    this.#peer = new JsonRpcPeer({
      request: (request, context) => this.#answer(request, context),
      notification: (notification) => {
        if (Object.hasOwn(options.notifications, notification.method)) options.notifications[notification.method]!();
      },
    });
  }

  /** Starts serving the agent's transport. */
  connect(transport: Transport & Partial<StandaloneStream>): Promise<void> {
    if (transport.standaloneOpen !== undefined) {
      const stream = transport as Transport & StandaloneStream;
      this.#stream = stream;
      const { onstandaloneopen } = stream;
      stream.onstandaloneopen = () => {
        onstandaloneopen?.();
        this.#sendMissed();
        for (const opened of [...this.#waiting]) opened();
      };
    }
    return this.#peer.connect(transport);
  }

  async close(): Promise<void> {
    await this.#peer.close();
  }

  /** A request to the agent on its standalone stream, once it has one open (`STANDALONE_WAIT_MS`). */
  async request(method: string, params: Params | undefined, options?: RequestOptions): Promise<Result> {
    if (this.#stream?.standaloneOpen === false) await this.#untilStandaloneOpen(method, options?.signal);
    return this.#peer.request(method, params, options);
  }

  #untilStandaloneOpen(method: string, signal: AbortSignal | undefined): Promise<void> {
    const none = (why: string) => new RpcError(RPC_CODES.internalError, `The agent cannot be asked ${method.slice(0, 64)}: ${why}`, { reason: 'invalid-request' });
    if (this.#waiting.size >= MAX_WAITING_FOR_STANDALONE) return Promise.reject(none(`${MAX_WAITING_FOR_STANDALONE} requests already wait for its stream to open`));
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown) => {
        clearTimeout(timer);
        this.#waiting.delete(opened);
        signal?.removeEventListener('abort', aborted);
        if (error === undefined) resolve();
        else reject(error);
      };
      const opened = () => settle();
      const aborted = () => settle(signal!.reason);
      const timer = setTimeout(() => settle(none(`it has no stream open (GET /mcp) to be asked on, and opened none within ${STANDALONE_WAIT_MS / 1000} s`)), STANDALONE_WAIT_MS);
      unrefTimer(timer);
      this.#waiting.add(opened);
      if (signal?.aborted === true) aborted();
      else signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  /** A notification to the agent on its standalone stream. */
  notify(method: string, params?: Params): Promise<void> {
    return this.#peer.notify(method, params);
  }

  /** Sends `method` without params once, soon, however often it is announced until then. */
  announce(method: string): void {
    if (this.#announcing.has(method)) return;
    this.#announcing.add(method);
    queueMicrotask(() => {
      this.#announcing.delete(method);
      if (!this.#peer.connected) return;
      if (this.#stream?.standaloneOpen === false) this.#missed.add(method);
      else this.#peer.notify(method).catch(() => {});
    });
  }

  /** The agent opened its standalone stream: what it was announced while it had none. */
  #sendMissed(): void {
    const missed = [...this.#missed];
    this.#missed.clear();
    for (const method of missed) this.#peer.notify(method).catch(() => {});
  }

  async #answer(request: IncomingRequest, context: RequestContext): Promise<Result> {
    const { requests, capabilities, serverInfo, instructions } = this.#options;
    if (request.method === 'initialize') {
      return {
        protocolVersion: negotiatedVersion(request.params?.protocolVersion),
        capabilities,
        serverInfo,
        ...(instructions !== undefined && instructions !== '' ? { instructions } : {}),
      };
    }
    if (!Object.hasOwn(requests, request.method)) throw new RpcError(RPC_CODES.methodNotFound, 'Method not found', { reason: 'invalid-request' });
    return requests[request.method]!(request.params ?? {}, context);
  }
}
