/**
 * Worker end of a link: the channel opens sent and not yet answered, each with what settles its
 * caller's promise and what ends its wait (its timer, or its caller's abort listener).
 *
 * @module
 */
import type { McpChannelClientTransport } from './mcp-channel-client-transport.ts';

export interface PendingOpen {
  channel: McpChannelClientTransport;
  resolve(channel: McpChannelClientTransport): void;
  reject(error: Error): void;
  /** Ends the wait: clears the timer or drops the abort listener. */
  stopWaiting(): void;
}

export class PendingOpens {
  readonly #opens = new Map<number, PendingOpen>();

  add(id: number, open: PendingOpen): void {
    this.#opens.set(id, open);
  }

  get(id: number): PendingOpen | undefined {
    return this.#opens.get(id);
  }

  /** The open of channel `id`, no longer waiting and no longer held (to be settled by the caller); undefined when there is none. */
  take(id: number): PendingOpen | undefined {
    const open = this.#opens.get(id);
    if (open === undefined) return undefined;
    this.#opens.delete(id);
    open.stopWaiting();
    return open;
  }

  /** The link ended: every open fails with `error`. */
  failAll(error: Error): void {
    for (const open of this.#opens.values()) {
      open.stopWaiting();
      open.reject(error);
    }
    this.#opens.clear();
  }
}
