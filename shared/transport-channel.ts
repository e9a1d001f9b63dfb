/**
 * TransportChannel: a `MessageChannel` over any MCP SDK `Transport`, the reverse of
 * McpChannelClientTransport. The worker uses it for edge-direct HTTP servers
 * (`StreamableHTTPClientTransport`), the sidecar for stdio processes and workstation-side HTTP
 * servers, so every upstream looks like a channel to whoever bridges it.
 *
 * It adds three things to the transport: queue-until-start and close-once (from
 * `BaseMessageChannel`), the protocol version learnt from the `initialize` answer handed back to
 * the transport (the SDK `Client` normally does this; a pass-through has no `Client`), and an
 * HTTP session ended with DELETE on close, so a server does not keep state for a gone agent.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BaseMessageChannel, type ChannelCloseInfo } from './message-channel.ts';

export interface TransportChannelOptions {
  /**
   * Called when the transport closes on its own (the process exited, the stream ended); returns
   * why, e.g. `server-exited` with the exit code. Absent: an orderly close.
   */
  closeInfo?: () => ChannelCloseInfo;
  /** Transport errors that do not close it (a failed POST, a dropped SSE stream). */
  onerror?: (error: Error) => void;
}

const TERMINATE_TIMEOUT_MS = 2_000;

interface SessionTransport extends Transport {
  terminateSession?: () => Promise<void>;
}

export class TransportChannel extends BaseMessageChannel {
  readonly #transport: SessionTransport;
  readonly #options: TransportChannelOptions;
  #initializeId: string | number | undefined;
  #closing = false;

  private constructor(transport: Transport, options: TransportChannelOptions) {
    super();
    this.#transport = transport;
    this.#options = options;
  }

  /** Wires the transport's callbacks and starts it; the channel itself queues until `start()`. */
  static async open(transport: Transport, options: TransportChannelOptions = {}): Promise<TransportChannel> {
    const channel = new TransportChannel(transport, options);
    transport.onmessage = (message: JSONRPCMessage) => channel.#inbound(message);
    transport.onerror = (error: Error) => options.onerror?.(error);
    transport.onclose = () => {
      if (!channel.#closing) channel.finish(options.closeInfo?.() ?? {});
    };
    await transport.start();
    return channel;
  }

  protected async transmit(message: JSONRPCMessage): Promise<void> {
    if ('method' in message && message.method === 'initialize' && 'id' in message) this.#initializeId = message.id;
    await this.#transport.send(message);
  }

  protected async closeRemote(): Promise<void> {
    this.#closing = true;
    const transport = this.#transport;
    if (transport.terminateSession !== undefined && transport.sessionId !== undefined) {
      // Best effort, bounded: a server that does not answer the DELETE must not hold up the close.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, TERMINATE_TIMEOUT_MS)));
      await Promise.race([transport.terminateSession().catch(() => {}), timeout]);
      clearTimeout(timer);
    }
    await transport.close().catch(() => {});
  }

  #inbound(message: JSONRPCMessage): void {
    if (this.#initializeId !== undefined && 'id' in message && message.id === this.#initializeId && 'result' in message) {
      this.#initializeId = undefined;
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') this.#transport.setProtocolVersion?.(version);
    }
    this.deliver(message);
  }
}
