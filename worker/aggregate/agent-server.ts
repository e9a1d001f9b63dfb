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

export class AgentServer {
  readonly #options: AgentServerOptions;
  readonly #peer: JsonRpcPeer;
  readonly #announcing = new Set<string>();
  /** Announcements made while the agent had no standalone stream open. */
  readonly #missed = new Set<string>();
  #stream: StandaloneStream | undefined;

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
      };
    }
    return this.#peer.connect(transport);
  }

  async close(): Promise<void> {
    await this.#peer.close();
  }

  /** A request to the agent on its standalone stream. */
  request(method: string, params: Params | undefined, options?: RequestOptions): Promise<Result> {
    return this.#peer.request(method, params, options);
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
