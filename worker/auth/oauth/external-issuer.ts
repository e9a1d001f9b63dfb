/**
 * An external OpenID Connect issuer as the source of agents' access tokens: a JWT is accepted
 * when its signature verifies against the issuer's JWKS (`jwt/`; asymmetric algorithms only, so a
 * key published for verification can never be used to mint), `iss` is the issuer, `aud` names
 * this resource (RFC 8707; the configured `audience` instead when set), it has an `exp` (RFC
 * 9068 §2.2) that has not passed, and the configured claim names a configured agent.
 *
 * The JWKS comes from `jwks-uri`, or from the issuer's discovery document, fetched once and
 * kept (the key set caches and refreshes itself: `jwt/remote-key-set.ts`).
 *
 * @module
 */
import { JwtError } from './jwt/jwt-error.ts';
import { verifyJwt } from './jwt/jwt-verify.ts';
import { RemoteKeySet } from './jwt/remote-key-set.ts';
import { isSecureUrl, type ExternalIssuerConfig } from './oauth-config.ts';

export type ExternalVerdict = { agent: string } | { refused: string } | null;

export interface ExternalIssuerDeps {
  /** How the discovery document and the JWKS are fetched; `fetch` by default. */
  fetch?: (url: string, init?: RequestInit) => Promise<Response>;
}

/** True when a token looks like a JWS compact serialisation (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

export class ExternalIssuer {
  readonly #config: ExternalIssuerConfig;
  readonly #fetch: (url: string, init?: RequestInit) => Promise<Response>;
  #keySet: Promise<RemoteKeySet> | undefined;

  constructor(config: ExternalIssuerConfig, deps: ExternalIssuerDeps = {}) {
    this.#config = config;
    this.#fetch = deps.fetch ?? ((url, init) => fetch(url, init));
  }

  get issuer(): string {
    return this.#config.issuer;
  }

  /** Verifies `token` for one of `audiences`; null when it is not a JWT at all. */
  async verify(token: string, audiences: readonly string[], agentNames: ReadonlySet<string>): Promise<ExternalVerdict> {
    if (!looksLikeJwt(token)) return null;
    let payload: Record<string, unknown>;
    try {
      const keys = await this.#keys();
      const audience = this.#config.audience;
      payload = await verifyJwt(token, (header, alg, algorithm) => keys.keyFor(header, alg, algorithm), {
        issuer: this.#config.issuer,
        audiences: audience !== undefined ? [audience] : audiences,
      });
    } catch (error) {
      return { refused: describe(error) };
    }
    const claim = this.#config['agent-claim'];
    const agent = payload[claim];
    if (typeof agent !== 'string' || !agentNames.has(agent)) {
      return { refused: `the token's "${claim}" claim names no agent of this worker` };
    }
    return { agent };
  }

  #keys(): Promise<RemoteKeySet> {
    this.#keySet ??= this.#discover().catch((error: unknown) => {
      this.#keySet = undefined;
      throw error;
    });
    return this.#keySet;
  }

  async #discover(): Promise<RemoteKeySet> {
    const configured = this.#config['jwks-uri'];
    if (configured !== undefined) return this.#keySetAt(configured);
    const issuer = this.#config.issuer.replace(/\/$/, '');
    // Redirects followed here, each hop held to the config's rule, as a configured jwks-uri is:
    // one plain http hop could hand over a document naming anyone's keys.
    let url = `${issuer}/.well-known/openid-configuration`;
    let response: Response;
    for (let hops = 0; ; hops++) {
      response = await this.#fetch(url, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(5_000) });
      const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
      if (location === null) break;
      if (hops === MAX_DISCOVERY_REDIRECTS) throw new Error(`the issuer's discovery document was redirected more than ${MAX_DISCOVERY_REDIRECTS} times`);
      url = new URL(location, url).href;
      if (!isSecureUrl(url)) throw new Error('the issuer\'s discovery document was redirected to an address that is not https');
    }
    if (!response.ok) throw new Error(`the issuer's discovery document answered ${response.status}`);
    const doc = (await response.json()) as { jwks_uri?: unknown; issuer?: unknown };
    if (doc.issuer !== this.#config.issuer) throw new Error('the issuer\'s discovery document names another issuer');
    if (typeof doc.jwks_uri !== 'string') throw new Error('the issuer\'s discovery document has no jwks_uri');
    if (!isSecureUrl(doc.jwks_uri)) throw new Error('the issuer\'s discovery document names a jwks_uri that is not https: (http: only on this machine\'s loopback)');
    return this.#keySetAt(doc.jwks_uri);
  }

  #keySetAt(url: string): RemoteKeySet {
    return new RemoteKeySet(new URL(url).href, this.#fetch);
  }
}

/** Redirects of the discovery document followed, each hop checked. */
const MAX_DISCOVERY_REDIRECTS = 3;

function describe(error: unknown): string {
  const code = error instanceof JwtError ? error.code : 'invalid';
  if (code === 'expired') return 'the token has expired';
  if (code === 'unexpiring') return 'the token has no "exp" claim, and an access token must expire';
  if (code === 'claim') {
    const claim = (error as JwtError).claim;
    return claim === 'aud' ? 'the token was issued for another resource (aud)' : `the token's "${claim}" claim is not accepted`;
  }
  if (code === 'signature') return 'the token\'s signature does not verify against the issuer\'s keys';
  if (code === 'algorithm') return 'the token\'s signing algorithm is not accepted';
  return `the token cannot be verified: ${(error as Error).message}`;
}
