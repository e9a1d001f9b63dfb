/**
 * UpstreamClient: the aggregate's MCP client for one upstream server, a `JsonRpcPeer` on the
 * channel to it plus the client's half of the initialize handshake, as the MCP SDK's `Client` did
 * it: ask for the latest protocol version with the agent's client info and mirrored capabilities,
 * fail unless the server answers with a supported version and its capabilities, tell the
 * transport the version, then send `notifications/initialized`.
 *
 * Everything the server sends on its own (sampling, elicitation and roots requests; logging,
 * list changes and other notifications) goes to the owner's callbacks unread.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ClientCapabilities, Implementation, ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcPeer, type IncomingNotification, type IncomingRequest, type Params, type RequestOptions, type Result } from './rpc/json-rpc-peer.ts';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../../shared/protocol-versions.ts';

export interface UpstreamClientOptions {
  clientInfo: Implementation;
  capabilities: ClientCapabilities;
  /** A request of the server's; resolves to the answer (throw an `RpcError` to answer with it). */
  onRequest(request: IncomingRequest, signal: AbortSignal): Promise<Result>;
  onNotification(notification: IncomingNotification): void;
  /** The channel closed. */
  onclose(): void;
  /** The transport reported an error, or a message fit nothing (a `WireError` comes just before `onclose`). */
  onerror(error: Error): void;
}

export class UpstreamClient {
  readonly #options: UpstreamClientOptions;
  readonly #peer: JsonRpcPeer;
  #capabilities: ServerCapabilities = {};
  #instructions: string | undefined;

  constructor(options: UpstreamClientOptions) {
    this.#options = options;
    this.#peer = new JsonRpcPeer({
      request: (request, context) => options.onRequest(request, context.signal),
      notification: (notification) => options.onNotification(notification),
    });
    this.#peer.onclose = () => options.onclose();
    this.#peer.onerror = (error) => options.onerror(error);
  }

  /** Starts the channel and initializes; on failure the channel is closed again. */
  async connect(transport: Transport, timeoutMs: number): Promise<void> {
    await this.#peer.connect(transport);
    try {
      const result = await this.#peer.request('initialize', {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: this.#options.capabilities,
        clientInfo: this.#options.clientInfo,
      }, { timeoutMs });
      const version = result.protocolVersion;
      if (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        throw new Error(`Server's protocol version is not supported: ${String(version).slice(0, 100)}`);
      }
      if (typeof result.capabilities !== 'object' || result.capabilities === null) throw new Error('Server sent an initialize result without capabilities');
      this.#capabilities = result.capabilities as ServerCapabilities;
      if (typeof result.instructions === 'string') this.#instructions = result.instructions;
      transport.setProtocolVersion?.(version);
      await this.#peer.notify('notifications/initialized');
    } catch (error) {
      void this.close().catch(() => {});
      throw error;
    }
  }

  /** What the server declared at initialize. */
  get capabilities(): ServerCapabilities {
    return this.#capabilities;
  }

  get instructions(): string | undefined {
    return this.#instructions;
  }

  request(method: string, params: Params | undefined, options?: RequestOptions): Promise<Result> {
    return this.#peer.request(method, params, options);
  }

  async setLoggingLevel(level: unknown): Promise<void> {
    await this.#peer.request('logging/setLevel', { level });
  }

  /** Forwards the agent's roots change; only when the agent said it sends those (as the SDK client). */
  async sendRootsListChanged(): Promise<void> {
    if (!this.#options.capabilities.roots?.listChanged) return;
    await this.#peer.notify('notifications/roots/list_changed');
  }

  async close(): Promise<void> {
    await this.#peer.close();
  }
}
