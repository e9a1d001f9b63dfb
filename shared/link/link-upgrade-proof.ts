/**
 * The link upgrade proof: a host proves it holds its key in the WebSocket upgrade request to
 * `/link` itself, so the worker upgrades nobody else. Some runtimes (Deno, denoland/deno#15809)
 * buffer a whole WebSocket message, up to 64 MiB, before the worker can look at it: whoever gets
 * a socket can make the worker hold that much. With this proof, a stranger never gets one.
 *
 * The sidecar sends, beside `X-Switchyard-Entity-Id`:
 *
 * ```
 * X-Switchyard-Link-Proof: v1;t=<unix seconds>;o=<worker origin>;n=<nonce>;s=<signature>
 * ```
 *
 * signed with the host key over (UTF-8, one field per line, none can hold a line break):
 *
 * ```
 * switchyard-link-upgrade-v1
 * worker=<origin: canonicalOrigin of the URL the sidecar dialled>
 * entity-id=<the host's entity id>
 * time=<t>
 * nonce=<n>
 * ```
 *
 * Its first line differs from the in-band proof's (`link-identity.ts`), so neither signature can
 * be passed off as the other. The worker takes `t` within `UPGRADE_PROOF_WINDOW_S` of its own
 * clock and each nonce once (`worker/link/link-upgrade-gate.ts`). The in-band challenge still
 * follows the upgrade: it is the freshness proof, chosen by the worker, that needs no clock and
 * no memory shared between a worker's processes. `o` is carried so that a proof for another
 * worker (a relay, a proxy rewriting `Host`) is told apart from a wrong key.
 *
 * Only these fields are signed: the request's other headers (`X-Switchyard-Link-Probe`, the link
 * features) can be added or stripped on a copied request, which is harmless because only the
 * in-band challenge decides whether a link is made.
 *
 * @module
 */
import { decodeBase64Url, encodeBase64Url } from '../base64url.ts';
import { createNonce, linkProofMessage, NONCE_PATTERN, signedLines, signMessage, SIGNATURE_PATTERN, verifySignature, type LinkProofFields } from './link-identity.ts';

/** The upgrade request header carrying the proof: sent by the link client and doctor, read by the link route. */
export const LINK_PROOF_HEADER = 'X-Switchyard-Link-Proof';

/** How far, in seconds, a proof's time may be from the worker's clock, either way. */
export const UPGRADE_PROOF_WINDOW_S = 300;

const UPGRADE_DOMAIN = 'switchyard-link-upgrade-v1';
const ED25519 = { name: 'Ed25519' } as const;
/** What `canonicalOrigin` yields for a URL's host: a name or address, an optional port. */
const ORIGIN_PATTERN = /^[a-z0-9._:[\]-]{1,300}$/;
const HEADER_PATTERN = /^v1;t=(\d{1,12});o=([^;]{1,300});n=([^;]*);s=([^;]*)$/;
/** The longest header value read at all: a real one is under 450 characters (a 300-character origin at most). */
export const LINK_PROOF_HEADER_MAX = 512;

/** What a host signs to be upgraded. */
export interface LinkUpgradeFields {
  purpose: 'upgrade';
  /** The worker's origin (`canonicalOrigin`). */
  origin: string;
  entityId: string;
  /** Unix time in seconds. */
  time: number;
  /** A fresh nonce, base64url. */
  nonce: string;
}

/** Either statement a host key signs: the in-band proof of a challenge, or the upgrade proof. */
export type LinkSignable = LinkProofFields | LinkUpgradeFields;

/** A parsed header: what the worker verifies. */
export interface LinkUpgradeProof {
  time: number;
  origin: string;
  nonce: string;
  signature: string;
}

/** The exact bytes a host signs for an upgrade; fields holding a control character are refused. */
export function linkUpgradeMessage(fields: LinkUpgradeFields): Uint8Array<ArrayBuffer> {
  if (!Number.isSafeInteger(fields.time) || fields.time < 0) throw new TypeError('Invalid link upgrade time: must be a non-negative integer of seconds');
  return signedLines(UPGRADE_DOMAIN, [['worker', fields.origin], ['entity-id', fields.entityId], ['time', String(fields.time)], ['nonce', fields.nonce]], 'link upgrade');
}

/** Signs either statement with the host's private key (the host key's one `sign`); base64url. */
export function signLinkStatement(privateKey: CryptoKey, fields: LinkSignable): Promise<string> {
  return signMessage(privateKey, 'purpose' in fields ? linkUpgradeMessage(fields) : linkProofMessage(fields));
}

/** True when `signature` (base64url) is the host's upgrade proof over these fields. Never throws. */
export function verifyLinkUpgrade(publicKey: CryptoKey, fields: LinkUpgradeFields, signature: string): Promise<boolean> {
  return verifySignature(publicKey, () => linkUpgradeMessage(fields), signature);
}

/**
 * The header value for a dial from `entityId` to the worker at `origin`, signed by `sign` (the
 * host key's): a fresh nonce and the host's current time each time.
 */
export async function createLinkProofHeader(sign: (fields: LinkSignable) => Promise<string>, dial: { origin: string; entityId: string; nowMs?: number }): Promise<string> {
  const time = Math.floor((dial.nowMs ?? Date.now()) / 1000);
  const nonce = createNonce();
  const signature = await sign({ purpose: 'upgrade', origin: dial.origin, entityId: dial.entityId, time, nonce });
  return `v1;t=${time};o=${dial.origin};n=${nonce};s=${signature}`;
}

/** The header's fields, or what is wrong with it (for the refusal; never echoes the value). */
export function parseLinkProofHeader(value: string): { ok: true; proof: LinkUpgradeProof } | { ok: false; problem: string } {
  // Bounded before any parsing: the value is the dialler's to write.
  if (value.length > LINK_PROOF_HEADER_MAX) return { ok: false, problem: `it is longer than ${LINK_PROOF_HEADER_MAX} characters` };
  const match = HEADER_PATTERN.exec(value.trim());
  if (match === null) return { ok: false, problem: 'expected "v1;t=<unix seconds>;o=<worker origin>;n=<nonce>;s=<signature>"' };
  const [, time, origin, nonce, signature] = match as unknown as [string, string, string, string, string];
  if (!ORIGIN_PATTERN.test(origin)) return { ok: false, problem: 'its worker origin "o" is not a host[:port]' };
  if (!NONCE_PATTERN.test(nonce)) return { ok: false, problem: 'its nonce "n" is not 43 base64url characters' };
  if (!SIGNATURE_PATTERN.test(signature)) return { ok: false, problem: 'its signature "s" is not 86 base64url characters' };
  return { ok: true, proof: { time: Number(time), origin, nonce, signature } };
}
