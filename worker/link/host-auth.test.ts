import { describe, expect, it } from 'vitest';
import { decodeBase64Url, encodeBase64Url } from '../../shared/base64url.ts';
import { createNonce, signLinkProof } from '../../shared/link/link-identity.ts';
import { hostCredential, hostSigner } from '../../test/support/configs.ts';
import { createHostVerifier } from './host-auth.ts';

const ORIGIN = '127.0.0.1:8787';
const alice = hostCredential('alice-laptop');
const bob = hostCredential('bob-desktop');
const verifier = () => createHostVerifier([{ 'entity-id': alice.entityId, 'public-key': alice.publicKey }, { 'entity-id': bob.entityId, 'public-key': bob.publicKey }]);

describe('host verification', () => {
  it('accepts a host\'s own proof for this origin and nonce', async () => {
    const nonce = createNonce();
    const signature = await (await hostSigner(alice))({ origin: ORIGIN, entityId: 'alice-laptop', nonce });
    expect(verifier().knows('alice-laptop')).toBe(true);
    expect(await verifier().verify('alice-laptop', { origin: ORIGIN, nonce }, signature)).toBe(true);
  });

  it('refuses another host\'s proof, an unknown host, another nonce and another origin', async () => {
    const check = verifier();
    const nonce = createNonce();
    const byBob = await (await hostSigner(bob))({ origin: ORIGIN, entityId: 'alice-laptop', nonce });
    expect(await check.verify('alice-laptop', { origin: ORIGIN, nonce }, byBob)).toBe(false);
    const byAlice = await (await hostSigner(alice))({ origin: ORIGIN, entityId: 'alice-laptop', nonce });
    expect(check.knows('mallory')).toBe(false);
    expect(await check.verify('mallory', { origin: ORIGIN, nonce }, byAlice)).toBe(false);
    expect(await check.verify('bob-desktop', { origin: ORIGIN, nonce }, byAlice)).toBe(false);
    expect(await check.verify('alice-laptop', { origin: ORIGIN, nonce: createNonce() }, byAlice)).toBe(false);
    expect(await check.verify('alice-laptop', { origin: '127.0.0.1:9999', nonce }, byAlice)).toBe(false);
  });

  it('holds nothing that signs: the listed public key, presented or used as a signing key, proves nothing', async () => {
    const nonce = createNonce();
    const raw = decodeBase64Url(alice.publicKey.slice('ed25519:'.length));
    // The public key's bytes as a "signature", padded to the size of one, and repeated.
    for (const forged of [encodeBase64Url(new Uint8Array([...raw, ...raw])), encodeBase64Url(new Uint8Array(64))]) {
      expect(await verifier().verify('alice-laptop', { origin: ORIGIN, nonce }, forged)).toBe(false);
    }
    // WebCrypto will not even make a signing key of it.
    await expect(crypto.subtle.importKey('raw', raw, { name: 'Ed25519' }, false, ['sign'])).rejects.toThrow();
    const other = (await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify'])) as CryptoKeyPair;
    expect(await verifier().verify('alice-laptop', { origin: ORIGIN, nonce }, await signLinkProof(other.privateKey, { origin: ORIGIN, entityId: 'alice-laptop', nonce }))).toBe(false);
  });

  it('refuses a malformed public key when built', () => {
    expect(() => createHostVerifier([{ 'entity-id': 'alice-laptop', 'public-key': 'ed25519:abc' }])).toThrow(/Invalid public key/);
  });
});
