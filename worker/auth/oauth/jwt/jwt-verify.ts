/**
 * Verifies a JWS compact JWT (RFC 7515, RFC 7519) from an external issuer, with WebCrypto and
 * nothing else (this replaced `jose`, 19 KB of dist/worker.js, issue 17, and checks what its
 * `jwtVerify` checked, in the same order):
 * - the header is a JSON object; `crit` may name only `b64`, and an unencoded payload is refused;
 * - `alg` is one of `JWS_ALGORITHMS` (so never `none`, never an HMAC), and the key `keyFor`
 *   returns was imported for that algorithm (the key set only offers keys of its type and curve);
 * - the signature verifies (RSA keys of 2048 bits or more);
 * - the claims are a JSON object, `iss` is the issuer, `aud` is (or holds) one of the audiences,
 *   `iat`, `nbf` and `exp` are numbers when present, `nbf` is not in the future and `exp` is in
 *   the future, with no clock skew allowed;
 * - `exp` is present, which jose left to `requiredClaims` and RFC 9068 §2.2 requires of a JWT
 *   access token: a token that never expires is refused (`unexpiring`), checked where jose
 *   checks presence, after `iss` and `aud` and before any claim's value.
 *
 * @module
 */
import { decodeBase64Url } from '../../../../shared/base64url.ts';
import { isRecord } from '../../../../shared/records.ts';
import { JWS_ALGORITHMS, MIN_RSA_BITS, type JwsAlgorithm } from './jws-algorithms.ts';
import { invalidJwt, JwtError } from './jwt-error.ts';

export type JwsHeader = Record<string, unknown>;

/** The key to verify a token with `alg`; throws a `JwtError` when none fits. */
export type KeyFor = (header: JwsHeader, alg: string, algorithm: JwsAlgorithm) => Promise<CryptoKey>;

export interface JwtExpectations {
  issuer: string;
  audiences: readonly string[];
  /** Seconds since the epoch; the clock by default. */
  now?: number;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

function decode(segment: string, what: string): Uint8Array<ArrayBuffer> {
  try {
    return decodeBase64Url(segment);
  } catch {
    throw invalidJwt(`Failed to base64url decode the ${what}`);
  }
}

function parseObject(bytes: Uint8Array, message: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(strictUtf8.decode(bytes));
  } catch {
    throw invalidJwt(message);
  }
  if (!isRecord(value)) throw invalidJwt(message);
  return value;
}

/** False when the header asks for an unencoded payload (RFC 7797), which no JWT may use. */
function payloadEncoded(header: JwsHeader): boolean {
  const crit = header.crit;
  if (crit === undefined) return true;
  if (!Array.isArray(crit) || crit.length === 0 || crit.some((name) => typeof name !== 'string' || name === '')) {
    throw invalidJwt('"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present');
  }
  for (const name of crit) {
    if (name !== 'b64') throw invalidJwt(`Extension Header Parameter "${name}" is not recognized`);
    if (!Object.hasOwn(header, 'b64')) throw invalidJwt('Extension Header Parameter "b64" is missing');
  }
  if (typeof header.b64 !== 'boolean') throw invalidJwt('The "b64" (base64url-encode payload) Header Parameter must be a boolean');
  return header.b64;
}

const claimError = (claim: string, message: string) => new JwtError('claim', message, claim);

function numericDate(claims: Record<string, unknown>, claim: string): number | undefined {
  const value = claims[claim];
  if (value !== undefined && typeof value !== 'number') throw claimError(claim, `"${claim}" claim must be a number`);
  return value;
}

function checkClaims(claims: Record<string, unknown>, expected: JwtExpectations): void {
  for (const claim of ['iss', 'aud']) {
    if (!Object.hasOwn(claims, claim)) throw claimError(claim, `missing required "${claim}" claim`);
  }
  if (!Object.hasOwn(claims, 'exp')) throw new JwtError('unexpiring', 'Missing required "exp" claim: an access token must expire (RFC 9068 §2.2)', 'exp');
  if (claims.iss !== expected.issuer) throw claimError('iss', 'unexpected "iss" claim value');
  const aud = claims.aud;
  if (!(typeof aud === 'string' ? expected.audiences.includes(aud) : Array.isArray(aud) && expected.audiences.some((a) => aud.includes(a)))) {
    throw claimError('aud', 'unexpected "aud" claim value');
  }
  const now = expected.now ?? Math.floor(Date.now() / 1000);
  numericDate(claims, 'iat');
  const nbf = numericDate(claims, 'nbf');
  if (nbf !== undefined && nbf > now) throw claimError('nbf', '"nbf" claim timestamp check failed');
  const exp = numericDate(claims, 'exp');
  if (exp !== undefined && exp <= now) throw new JwtError('expired', '"exp" claim timestamp check failed', 'exp');
}

/** The token's claims when it verifies; throws a `JwtError` (or the key source's error) otherwise. */
export async function verifyJwt(token: string, keyFor: KeyFor, expected: JwtExpectations): Promise<Record<string, unknown>> {
  const parts = token.split('.');
  if (parts.length !== 3) throw invalidJwt('Invalid Compact JWS');
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
  let headerBytes: Uint8Array;
  try {
    headerBytes = decodeBase64Url(encodedHeader);
  } catch {
    throw invalidJwt('JWS Protected Header is invalid');
  }
  const header = parseObject(headerBytes, 'JWS Protected Header is invalid');
  const encoded = payloadEncoded(header);
  const alg = header.alg;
  if (typeof alg !== 'string' || alg === '') throw invalidJwt('JWS "alg" (Algorithm) Header Parameter missing or invalid');
  const algorithm = JWS_ALGORITHMS.get(alg);
  if (algorithm === undefined) throw new JwtError('algorithm', '"alg" (Algorithm) Header Parameter value not allowed');
  const key = await keyFor(header, alg, algorithm);
  const signature = decode(encodedSignature, 'signature');
  if (algorithm.kty === 'RSA' && !((key.algorithm as RsaHashedKeyAlgorithm).modulusLength >= MIN_RSA_BITS)) {
    throw invalidJwt(`${alg} requires key modulusLength to be ${MIN_RSA_BITS} bits or larger`);
  }
  let verified = false;
  try {
    verified = await crypto.subtle.verify(algorithm.verifyParams, key, signature, encoder.encode(`${encodedHeader}.${encodedPayload}`));
  } catch {
    // A signature WebCrypto cannot even check (wrong length for the curve) does not verify either.
  }
  if (!verified) throw new JwtError('signature', 'signature verification failed');
  if (!encoded) throw invalidJwt('JWTs MUST NOT use unencoded payload');
  const claims = parseObject(decode(encodedPayload, 'payload'), 'JWT Claims Set must be a top-level JSON object');
  checkClaims(claims, expected);
  return claims;
}
