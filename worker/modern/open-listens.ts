/**
 * The modern listen streams (`subscriptions/listen`) open on this worker, with the agent and the
 * servers each listens to, so a config reload ends those it would no longer allow, as it ends
 * legacy sessions (`config/config-reload.ts`): a listen is no session, and without this an agent
 * removed, re-keyed or no longer given a server kept that server's notifications, and its host's
 * listener, for as long as it kept the stream open. Kept across reloads, as the request counters are.
 *
 * @module
 */

export interface OpenListen {
  readonly agent: string;
  readonly servers: readonly string[];
}

interface Entry extends OpenListen {
  readonly ending: AbortController;
}

export class OpenListens {
  readonly #open = new Set<Entry>();
  /** The config in force (`endWhere` is told each new one); unknown until the first reload. */
  #config: object | undefined;

  get size(): number {
    return this.#open.size;
  }

  /**
   * A listen of `agent` on `servers`: `signal` aborts when a reload ends it; `done` forgets it
   * (idempotent). `authorizedUnder`: the config the listen was allowed by; when a reload put
   * another in force while it opened (its channels open across awaits), it is ended at once, as
   * that reload would have ended it had it been here to see.
   */
  add(agent: string, servers: readonly string[], authorizedUnder?: object): { signal: AbortSignal; done(): void } {
    const entry: Entry = { agent, servers: [...servers], ending: new AbortController() };
    if (authorizedUnder !== undefined && this.#config !== undefined && authorizedUnder !== this.#config) {
      entry.ending.abort('the config changed while it opened');
      return { signal: entry.ending.signal, done: () => {} };
    }
    this.#open.add(entry);
    return { signal: entry.ending.signal, done: () => void this.#open.delete(entry) };
  }

  /**
   * `next` is in force: ends every listen `why` gives a reason for (its stream ends; the agent
   * listens again); returns how many.
   */
  endWhere(next: object, why: (listen: OpenListen) => string | null): number {
    this.#config = next;
    let ended = 0;
    for (const entry of [...this.#open]) {
      const reason = why(entry);
      if (reason === null) continue;
      this.#open.delete(entry);
      entry.ending.abort(reason);
      ended++;
    }
    return ended;
  }
}

/**
 * A listen's stream as `listens` keeps it (none: as it came): the signal that ends it when the
 * agent leaves or a reload ends it, and the slot whose release also forgets it.
 */
export function keptListen(
  listens: OpenListens | undefined,
  listen: { agent: string; servers: readonly string[]; authorizedUnder?: object | undefined },
  signal: AbortSignal,
  slot: { release(): void },
): { signal: AbortSignal; slot: { release(): void } } {
  if (listens === undefined) return { signal, slot };
  const kept = listens.add(listen.agent, listen.servers, listen.authorizedUnder);
  return { signal: AbortSignal.any([signal, kept.signal]), slot: { release: () => (kept.done(), slot.release()) } };
}
