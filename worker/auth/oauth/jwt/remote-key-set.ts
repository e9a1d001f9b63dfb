/**
 * An issuer's JSON Web Key Set (RFC 7517) fetched from its `jwks_uri`, kept for 10 minutes and
 * fetched again at once when a token names a key it does not hold (a rotation), at most every
 * 30 seconds, so tokens with made-up `kid`s cannot make the worker hammer the issuer. These are
 * the timings `jose`'s remote key set had before this replaced it (issue 17).
 *
 * A key is used for a token only when it fits: its `kty` (and `crv`) is the algorithm's, its
 * `kid` is the token's when the token names one, its `alg`, `use` and `key_ops` allow verifying
 * with that algorithm. Exactly one key may fit. Each is imported once per algorithm, and must be
 * a public key.
 *
 * @module
 */
import type { JwsAlgorithm } from './jws-algorithms.ts';
import { invalidJwt, JwtError } from './jwt-error.ts';
import { isRecord } from '../../../../shared/records.ts';
import type { JwsHeader } from './jwt-verify.ts';

export const JWKS_TIMEOUT_MS = 5_000;
export const JWKS_MAX_AGE_MS = 600_000;
export const JWKS_COOLDOWN_MS = 30_000;

type Jwk = Record<string, unknown>;

/** No key of the set fits the token: refetched (after the cooldown) before it is final. */
class NoMatchingKey extends JwtError {
  constructor() {
    super('signature', 'no applicable key found in the JSON Web Key Set');
  }
}

/**
 * Workers may not await I/O another request started, so there each request that finds the set
 * stale fetches it itself; elsewhere concurrent requests share one fetch. (Workers name themselves
 * in `navigator.userAgent` since their 2022-03-21 compatibility date.)
 */
const onWorkers = () => globalThis.navigator?.userAgent === 'Cloudflare-Workers';

function fits(jwk: Jwk, alg: string, algorithm: JwsAlgorithm, kid: unknown): boolean {
  const ops = jwk.key_ops;
  return (
    (jwk.ext === undefined || typeof jwk.ext === 'boolean') &&
    (ops === undefined || (Array.isArray(ops) && ops.every((op, i) => typeof op === 'string' && ops.indexOf(op) === i) && ops.includes('verify'))) &&
    jwk.kty === algorithm.kty &&
    (kid === undefined || (typeof kid === 'string' && kid === jwk.kid)) &&
    (jwk.alg === undefined || jwk.alg === alg) &&
    (jwk.use === undefined || jwk.use === 'sig') &&
    (algorithm.crv === undefined || jwk.crv === algorithm.crv)
  );
}

export class RemoteKeySet {
  readonly #url: string;
  readonly #fetch: (url: string, init?: RequestInit) => Promise<Response>;
  #keys: Jwk[] | undefined;
  #fetchedAt = Number.NaN;
  #pending: Promise<void> | undefined;
  #started = 0;
  #applied = 0;
  readonly #imported = new WeakMap<Jwk, Map<string, Promise<CryptoKey>>>();

  constructor(url: string, fetchFn: (url: string, init?: RequestInit) => Promise<Response>) {
    this.#url = url;
    this.#fetch = fetchFn;
  }

  /** The one key of the set that fits a token with this header and algorithm. */
  async keyFor(header: JwsHeader, alg: string, algorithm: JwsAlgorithm): Promise<CryptoKey> {
    if (this.#keys === undefined || !this.#fetchedWithin(JWKS_MAX_AGE_MS)) await this.#reload();
    try {
      return await this.#select(header, alg, algorithm);
    } catch (error) {
      if (!(error instanceof NoMatchingKey) || this.#fetchedWithin(JWKS_COOLDOWN_MS)) throw error;
      await this.#reload();
      return this.#select(header, alg, algorithm);
    }
  }

  #fetchedWithin(ms: number): boolean {
    return Date.now() < this.#fetchedAt + ms;
  }

  #select(header: JwsHeader, alg: string, algorithm: JwsAlgorithm): Promise<CryptoKey> {
    const candidates = this.#keys!.filter((jwk) => fits(jwk, alg, algorithm, header.kid));
    if (candidates.length === 0) throw new NoMatchingKey();
    if (candidates.length > 1) throw invalidJwt('multiple matching keys found in the JSON Web Key Set');
    return this.#import(candidates[0]!, alg, algorithm);
  }

  #import(jwk: Jwk, alg: string, algorithm: JwsAlgorithm): Promise<CryptoKey> {
    let byAlg = this.#imported.get(jwk);
    if (byAlg === undefined) this.#imported.set(jwk, (byAlg = new Map()));
    const cached = byAlg.get(alg);
    if (cached !== undefined) return cached;
    const { alg: _alg, use: _use, ...keyData } = jwk;
    // A private key in the set is imported as one (to sign) and then refused, never used to verify.
    const usages = (jwk.key_ops ?? [jwk.d || jwk.priv ? 'sign' : 'verify']) as KeyUsage[];
    const pending = crypto.subtle.importKey('jwk', { ...keyData, ext: true } as JsonWebKey, algorithm.importParams, true, usages).then((key) => {
      if (key.type !== 'public') throw invalidJwt('JSON Web Key Set members must be public keys');
      return key;
    });
    byAlg.set(alg, pending);
    pending.catch(() => {
      if (byAlg.get(alg) === pending) byAlg.delete(alg);
    });
    return pending;
  }

  async #reload(): Promise<void> {
    if (this.#pending === undefined || onWorkers()) {
      const sequence = ++this.#started;
      const current: Promise<void> = (this.#pending = this.#download()
        .then((keys) => {
          // A slower fetch started earlier must not replace the keys a later one brought.
          if (sequence <= this.#applied) return;
          this.#keys = keys;
          this.#fetchedAt = Date.now();
          this.#applied = sequence;
        })
        .finally(() => {
          if (this.#pending === current) this.#pending = undefined;
        }));
    }
    await this.#pending;
  }

  async #download(): Promise<Jwk[]> {
    const signal = AbortSignal.timeout(JWKS_TIMEOUT_MS);
    const timedOut = () => invalidJwt('request timed out');
    let response: Response;
    try {
      response = await this.#fetch(this.#url, { signal, redirect: 'manual', headers: { accept: 'application/json, application/jwk-set+json' } });
    } catch (error) {
      throw (error as Error)?.name === 'TimeoutError' ? timedOut() : error;
    }
    if (response.status !== 200) throw invalidJwt('Expected 200 OK from the JSON Web Key Set HTTP response');
    let set: unknown;
    try {
      set = await response.json();
    } catch {
      throw signal.aborted ? timedOut() : invalidJwt('Failed to parse the JSON Web Key Set HTTP response as JSON');
    }
    if (!isRecord(set) || !Array.isArray(set.keys) || !set.keys.every(isRecord)) throw invalidJwt('JSON Web Key Set malformed');
    return set.keys;
  }
}
