/**
 * A message channel: one bidirectional stream of JSON-RPC messages between two ends (an agent
 * session on the worker and a server on a sidecar). Like the MCP SDK's `Transport`, it is tiny on
 * purpose, so a link channel, an in-memory pair or a test double all fit it.
 *
 * Messages arriving before `start()` are queued, so no message is lost between creating a channel
 * and wiring its handler. `close` is idempotent and `onclose` fires exactly once, with the reason
 * when the channel ended because something failed (`host-offline`, `server-exited`, …).
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError, type FailureReason } from './errors.ts';

export interface ChannelCloseInfo {
  /** Present when the channel ended because of a failure, absent on an orderly close. */
  reason?: FailureReason;
  message?: string;
}

export interface MessageChannel {
  /** Begins delivering messages to `onmessage`; messages received earlier are delivered first. */
  start(): void;
  /** Sends one message; rejects with a `WireError` once the channel is closed. */
  send(message: JSONRPCMessage): Promise<void>;
  /** Closes both directions; the peer sees `onclose` with the same info. */
  close(info?: ChannelCloseInfo): Promise<void>;
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: (info: ChannelCloseInfo) => void;
  readonly closed: boolean;
}

/**
 * The delivery half every channel shares: queue until started, close once. Concrete channels
 * call `deliver` for inbound messages and `finish` when the channel ends, and implement
 * `transmit` / `closeRemote` for their medium.
 */
export abstract class BaseMessageChannel implements MessageChannel {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: (info: ChannelCloseInfo) => void;
  #queue: JSONRPCMessage[] | null = [];
  #closed = false;
  #closeInfo: ChannelCloseInfo | null = null;

  get closed(): boolean {
    return this.#closed;
  }

  start(): void {
    const queued = this.#queue;
    if (queued === null) return;
    this.#queue = null;
    for (const message of queued) this.onmessage?.(message);
    if (this.#closeInfo !== null) this.onclose?.(this.#closeInfo);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new WireError(this.#closeInfo?.reason ?? 'server-exited', this.#closeInfo?.message ?? 'Channel is closed');
    await this.transmit(message);
  }

  async close(info: ChannelCloseInfo = {}): Promise<void> {
    if (this.#closed) return;
    await this.closeRemote(info);
    this.finish(info);
  }

  /** Inbound message from the medium. */
  protected deliver(message: JSONRPCMessage): void {
    if (this.#closed) return;
    if (this.#queue !== null) this.#queue.push(message);
    else this.onmessage?.(message);
  }

  /** The channel has ended (either side); fires `onclose` once, after queued messages. */
  protected finish(info: ChannelCloseInfo): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeInfo = info;
    if (this.#queue === null) this.onclose?.(info);
  }

  protected abstract transmit(message: JSONRPCMessage): Promise<void>;
  protected abstract closeRemote(info: ChannelCloseInfo): Promise<void>;
}

class InMemoryChannel extends BaseMessageChannel {
  peer!: InMemoryChannel;

  protected async transmit(message: JSONRPCMessage): Promise<void> {
    const peer = this.peer;
    // Deliver on a later microtask, as a real medium would, so reentrancy bugs show up in tests.
    queueMicrotask(() => peer.receive(message));
  }

  protected async closeRemote(info: ChannelCloseInfo): Promise<void> {
    const peer = this.peer;
    queueMicrotask(() => peer.ended(info));
  }

  receive(message: JSONRPCMessage): void {
    this.deliver(message);
  }

  ended(info: ChannelCloseInfo): void {
    this.finish(info);
  }
}

/** Two linked channel ends in one process: what one sends, the other receives. */
export function createInMemoryChannelPair(): [MessageChannel, MessageChannel] {
  const a = new InMemoryChannel();
  const b = new InMemoryChannel();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
