/**
 * Link identity (DESIGN §5): a host proves who it is with an Ed25519 key pair, never a shared
 * secret. The worker sends a fresh nonce on every link; the sidecar signs it, bound to the worker
 * it dialled and to its own entity id; the worker checks the signature with the public key its
 * config lists for that host. So the worker's config holds nothing that signs, and a signature
 * is good for one nonce at one worker only: a rogue worker can neither replay what it was given
 * nor relay another worker's challenge (the signed origin would be its own).
 *
 * The signed message, UTF-8, fields one per line (none of them can hold a newline):
 *
 * ```
 * switchyard-link-proof-v1
 * worker=<origin: the host[:port] the sidecar dialled, lowercase, no :80 or :443>
 * entity-id=<the host's entity id>
 * nonce=<the challenge's nonce, base64url>
 * ```
 *
 * A public key is written `ed25519:<base64url of the 32 raw key bytes>`, as `switchyard sidecar
 * init` prints it. WebCrypto only (`crypto.subtle`, Ed25519 in Node 20 and Deno), so the worker
 * on every runtime and the sidecar share this one copy.
 *
 * @module
 */
import { decodeBase64Url, encodeBase64Url } from '../base64url.ts';
import * as z from '../zod.ts';

export const PUBLIC_KEY_PREFIX = 'ed25519:';
/** Bytes of randomness in a challenge. */
export const NONCE_BYTES = 32;
const PROOF_DOMAIN = 'switchyard-link-proof-v1';
const ED25519 = { name: 'Ed25519' } as const;

/** base64url without padding: 43 characters for 32 bytes, 86 for 64. */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
export const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{86}$/;
const PUBLIC_KEY_PATTERN = /^ed25519:[A-Za-z0-9_-]{43}$/;

/** `ed25519:<base64url>` of 32 raw public key bytes. */
export function formatPublicKey(raw: Uint8Array): string {
  if (raw.length !== 32) throw new TypeError(`An Ed25519 public key is 32 bytes, not ${raw.length}`);
  return PUBLIC_KEY_PREFIX + encodeBase64Url(raw);
}

/** The 32 raw bytes of a public key written by `formatPublicKey`; throws `TypeError` otherwise. */
export function parsePublicKey(text: string): Uint8Array<ArrayBuffer> {
  if (!PUBLIC_KEY_PATTERN.test(text)) throw new TypeError('Invalid public key: expected "ed25519:" followed by 43 base64url characters');
  const raw = decodeBase64Url(text.slice(PUBLIC_KEY_PREFIX.length));
  // 43 characters carry 258 bits: only the canonical spelling of 32 bytes is accepted.
  if (raw.length !== 32 || encodeBase64Url(raw) !== text.slice(PUBLIC_KEY_PREFIX.length)) throw new TypeError('Invalid public key: not 32 bytes in canonical base64url');
  return raw;
}

/** A host's public key in the worker config. */
export const PublicKeySchema = z.string().check(
  z.refine(
    (text) => {
      try {
        parsePublicKey(text);
        return true;
      } catch {
        return false;
      }
    },
    'must be "ed25519:" followed by 43 base64url characters: the "public-key" printed by `switchyard sidecar init`',
  ),
);

/** A fresh challenge nonce, base64url. */
export function createNonce(): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(NONCE_BYTES)));
}

/**
 * The origin a proof is bound to, from a URL's authority or a `Host` header: lowercase, with a
 * default port (`:80`, `:443`) dropped, so the sidecar's URL and the worker's Host agree.
 */
export function canonicalOrigin(authority: string): string {
  return authority.trim().toLowerCase().replace(/:(80|443)$/, '');
}

/** The origin of a worker URL as the sidecar dials it (`https://Yard.example.com:443/x` → `yard.example.com`). */
export function originOfUrl(url: string): string {
  return canonicalOrigin(new URL(url).host);
}

export interface LinkProofFields {
  /** The worker's origin (`canonicalOrigin`). */
  origin: string;
  entityId: string;
  /** The challenge's nonce, base64url. */
  nonce: string;
}

/**
 * A signed statement's lines as bytes: its domain line, then one `name=value` line per field. A
 * value holding a line break or control character is refused, so no field can forge another line.
 */
export function signedLines(domain: string, fields: ReadonlyArray<readonly [name: string, value: unknown]>, what: string): Uint8Array<ArrayBuffer> {
  for (const [name, value] of fields) {
    if (typeof value !== 'string' || value === '' || /[\x00-\x1f\x7f]/.test(value)) throw new TypeError(`Invalid ${what} field ${name}: must be non-empty text without control characters`);
  }
  return new TextEncoder().encode([domain, ...fields.map(([name, value]) => `${name}=${value as string}`)].join('\n'));
}

/** The exact bytes a host signs; fields holding a line break or control character are refused. */
export function linkProofMessage(fields: LinkProofFields): Uint8Array<ArrayBuffer> {
  return signedLines(PROOF_DOMAIN, [['worker', fields.origin], ['entity-id', fields.entityId], ['nonce', fields.nonce]], 'link proof');
}

/** Signs `message` with the host's private key; the signature as base64url. */
export async function signMessage(privateKey: CryptoKey, message: Uint8Array<ArrayBuffer>): Promise<string> {
  return encodeBase64Url(new Uint8Array(await crypto.subtle.sign(ED25519, privateKey, message)));
}

/** Signs a proof with the host's private key; the signature as base64url. */
export function signLinkProof(privateKey: CryptoKey, fields: LinkProofFields): Promise<string> {
  return signMessage(privateKey, linkProofMessage(fields));
}

/** Imports a public key for `verifyLinkProof` (once per host, not per link). */
export function importPublicKey(raw: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', raw, ED25519, false, ['verify']);
}

/** True when `signature` (base64url) is the host's signature over the bytes `message` builds. Never throws (a field `message` refuses is a false). */
export async function verifySignature(publicKey: CryptoKey, message: () => Uint8Array<ArrayBuffer>, signature: string): Promise<boolean> {
  try {
    if (!SIGNATURE_PATTERN.test(signature)) return false;
    return await crypto.subtle.verify(ED25519, publicKey, decodeBase64Url(signature), message());
  } catch {
    return false;
  }
}

/** True when `signature` (base64url) is the host's signature over these fields. Never throws. */
export function verifyLinkProof(publicKey: CryptoKey, fields: LinkProofFields, signature: string): Promise<boolean> {
  return verifySignature(publicKey, () => linkProofMessage(fields), signature);
}
