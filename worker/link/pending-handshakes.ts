/**
 * Link handshakes upgraded but not yet verified by the challenge. Only a request carrying a host's
 * valid upgrade proof gets this far (`link-upgrade-gate.ts`), so these are a host's own dials: its
 * sidecar, doctor's probe, a redial while an abandoned attempt waits out its deadline, or whoever
 * holds a stolen key. Each holds a socket (and, until the runtime hands it over, whatever frame it
 * is reading: up to 64 MiB under Deno) for up to the handshake deadline; so they are counted, in
 * total and per entity id, and `/link` answers 429 past the total instead of upgrading. A verified
 * link leaves the count the moment it verifies: the links already up never compete for these slots.
 *
 * Per entity id as well as in total, so that one host's redial loop leaves room for the others;
 * the total bounds what any mix of ids can hold. A new handshake for an id whose slots are full
 * takes the place of that id's oldest one, which is closed, instead of being refused: a sidecar
 * that dials again must not be locked out by its own abandoned attempts. (Before the upgrade
 * proof, anyone could name a host and hold its slots; these limits were then what bounded
 * strangers, and are kept as they were, costing an honest host nothing.) On Cloudflare each
 * host's handshakes run in that host's own Durable Object (`host-link-object.ts`, same route), so
 * there the per-entity limit is the one that binds.
 *
 * @module
 */

export interface PendingHandshakeLimits {
  /** Unverified handshakes at once, every host together. */
  total: number;
  /** Unverified handshakes at once for one entity id. */
  perEntity: number;
}

/**
 * 64 in total: a whole fleet redialling after a worker restart gets through in a few rounds,
 * each handshake taking one round trip; 4 per host: a sidecar and doctor's probe, with room for a
 * redial while an abandoned attempt waits out its deadline.
 */
export const PENDING_HANDSHAKE_LIMITS: PendingHandshakeLimits = { total: 64, perEntity: 4 };

export type Admission =
  | { ok: true; release(): void }
  | { ok: false; limit: 'total'; max: number };

interface Holder {
  release(): void;
  evict(): void;
}

export class PendingHandshakes {
  readonly limits: PendingHandshakeLimits;
  #total = 0;
  /** Each entity's pending handshakes, oldest first. */
  readonly #byEntity = new Map<string, Holder[]>();

  constructor(limits: PendingHandshakeLimits = PENDING_HANDSHAKE_LIMITS) {
    this.limits = limits;
  }

  get total(): number {
    return this.#total;
  }

  of(entityId: string): number {
    return this.#byEntity.get(entityId)?.length ?? 0;
  }

  /**
   * A slot for one handshake of `entityId`; `release` may be called any number of times. With
   * the id's slots full, its oldest handshake is released and told to end (`evict`).
   */
  admit(entityId: string, evict: () => void): Admission {
    const holders = this.#byEntity.get(entityId) ?? [];
    if (holders.length >= this.limits.perEntity) {
      const oldest = holders[0]!;
      oldest.release();
      oldest.evict();
    }
    if (this.#total >= this.limits.total) return { ok: false, limit: 'total', max: this.limits.total };
    this.#total++;
    let released = false;
    const holder: Holder = {
      evict,
      release: () => {
        if (released) return;
        released = true;
        this.#total--;
        const left = (this.#byEntity.get(entityId) ?? []).filter((h) => h !== holder);
        if (left.length > 0) this.#byEntity.set(entityId, left);
        else this.#byEntity.delete(entityId);
      },
    };
    this.#byEntity.set(entityId, [...(this.#byEntity.get(entityId) ?? []), holder]);
    return { ok: true, release: holder.release };
  }
}
