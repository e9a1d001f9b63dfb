import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalError } from '../../shared/errors.ts';
import { createNonce, importPublicKey, parsePublicKey, signLinkProof, verifyLinkProof } from '../../shared/link/link-identity.ts';
import { ed25519Pkcs8 } from './ed25519-seed.ts';
import { createHostKey, loadHostKey, loadOrCreateHostKey } from './host-key.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-host-key-'));
  dirs.push(dir);
  return dir;
};

async function error(promise: Promise<unknown>): Promise<LocalError> {
  const caught = await promise.then(() => null, (e: unknown) => e);
  expect(caught).toBeInstanceOf(LocalError);
  return caught as LocalError;
}

describe('host key', () => {
  it('is written once as a 0600 PKCS#8 PEM and signs proofs its printed public key verifies', async () => {
    const path = join(scratch(), 'host.key');
    const created = await createHostKey(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END PRIVATE KEY-----\n$/);
    const loaded = await loadHostKey(path);
    expect(loaded.publicKey).toBe(created.publicKey);
    const fields = { origin: 'yard.example.com', entityId: 'alice-laptop', nonce: createNonce() };
    expect(await verifyLinkProof(await importPublicKey(parsePublicKey(created.publicKey)), fields, await loaded.sign(fields))).toBe(true);
  });

  it('is what openssl reads: the same public key, and the same PEM written back', async () => {
    const path = join(scratch(), 'host.key');
    const key = await createHostKey(path);
    const der = execFileSync('openssl', ['pkey', '-in', path, '-pubout', '-outform', 'DER']);
    expect(new Uint8Array(der.subarray(der.length - 32))).toEqual(parsePublicKey(key.publicKey));
    // openssl re-encodes what it parsed: the file is standard PKCS#8 PEM, byte for byte.
    expect(execFileSync('openssl', ['pkey', '-in', path], { encoding: 'utf8' })).toBe(readFileSync(path, 'utf8'));
  });

  it('is made from a seed drawn from crypto.getRandomValues, not by a key-generation job (which can hang Node 20)', async () => {
    const seed = new Uint8Array(32).map((_, i) => i * 7 + 1);
    const random = vi.spyOn(crypto, 'getRandomValues').mockImplementationOnce(<T extends ArrayBufferView | null>(array: T): T => {
      (array as unknown as Uint8Array).set(seed);
      return array;
    });
    const generate = vi.spyOn(crypto.subtle, 'generateKey');
    try {
      const path = join(scratch(), 'host.key');
      const created = await createHostKey(path);
      expect(generate).not.toHaveBeenCalled();
      expect(random).toHaveBeenCalledTimes(1);
      const der = ed25519Pkcs8(seed);
      expect(readFileSync(path, 'utf8')).toBe(`-----BEGIN PRIVATE KEY-----\n${Buffer.from(der).toString('base64')}\n-----END PRIVATE KEY-----\n`);
      // That seed's key signs, and the worker verifies with the public key printed for it.
      const fields = { origin: 'yard.example.com', entityId: 'alice-laptop', nonce: createNonce() };
      const signer = await crypto.subtle.importKey('pkcs8', der, { name: 'Ed25519' }, false, ['sign']);
      const printed = await importPublicKey(parsePublicKey(created.publicKey));
      expect(await verifyLinkProof(printed, fields, await signLinkProof(signer, fields))).toBe(true);
      expect(await verifyLinkProof(printed, fields, await created.sign(fields))).toBe(true);
    } finally {
      random.mockRestore();
      generate.mockRestore();
    }
  });

  it('never overwrites an existing key; loadOrCreate keeps it', async () => {
    const path = join(scratch(), 'host.key');
    const first = await loadOrCreateHostKey(path);
    const before = readFileSync(path, 'utf8');
    expect((await error(createHostKey(path))).code).toBe('key-exists');
    const again = await loadOrCreateHostKey(path);
    expect([first.created, again.created]).toEqual([true, false]);
    expect(again.key.publicKey).toBe(first.key.publicKey);
    expect(readFileSync(path, 'utf8')).toBe(before);
    // Written beside it and linked into place (review s21): nothing else is left in the folder.
    expect(readdirSync(join(path, '..'))).toEqual(['host.key']);
  });

  it('refuses a key other users can read, a missing one and one that is not an Ed25519 PEM, saying what to do', async () => {
    const dir = scratch();
    const path = join(dir, 'host.key');
    await createHostKey(path);
    chmodSync(path, 0o640);
    expect((await error(loadHostKey(path))).message).toBe(`Host key "${path}" is readable by its group: run chmod 600 "${path}"`);
    chmodSync(path, 0o604);
    expect((await error(loadHostKey(path))).message).toBe(`Host key "${path}" is readable by other users: run chmod 600 "${path}"`);
    expect((await error(loadHostKey(join(dir, 'none.key')))).message).toBe(`Cannot read the host key "${join(dir, 'none.key')}": not found: create it with \`sidecar init --config-dir DIR --worker URL --entity-id ID\` (\`switchyard sidecar init …\`, or \`node sidecar.js sidecar init …\` on a workstation)`);
    expect((await error(loadHostKey(dir))).message).toBe(`Cannot read the host key "${dir}": a folder, not a file`);
    const junk = join(dir, 'junk.key');
    writeFileSync(junk, 'host_0123456789abcdef\n', { mode: 0o600 });
    expect((await error(loadHostKey(junk))).message).toMatch(/is not a PEM private key/);
    const rsa = join(dir, 'rsa.key');
    writeFileSync(rsa, execFileSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:1024']), { mode: 0o600 });
    expect((await error(loadHostKey(rsa))).message).toMatch(/is not an Ed25519 private key/);
  });
});
