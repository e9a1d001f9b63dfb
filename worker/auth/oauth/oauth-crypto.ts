/**
 * Random secrets and their hashes for the authorization server: every code and token is handed
 * out once and kept only as its sha-256 (the store's record id), and PKCE S256 is checked in
 * constant time.
 *
 * @module
 */
import { encodeBase64Url } from '../../../shared/base64url.ts';
import { constantTimeEqual, sha256, sha256Hex } from '../../../shared/credentials.ts';

export { sha256Hex };

/** A fresh secret: `prefix` + 256 random bits, base64url (the prefix says what it is in a log scan). */
export function randomSecret(prefix: string): string {
  return `${prefix}${encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
export const CODE_VERIFIER_PATTERN = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A S256 challenge: base64url of a sha-256, 43 characters. */
export const CODE_CHALLENGE_PATTERN = /^[A-Za-z0-9\-_]{43}$/;

/** True when `verifier` hashes to `challenge` under S256. */
export async function pkceMatches(verifier: string, challenge: string): Promise<boolean> {
  if (!CODE_VERIFIER_PATTERN.test(verifier)) return false;
  const computed = encodeBase64Url(await sha256(verifier));
  const encoder = new TextEncoder();
  return constantTimeEqual(encoder.encode(computed), encoder.encode(challenge));
}

/** Constant-time comparison of two strings (client secrets, CSRF values). */
export function stringsEqual(a: string, b: string): boolean {
  const encoder = new TextEncoder();
  return constantTimeEqual(encoder.encode(a), encoder.encode(b));
}
