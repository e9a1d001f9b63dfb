/**
 * ChannelTransport: one bidirectional stream of JSON-RPC messages between two ends (an agent
 * session on the worker and a server on a sidecar), shaped as the MCP SDK's `Transport`, so an
 * SDK `Client` or `Server` connects to it directly and a bridge treats it like any other
 * transport. A link channel (`link/mcp-channel-client-transport.ts`) and the in-memory pair below
 * are the two kinds.
 *
 * What it adds to the SDK's contract, because a channel exists before anyone listens to it:
 * - messages arriving before `start()` are queued, so none is lost between opening a channel and
 *   wiring its callbacks;
 * - `close` is idempotent and `onclose` fires exactly once, after queued messages;
 * - a channel that ended because something failed (`host-offline`, `server-exited`, …) first
 *   calls `onerror` with a `WireError` carrying that reason, then `onclose`. `close(info)` with a
 *   reason ends both ends that way; an orderly close carries none.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LocalError, WireError, type FailureReason } from './errors.ts';

export interface ChannelCloseInfo {
  /** Present when the channel ended because of a failure, absent on an orderly close. */
  reason?: FailureReason;
  message?: string;
}

export abstract class ChannelTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  sessionId?: string;
  #queue: JSONRPCMessage[] | null = [];
  #closed = false;
  #closeInfo: ChannelCloseInfo | null = null;

  get closed(): boolean {
    return this.#closed;
  }

  /** Begins delivering to the callbacks: queued messages first, then a close that already happened. */
  async start(): Promise<void> {
    const queued = this.#queue;
    if (queued === null) throw new LocalError('already-started', 'The channel is already started');
    this.#queue = null;
    for (const message of queued) this.onmessage?.(message);
    if (this.#closeInfo !== null) this.#announceClose(this.#closeInfo);
  }

  /** Sends one message; rejects with a `WireError` (the close reason) once the channel is closed. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new WireError(this.#closeInfo?.reason ?? 'server-exited', this.#closeInfo?.message ?? 'Channel is closed');
    await this.transmit(message);
  }

  /**
   * Sends the channel's last message, then closes it (orderly) whether or not the send went;
   * rejects as `send` does. A link channel does both in one frame where the worker reads that.
   */
  async reply(message: JSONRPCMessage): Promise<void> {
    try {
      await this.send(message);
    } finally {
      await this.close();
    }
  }

  /** Closes both directions; the peer ends the same way, with `info`'s reason when it has one. */
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

  /** The channel has ended (either side); announces it once, after queued messages. */
  protected finish(info: ChannelCloseInfo): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeInfo = info;
    if (this.#queue === null) this.#announceClose(info);
  }

  protected abstract transmit(message: JSONRPCMessage): Promise<void>;
  protected abstract closeRemote(info: ChannelCloseInfo): Promise<void>;

  #announceClose(info: ChannelCloseInfo): void {
    if (info.reason !== undefined) this.onerror?.(new WireError(info.reason, info.message ?? `The channel closed: ${info.reason}`));
    this.onclose?.();
  }
}

class InMemoryChannel extends ChannelTransport {
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

/**
 * Two linked channel ends in one process: what one sends, the other receives, the very object, so
 * a host's mark on its own answer (`audit/host-answers.ts`) goes with it (single-machine mode).
 */
export function createInMemoryChannelPair(): [ChannelTransport, ChannelTransport] {
  const a = new InMemoryChannel();
  const b = new InMemoryChannel();
  a.peer = b;
  b.peer = a;
  return [a, b];
}

/**
 * Why a transport ended, as its consumer sees it: resolves on `onclose` with the reason of the
 * last `WireError` passed to `onerror` (an orderly close: `{}`). Wires both callbacks, keeping
 * any already set; for tests and for callers that only wait for the end.
 */
export function closeInfoOf(transport: Transport): Promise<ChannelCloseInfo> {
  return new Promise((resolve) => {
    let failure: ChannelCloseInfo = {};
    const { onerror, onclose } = transport;
    transport.onerror = (error) => {
      if (error instanceof WireError) failure = { reason: error.reason, message: error.message };
      onerror?.(error);
    };
    transport.onclose = () => {
      onclose?.();
      resolve(failure);
    };
  });
}
