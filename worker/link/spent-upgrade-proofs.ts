/**
 * Upgrade proofs already used, so that each opens one socket at most. A proof stays acceptable
 * while its time is within the window of the worker's clock (`UPGRADE_PROOF_WINDOW_S`), so one
 * copied off the wire or out of a proxy's log could otherwise open sockets for a few minutes: not
 * a link (the in-band challenge after the upgrade needs the key), but a socket a stranger could
 * send a 64 MiB message on. Kept until its own time leaves the window, to the second: a proof of
 * time `t` passes while this worker's clock, in whole seconds, is at most `t + window`, so it is
 * forgotten at `(t + window + 1)` s and not a millisecond sooner. Only verified proofs enter, so
 * only a host's own dials fill it. Past `max` entries the oldest go first.
 *
 * Per process (on Workers, per host's Durable Object, which sees every link of its host): a worker
 * of several processes, or an object evicted from memory, may let a copied proof open one more
 * socket elsewhere; the challenge still refuses it the link.
 *
 * @module
 */

/** Entries kept at most: a fleet's redials for ten minutes, a few hundred bytes each. */
export const SPENT_PROOFS_MAX = 20_000;

export class SpentUpgradeProofs {
  readonly #windowSeconds: number;
  readonly #max: number;
  /** `entity id` + `\n` + nonce → when it may be forgotten; in insertion order, so oldest first. */
  readonly #spent = new Map<string, number>();

  constructor(options: { windowSeconds: number; max?: number }) {
    this.#windowSeconds = options.windowSeconds;
    this.#max = options.max ?? SPENT_PROOFS_MAX;
  }

  get size(): number {
    return this.#spent.size;
  }

  /** Marks the proof of time `timeSeconds` (its `t`) used; false when it already was. */
  spend(entityId: string, nonce: string, timeSeconds: number, nowMs: number): boolean {
    for (const [key, forgetAt] of this.#spent) {
      if (forgetAt > nowMs && this.#spent.size < this.#max) break;
      this.#spent.delete(key);
    }
    const key = `${entityId}\n${nonce}`;
    const forgetAt = this.#spent.get(key);
    if (forgetAt !== undefined && forgetAt > nowMs) return false;
    this.#spent.delete(key);
    this.#spent.set(key, (timeSeconds + this.#windowSeconds + 1) * 1000);
    return true;
  }
}
