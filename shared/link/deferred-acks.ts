/**
 * Host end of a link: the acks of accepted pipelined opens, held back. Such an open's first
 * message came right behind it and is answered by that message's answer anyway, so its ack goes
 * with the channel's first frame out, in the same socket write, instead of in a write of its own;
 * an answer slower than `ACK_DEFER_MS` lets the ack go alone.
 *
 * @module
 */
import { unrefTimer } from '../unref-timer.ts';

/**
 * Longest wait of a deferred ack: nothing waits on it but the worker's open deadline, which is
 * seconds, so a call slower than this gets its ack alone a moment late.
 */
export const ACK_DEFER_MS = 20;

export class DeferredAcks {
  readonly #timers = new Map<number, ReturnType<typeof setTimeout>>();
  readonly #sendAck: (channel: number) => void;

  constructor(sendAck: (channel: number) => void) {
    this.#sendAck = sendAck;
  }

  /** Holds channel `id`'s ack until its first frame out, or `ACK_DEFER_MS`. */
  defer(id: number): void {
    const timer = setTimeout(() => this.flush(id), ACK_DEFER_MS);
    unrefTimer(timer);
    this.#timers.set(id, timer);
  }

  /** Sends channel `id`'s ack now, if one is held (one check while none is). */
  flush(id: number): void {
    if (this.#timers.size > 0 && this.drop(id)) this.#sendAck(id);
  }

  /** Forgets channel `id`'s held ack; true when there was one. */
  drop(id: number): boolean {
    const timer = this.#timers.get(id);
    if (timer === undefined) return false;
    clearTimeout(timer);
    this.#timers.delete(id);
    return true;
  }

  /** The link ended: no held ack will go. */
  clear(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
