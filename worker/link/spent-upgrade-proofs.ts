/**
 * Upgrade proofs already used, so that each opens one socket at most. A proof stays acceptable
 * while its time is within the window of the worker's clock (`UPGRADE_PROOF_WINDOW_S`), so one
 * copied off the wire or out of a proxy's log could otherwise open sockets for a few minutes: not
 * a link (the in-band challenge after the upgrade needs the key), but a socket a stranger could
 * send a 64 MiB message on. Kept until its own time leaves the window, to the second: a proof of
 * time `t` passes while this worker's clock, in whole seconds, is at most `t + window`, so it is
 * forgotten at `(t + window + 1)` s and not a millisecond sooner.
 *
 * One bucket per host, each holding at most `maxPerHost` proofs. Only verified proofs enter, so
 * only a host's own key fills its bucket, and no host's dials can push another host's proofs out.
 * A full bucket refuses that host's next proofs (`full`) until its oldest age out, rather than
 * forgetting one: a forgotten proof is one a stranger who copied it could use again, and a bucket
 * fills only when that host's key signs far more dials than a sidecar makes (`SPENT_PROOFS_PER_HOST`).
 * So it fails closed, for that host alone.
 *
 * Per process: a worker of several processes may let a copied proof open one more socket in
 * another; the challenge still refuses it the link. On Workers, the host's Durable Object sees
 * every link of its host, and keeps the proofs in its storage too, since hibernating drops its
 * memory (`adapters/cloudflare/stored-spent-proofs.ts`).
 *
 * @module
 */

/**
 * Proofs kept per host: what one host may have used within one proof's life (at most two windows,
 * about 10 minutes). A sidecar dials at most once a second, backing off to once every 30 s, so it
 * uses a few dozen at worst; doctor a few more.
 */
export const SPENT_PROOFS_PER_HOST = 512;

/** `fresh`: now marked used; `replayed`: it already was; `full`: the host's bucket is full, nothing marked. */
export type SpendVerdict = 'fresh' | 'replayed' | 'full';

/** Where a gate remembers used proofs: this class in memory, or a Durable Object's storage as well (`adapters/cloudflare/stored-spent-proofs.ts`). */
export interface SpentProofStore {
  /** The most proofs one host's bucket holds. */
  readonly maxPerHost: number;
  /** Marks the proof of time `timeSeconds` (its `t`) used by `entityId`, unless it already was or that host's bucket is full. */
  spend(entityId: string, nonce: string, timeSeconds: number, nowMs: number): SpendVerdict | Promise<SpendVerdict>;
  /** When `entityId`'s bucket next has room (ms), or now when it has room already. */
  roomAt(entityId: string, nowMs: number): number | Promise<number>;
}

export class SpentUpgradeProofs implements SpentProofStore {
  readonly #windowSeconds: number;
  readonly #maxPerHost: number;
  /** entity id → nonce → when it may be forgotten (ms). */
  readonly #buckets = new Map<string, Map<string, number>>();

  constructor(options: { windowSeconds: number; maxPerHost?: number }) {
    this.#windowSeconds = options.windowSeconds;
    this.#maxPerHost = options.maxPerHost ?? SPENT_PROOFS_PER_HOST;
  }

  /** Proofs held, all hosts together. */
  get size(): number {
    let size = 0;
    for (const bucket of this.#buckets.values()) size += bucket.size;
    return size;
  }

  /** The most proofs one host's bucket holds. */
  get maxPerHost(): number {
    return this.#maxPerHost;
  }

  /** When a proof of time `timeSeconds` (its `t`) may be forgotten (ms). */
  forgetAt(timeSeconds: number): number {
    return (timeSeconds + this.#windowSeconds + 1) * 1000;
  }

  /** Marks the proof of time `timeSeconds` (its `t`) used by `entityId`, unless it already was or that host's bucket is full. */
  spend(entityId: string, nonce: string, timeSeconds: number, nowMs: number): SpendVerdict {
    let bucket = this.#buckets.get(entityId);
    if (bucket === undefined) this.#buckets.set(entityId, (bucket = new Map()));
    const known = bucket.get(nonce);
    if (known !== undefined && known > nowMs) return 'replayed';
    if (bucket.size >= this.#maxPerHost) prune(bucket, nowMs);
    if (bucket.size >= this.#maxPerHost) return 'full';
    bucket.set(nonce, this.forgetAt(timeSeconds));
    return 'fresh';
  }

  /** When `entityId`'s bucket next has room (ms), or now when it has room already. */
  roomAt(entityId: string, nowMs: number): number {
    const bucket = this.#buckets.get(entityId);
    if (bucket === undefined || bucket.size < this.#maxPerHost) return nowMs;
    return Math.max(nowMs, Math.min(...bucket.values()));
  }
}

function prune(bucket: Map<string, number>, nowMs: number): void {
  for (const [nonce, forgetAt] of bucket) if (forgetAt <= nowMs) bucket.delete(nonce);
}
