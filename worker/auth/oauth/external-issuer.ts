/**
 * An external OpenID Connect issuer as the source of agents' access tokens: a JWT is accepted
 * when its signature verifies against the issuer's JWKS (`jose`; asymmetric algorithms only, so a
 * key published for verification can never be used to mint), `iss` is the issuer, `aud` names
 * this resource (RFC 8707; the configured `audience` instead when set), it has not expired, and
 * the configured claim names a configured agent.
 *
 * The JWKS comes from `jwks-uri`, or from the issuer's discovery document, fetched once and
 * kept (jose caches and refreshes the key set itself).
 *
 * @module
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { ExternalIssuerConfig } from './oauth-config.ts';

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export type ExternalVerdict = { agent: string } | { refused: string } | null;

export interface ExternalIssuerDeps {
  /** A key source for tests (jose `createLocalJWKSet`); by default the issuer's remote JWKS. */
  getKey?: JWTVerifyGetKey;
  fetch?: (url: string, init?: RequestInit) => Promise<Response>;
}

/** True when a token looks like a JWS compact serialisation (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

export class ExternalIssuer {
  readonly #config: ExternalIssuerConfig;
  readonly #fetch: (url: string, init?: RequestInit) => Promise<Response>;
  #getKey: Promise<JWTVerifyGetKey> | undefined;

  constructor(config: ExternalIssuerConfig, deps: ExternalIssuerDeps = {}) {
    this.#config = config;
    this.#fetch = deps.fetch ?? ((url, init) => fetch(url, init));
    if (deps.getKey !== undefined) this.#getKey = Promise.resolve(deps.getKey);
  }

  get issuer(): string {
    return this.#config.issuer;
  }

  /** Verifies `token` for one of `audiences`; null when it is not a JWT at all. */
  async verify(token: string, audiences: readonly string[], agentNames: ReadonlySet<string>): Promise<ExternalVerdict> {
    if (!looksLikeJwt(token)) return null;
    let payload: Record<string, unknown>;
    try {
      const getKey = await this.#keys();
      ({ payload } = await jwtVerify(token, getKey, {
        issuer: this.#config.issuer,
        audience: this.#config.audience ?? [...audiences],
        algorithms: ALGORITHMS,
      }));
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

  #keys(): Promise<JWTVerifyGetKey> {
    this.#getKey ??= this.#discover().catch((error: unknown) => {
      this.#getKey = undefined;
      throw error;
    });
    return this.#getKey;
  }

  async #discover(): Promise<JWTVerifyGetKey> {
    const configured = this.#config['jwks-uri'];
    if (configured !== undefined) return createRemoteJWKSet(new URL(configured));
    const issuer = this.#config.issuer.replace(/\/$/, '');
    const response = await this.#fetch(`${issuer}/.well-known/openid-configuration`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`the issuer's discovery document answered ${response.status}`);
    const doc = (await response.json()) as { jwks_uri?: unknown; issuer?: unknown };
    if (doc.issuer !== this.#config.issuer) throw new Error('the issuer\'s discovery document names another issuer');
    if (typeof doc.jwks_uri !== 'string') throw new Error('the issuer\'s discovery document has no jwks_uri');
    return createRemoteJWKSet(new URL(doc.jwks_uri));
  }
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    return error.claim === 'aud' ? 'the token was issued for another resource (aud)' : `the token's "${error.claim}" claim is not accepted`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey) return 'the token\'s signature does not verify against the issuer\'s keys';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the token\'s signing algorithm is not accepted';
  return `the token cannot be verified: ${(error as Error).message}`;
}
