/**
 * The channels one end of a link closed (or refused) lately, oldest first, at most
 * `REMEMBERED_CLOSES`. What the peer sent on one before it heard of that (its own close crossing
 * ours: the host closing a modern request's channel behind its answer as the agent leaves; a late
 * answer or ack) is expected, so the endpoint drops it without counting it as a frame for an
 * unknown channel. The peer's close is its last frame there, and the id is forgotten with it. A
 * remembered id is not handed out again, so such a late frame never reaches a new channel.
 *
 * @module
 */

/**
 * How many are remembered: frames the peer sent before it heard of a close arrive within about
 * one round trip of it, a few hundred channels at most even at thousands of calls a second.
 */
export const REMEMBERED_CLOSES = 1024;

export class RecentCloses {
  readonly #ids = new Set<number>();

  remember(id: number): void {
    if (this.#ids.size >= REMEMBERED_CLOSES) this.#ids.delete(this.#ids.values().next().value!);
    this.#ids.add(id);
  }

  has(id: number): boolean {
    return this.#ids.has(id);
  }

  forget(id: number): void {
    this.#ids.delete(id);
  }

  clear(): void {
    this.#ids.clear();
  }
}
