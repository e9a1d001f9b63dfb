/**
 * Host authentication for the link: which sidecar is dialling, and is it really that host.
 *
 * The upgrade request to `GET /link` names the host (`X-Switchyard-Entity-Id: <entity id>`) and
 * carries its signed upgrade proof (`shared/link/link-upgrade-proof.ts`), checked before the
 * upgrade; the worker then challenges it (`shared/link/link-handshake.ts`). Both signatures are
 * checked with the public key the worker config lists for it:
 *
 * ```json
 * "hosts": [{ "entity-id": "alice-laptop", "public-key": "ed25519:<base64url>" }]
 * ```
 *
 * The config therefore holds nothing that signs: reading it, or being a worker a sidecar dials,
 * yields nothing with which to impersonate a host. Keys are decoded when the worker is built and
 * imported into WebCrypto once per host, on first use.
 *
 * @module
 */
import { importPublicKey, parsePublicKey, verifyLinkProof } from '../../shared/link/link-identity.ts';
import { verifyLinkUpgrade, type LinkUpgradeProof } from '../../shared/link/link-upgrade-proof.ts';

/** One host entry of the worker config. */
export interface HostKeyEntry {
  'entity-id': string;
  /** `ed25519:<base64url of the raw 32 bytes>`, as `switchyard sidecar init` prints it. */
  'public-key': string;
}

export interface HostVerifier {
  /** True when the config lists this host. */
  knows(entityId: string): boolean;
  /** True when `signature` is the host's proof for this worker origin and nonce. Never throws. */
  verify(entityId: string, proof: { origin: string; nonce: string }, signature: string): Promise<boolean>;
  /** True when `proof` is the host's upgrade proof, signed for `proof.origin`. Never throws. */
  verifyUpgrade(entityId: string, proof: LinkUpgradeProof): Promise<boolean>;
}

/** Builds the verifier once per config; a malformed key throws `TypeError` here, not per link. */
export function createHostVerifier(hosts: readonly HostKeyEntry[]): HostVerifier {
  const raw = new Map(hosts.map((h) => [h['entity-id'], parsePublicKey(h['public-key'])]));
  const imported = new Map<string, Promise<CryptoKey>>();
  const keyOf = (entityId: string): Promise<CryptoKey> | undefined => {
    const bytes = raw.get(entityId);
    if (bytes === undefined) return undefined;
    let key = imported.get(entityId);
    if (key === undefined) imported.set(entityId, (key = importPublicKey(bytes)));
    return key;
  };
  return {
    knows: (entityId) => raw.has(entityId),
    async verify(entityId, proof, signature) {
      const key = keyOf(entityId);
      if (key === undefined) return false;
      try {
        return await verifyLinkProof(await key, { origin: proof.origin, entityId, nonce: proof.nonce }, signature);
      } catch {
        return false;
      }
    },
    async verifyUpgrade(entityId, proof) {
      const key = keyOf(entityId);
      if (key === undefined) return false;
      try {
        return await verifyLinkUpgrade(await key, { purpose: 'upgrade', origin: proof.origin, entityId, time: proof.time, nonce: proof.nonce }, proof.signature);
      } catch {
        return false;
      }
    },
  };
}
