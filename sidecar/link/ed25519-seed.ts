/**
 * Ed25519 private keys made from a 32-byte seed, as PKCS#8 DER (RFC 8410 §7: a fixed prefix, then
 * the seed), the one way the sidecar and the test hosts make a key.
 *
 * Never through a key-generation job (WebCrypto `generateKey`, `node:crypto`'s `generateKeyPair`):
 * under Node 20 a garbage-collected job locks its key's mutex in its destructor, and a GC that ran
 * during an export of that key, which holds the same mutex, hung the process at 0 % CPU for good
 * (gdb: `~KeyGenJob` under `ExportJWKEdKey`; the bench's fleet of 1,000 hosts hit it). A key
 * imported from its seed has no job behind it. An Ed25519 seed is the private key itself (RFC
 * 8032 §5.1.5), so 32 bytes of `crypto.getRandomValues` are exactly what `generateKey` draws.
 *
 * @module
 */

/** Bytes in an Ed25519 seed (the private key). */
export const ED25519_SEED_BYTES = 32;

/** `SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32 bytes) } }`, up to the seed. */
const PKCS8_PREFIX = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

/** The PKCS#8 DER of the Ed25519 key whose seed is `seed`; throws `TypeError` unless it is 32 bytes. */
export function ed25519Pkcs8(seed: Uint8Array): Uint8Array<ArrayBuffer> {
  if (seed.length !== ED25519_SEED_BYTES) throw new TypeError(`An Ed25519 seed is ${ED25519_SEED_BYTES} bytes, not ${seed.length}`);
  const der = new Uint8Array(PKCS8_PREFIX.length + ED25519_SEED_BYTES);
  der.set(PKCS8_PREFIX);
  der.set(seed, PKCS8_PREFIX.length);
  return der;
}

/** The PKCS#8 DER of a new Ed25519 key, its seed from `crypto.getRandomValues`. */
export function randomEd25519Pkcs8(): Uint8Array<ArrayBuffer> {
  return ed25519Pkcs8(crypto.getRandomValues(new Uint8Array(ED25519_SEED_BYTES)));
}
