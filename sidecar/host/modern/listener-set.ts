/**
 * ListenerSet: the `subscriptions/listen` streams open on one legacy instance, and the resource
 * subscriptions the host holds on that instance for them.
 *
 * A legacy server has one session-wide notification stream and `resources/subscribe`; the host
 * fans that stream out to the agent's listen streams, and subscribes a URI upstream once however
 * many streams watch it (`retain` is true for the first, `release` for the last), so closing one
 * stream never ends another's updates. An open listener keeps its instance alive like a call in
 * flight (`size` counts toward the idle clock).
 *
 * The instance ending (`end`) tells every listener once and drops them all; nothing of a listener
 * is held anywhere else, so one removed when its stream closes leaves nothing behind.
 *
 * @module
 */
export interface Listener {
  /** Offered every server notification; keeps the ones its filter asked for. */
  offer(method: string, params: Record<string, unknown> | undefined): void;
  /**
   * Told once that the instance has ended (the listener is removed then): `graceful` when the
   * host ended it, false when the process ended on its own.
   */
  ended?(graceful: boolean): void;
}

export class ListenerSet {
  readonly #listeners = new Set<Listener>();
  readonly #uris = new Map<string, number>();
  readonly #onChange: (size: number) => void;
  #ended = false;
  #graceful = true;

  constructor(onChange: (size: number) => void = () => {}) {
    this.#onChange = onChange;
  }

  get size(): number {
    return this.#listeners.size;
  }

  /** Adds a listener; the returned function removes it. Once the set has ended, the listener is told so at once and not kept. */
  add(listener: Listener): () => void {
    if (this.#ended) {
      listener.ended?.(this.#graceful);
      return () => {};
    }
    this.#listeners.add(listener);
    this.#onChange(this.#listeners.size);
    return () => {
      if (this.#listeners.delete(listener)) this.#onChange(this.#listeners.size);
    };
  }

  dispatch(method: string, params: Record<string, unknown> | undefined): void {
    for (const listener of this.#listeners) listener.offer(method, params);
  }

  /** The instance has ended: tells every listener, and keeps none (no size change is reported: no idle clock runs for an ended instance). */
  end(graceful = true): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#graceful = graceful;
    const listeners = [...this.#listeners];
    this.#listeners.clear();
    this.#uris.clear();
    for (const listener of listeners) listener.ended?.(graceful);
  }

  /** Counts one more watcher of `uri`; true when it is the first (subscribe upstream). */
  retain(uri: string): boolean {
    const count = this.#uris.get(uri) ?? 0;
    this.#uris.set(uri, count + 1);
    return count === 0;
  }

  /** Counts one watcher of `uri` less; true when it was the last (unsubscribe upstream). */
  release(uri: string): boolean {
    const count = this.#uris.get(uri) ?? 0;
    if (count <= 1) {
      this.#uris.delete(uri);
      return count === 1;
    }
    this.#uris.set(uri, count - 1);
    return false;
  }
}
