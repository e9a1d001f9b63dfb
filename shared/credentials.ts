/**
 * How every bearer credential is handled (DESIGN §5: compared in constant time, stored hashed):
 * the sha-256 of what is presented, hex as config files store it, and one constant-time compare.
 * Hosts present no bearer credential: they sign a challenge (`link/link-identity.ts`).
 * WebCrypto only, so the worker (every runtime), the sidecar and the CLI share this one copy.
 *
 * @module
 */

const encoder = new TextEncoder();

/** sha-256 of a UTF-8 string. */
export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}

/** Lowercase hex sha-256 of a UTF-8 string: the form `token-sha256` and `admin-token-sha256` hold. */
export async function sha256Hex(text: string): Promise<string> {
  let hex = '';
  for (const byte of await sha256(text)) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/** The 32 bytes of a stored sha-256 (64 hex digits, either case); throws `TypeError` otherwise. */
export function hexToBytes(hex: string): Uint8Array {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('Invalid sha-256: expected 64 hex digits');
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Compares two byte arrays without an early exit, so timing does not tell how much matched. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
