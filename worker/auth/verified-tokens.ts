/**
 * A bounded cache of bearer tokens that have already passed the full check (sha-256, compared in
 * constant time with every agent's hash, `agent-auth.ts`), so an agent's every request after its
 * first skips the hash: WebCrypto's `digest` is asynchronous and was the largest single cost of a
 * proxied call in the worker (about 60 µs of CPU with the hex decoding, issue 17).
 *
 * Why this keeps credentials safe:
 * - only tokens that verified are kept: a wrong guess is never stored, so guessing neither fills
 *   the cache nor evicts anyone, and a miss always takes the full constant-time path;
 * - the lookup is a `Map` hash lookup: its time depends on the presented string and on whether
 *   that exact string is cached, and the runtime's string hash is randomly seeded per process, so
 *   its timing says nothing about how close a guess is to a cached token (strings are compared
 *   only on a full hash match);
 * - entries live `ttlMs` at most and `max` of them at a time (oldest out first), and the cache
 *   belongs to one config: a changed config builds a new app and with it a new, empty cache.
 *
 * The tokens are held in memory only as long as the worker already trusts them; they are never
 * logged, counted or exposed.
 *
 * @module
 */

export interface VerifiedTokenCacheOptions {
  /** Most tokens kept; default 1024. */
  max?: number;
  /** How long one verification is trusted, in ms; default 10 minutes. */
  ttlMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

export class VerifiedTokenCache<T> {
  readonly #entries = new Map<string, { value: T; until: number }>();
  readonly #max: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: VerifiedTokenCacheOptions = {}) {
    this.#max = options.max ?? 1024;
    this.#ttlMs = options.ttlMs ?? 10 * 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** What `token` verified as, when it did within the TTL. */
  get(token: string): T | undefined {
    const entry = this.#entries.get(token);
    if (entry === undefined) return undefined;
    if (entry.until <= this.#now()) {
      this.#entries.delete(token);
      return undefined;
    }
    return entry.value;
  }

  /** Records a token that has just passed the full check. */
  remember(token: string, value: T): void {
    this.#entries.delete(token);
    if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(token, { value, until: this.#now() + this.#ttlMs });
  }

  get size(): number {
    return this.#entries.size;
  }
}
