import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ed25519Pkcs8, randomEd25519Pkcs8 } from './ed25519-seed.ts';

// RFC 8032 §7.1, TEST 1: a seed, its public key, and its signature of the empty message.
const SEED = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const PUBLIC = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
const SIGNATURE = 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';

const hex = (bytes: ArrayBuffer | Uint8Array): string => Buffer.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)).toString('hex');

describe('an Ed25519 key from its seed', () => {
  it('is the RFC 8032 key of that seed: its public key and its signature', async () => {
    const der = ed25519Pkcs8(Buffer.from(SEED, 'hex'));
    const key = await crypto.subtle.importKey('pkcs8', der, { name: 'Ed25519' }, true, ['sign']);
    const { x } = await crypto.subtle.exportKey('jwk', key);
    expect(hex(Buffer.from(x ?? '', 'base64url'))).toBe(PUBLIC);
    expect(hex(await crypto.subtle.sign('Ed25519', key, new Uint8Array(0)))).toBe(SIGNATURE);
    // What WebCrypto exports is the same DER: the encoding is the standard one, byte for byte.
    expect(hex(await crypto.subtle.exportKey('pkcs8', key))).toBe(hex(der));
  });

  it('takes only a 32-byte seed', () => {
    expect(() => ed25519Pkcs8(new Uint8Array(31))).toThrow(new TypeError('An Ed25519 seed is 32 bytes, not 31'));
    expect(() => ed25519Pkcs8(new Uint8Array(64))).toThrow(TypeError);
  });

  it('is a new key each time when the seed is random', () => {
    expect(hex(randomEd25519Pkcs8())).not.toBe(hex(randomEd25519Pkcs8()));
  });
});

// A key-generation job can hang Node 20 (ed25519-seed.ts): the sidecar and the CLI make every key from random bytes.
describe('the sidecar and the CLI run no key-generation job', () => {
  const ROOT = join(import.meta.dirname, '..', '..');
  const GENERATES = /\bgenerateKey(?:Pair)?(?:Sync)?\s*\(/;

  it('calls neither WebCrypto generateKey nor node:crypto generateKey* outside tests', () => {
    const offenders = ['sidecar', 'cli'].flatMap((dir) =>
      (readdirSync(join(ROOT, dir), { recursive: true }) as string[])
        .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
        .map((file) => join(dir, file))
        .filter((file) => GENERATES.test(readFileSync(join(ROOT, file), 'utf8'))),
    );
    expect(offenders).toEqual([]);
  });

  it('tells a call from a mention', () => {
    for (const call of ['crypto.subtle.generateKey({ name: "Ed25519" }', 'generateKeyPairSync("ed25519")', 'await generateKeyPair (', 'generateKeySync("hmac"']) expect(GENERATES.test(call), call).toBe(true);
    for (const mention of ['WebCrypto `generateKey`', 'a generateKeyJob', 'importKey(']) expect(GENERATES.test(mention), mention).toBe(false);
  });
});
