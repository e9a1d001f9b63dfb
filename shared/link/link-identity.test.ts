import { describe, expect, it } from 'vitest';
import { decodeBase64Url } from '../base64url.ts';
import {
  canonicalOrigin, createNonce, formatPublicKey, importPublicKey, linkProofMessage, originOfUrl,
  parsePublicKey, PublicKeySchema, signLinkProof, verifyLinkProof, type LinkProofFields,
} from './link-identity.ts';

async function keyPair() {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  return { privateKey: pair.privateKey, raw, text: formatPublicKey(raw), verifyKey: await importPublicKey(raw) };
}

const FIELDS: LinkProofFields = { origin: '127.0.0.1:8787', entityId: 'alice-laptop', nonce: createNonce() };

describe('link identity', () => {
  it('signs a proof that verifies only for the same key, nonce, origin and entity id', async () => {
    const alice = await keyPair();
    const mallory = await keyPair();
    const signature = await signLinkProof(alice.privateKey, FIELDS);
    expect(await verifyLinkProof(alice.verifyKey, FIELDS, signature)).toBe(true);
    expect(await verifyLinkProof(mallory.verifyKey, FIELDS, signature)).toBe(false);
    for (const changed of [{ nonce: createNonce() }, { origin: '127.0.0.1:8788' }, { origin: 'evil.example' }, { entityId: 'bob-desktop' }]) {
      expect(await verifyLinkProof(alice.verifyKey, { ...FIELDS, ...changed }, signature)).toBe(false);
    }
    expect(await verifyLinkProof(alice.verifyKey, FIELDS, 'A'.repeat(86))).toBe(false);
    expect(await verifyLinkProof(alice.verifyKey, FIELDS, 'not base64url!')).toBe(false);
  });

  it('signs a domain-separated message with one field per line, refusing a field that could forge a line', () => {
    const text = new TextDecoder().decode(linkProofMessage({ origin: 'yard.example.com', entityId: 'h', nonce: 'n' }));
    expect(text).toBe('switchyard-link-proof-v1\nworker=yard.example.com\nentity-id=h\nnonce=n');
    expect(() => linkProofMessage({ ...FIELDS, origin: 'a\nentity-id=x' })).toThrow(TypeError);
    expect(() => linkProofMessage({ ...FIELDS, entityId: '' })).toThrow(TypeError);
  });

  it('makes a fresh 32-byte nonce each time', () => {
    const nonces = new Set(Array.from({ length: 100 }, createNonce));
    expect(nonces.size).toBe(100);
    for (const nonce of nonces) expect(decodeBase64Url(nonce)).toHaveLength(32);
  });

  it('writes a public key as ed25519:<base64url> and reads back only that canonical form', async () => {
    const { raw, text } = await keyPair();
    expect(text).toMatch(/^ed25519:[A-Za-z0-9_-]{43}$/);
    expect(parsePublicKey(text)).toEqual(raw);
    expect(PublicKeySchema.safeParse(text).success).toBe(true);
    // The 43rd character carries 2 spare bits: setting one decodes to the same bytes, yet is not the key's spelling.
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const nonCanonical = text.slice(0, -1) + ALPHABET[ALPHABET.indexOf(text.at(-1)!) ^ 1];
    for (const bad of [text.slice(8), `ed25519:${text.slice(8, -1)}`, `ED25519:${text.slice(8)}`, `${text}=`, nonCanonical]) {
      const parsed = PublicKeySchema.safeParse(bad);
      expect([bad, parsed.success]).toEqual([bad, false]);
      if (!parsed.success) expect(parsed.error.issues[0]!.message).toContain('the "public-key" printed by `switchyard sidecar init`');
    }
  });

  it('binds the proof to the origin the sidecar dialled, as the worker sees it in Host', () => {
    expect(originOfUrl('https://Yard.Example.com/base')).toBe('yard.example.com');
    expect(originOfUrl('https://yard.example.com:443')).toBe('yard.example.com');
    expect(originOfUrl('wss://yard.example.com:8443/link')).toBe('yard.example.com:8443');
    expect(originOfUrl('ws://127.0.0.1:8787/link')).toBe('127.0.0.1:8787');
    expect(originOfUrl('http://[::1]:8787')).toBe('[::1]:8787');
    expect(canonicalOrigin('YARD.example.com:443')).toBe('yard.example.com');
    expect(canonicalOrigin('127.0.0.1:80')).toBe('127.0.0.1');
    expect(canonicalOrigin('127.0.0.1:8080')).toBe('127.0.0.1:8080');
  });
});
