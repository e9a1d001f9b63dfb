/**
 * McpChannelClientTransport: an MCP SDK `Transport` over a `MessageChannel`.
 *
 * The worker's router yields only a channel; the SDK `Client` needs a `Transport`. This adapter
 * is the bridge (upstream M2). It adds exactly three things to the channel: SDK callback names,
 * a failure close surfaced through `onerror` (with its reason) before `onclose`, and disposal
 * that closes the underlying channel.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LocalError, WireError } from './errors.ts';
import type { MessageChannel } from './message-channel.ts';

export class McpChannelClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  sessionId?: string;
  readonly #channel: MessageChannel;
  #started = false;

  constructor(channel: MessageChannel) {
    this.#channel = channel;
  }

  async start(): Promise<void> {
    if (this.#started) throw new LocalError('already-started', 'McpChannelClientTransport is already started');
    this.#started = true;
    this.#channel.onmessage = (message) => this.onmessage?.(message);
    this.#channel.onclose = (info) => {
      if (info.reason !== undefined) {
        this.onerror?.(new WireError(info.reason, info.message ?? `Channel closed: ${info.reason}`));
      }
      this.onclose?.();
    };
    this.#channel.start();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    await this.#channel.send(message);
  }

  async close(): Promise<void> {
    await this.#channel.close();
  }
}
