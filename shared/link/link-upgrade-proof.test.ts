import { describe, expect, it } from 'vitest';
import { createNonce, formatPublicKey, importPublicKey, signLinkProof, verifyLinkProof } from './link-identity.ts';
import { createLinkProofHeader, linkUpgradeMessage, parseLinkProofHeader, signLinkStatement, verifyLinkUpgrade, type LinkUpgradeFields } from './link-upgrade-proof.ts';

async function keyPair() {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  return { privateKey: pair.privateKey, text: formatPublicKey(raw), verifyKey: await importPublicKey(raw) };
}

const FIELDS: LinkUpgradeFields = { purpose: 'upgrade', origin: '127.0.0.1:8787', entityId: 'alice-laptop', time: 1_900_000_000, nonce: createNonce() };

describe('link upgrade proof', () => {
  it('signs the origin, entity id, time and nonce under its own domain, and verifies for nothing else', async () => {
    const alice = await keyPair();
    const signature = await signLinkStatement(alice.privateKey, FIELDS);
    expect(new TextDecoder().decode(linkUpgradeMessage(FIELDS))).toBe(`switchyard-link-upgrade-v1\nworker=127.0.0.1:8787\nentity-id=alice-laptop\ntime=1900000000\nnonce=${FIELDS.nonce}`);
    expect(await verifyLinkUpgrade(alice.verifyKey, FIELDS, signature)).toBe(true);
    expect(await verifyLinkUpgrade((await keyPair()).verifyKey, FIELDS, signature)).toBe(false);
    for (const changed of [{ time: FIELDS.time + 1 }, { nonce: createNonce() }, { origin: 'evil.example' }, { entityId: 'bob-desk' }]) {
      expect(await verifyLinkUpgrade(alice.verifyKey, { ...FIELDS, ...changed }, signature)).toBe(false);
    }
    // Neither statement passes for the other: a challenge's proof is no upgrade proof, nor the reverse.
    const challenge = { origin: FIELDS.origin, entityId: FIELDS.entityId, nonce: FIELDS.nonce };
    expect(await verifyLinkProof(alice.verifyKey, challenge, signature)).toBe(false);
    expect(await verifyLinkUpgrade(alice.verifyKey, FIELDS, await signLinkProof(alice.privateKey, challenge))).toBe(false);
    expect(await verifyLinkUpgrade(alice.verifyKey, FIELDS, 'A'.repeat(86))).toBe(false);
    expect(() => linkUpgradeMessage({ ...FIELDS, entityId: 'a\nworker=evil' })).toThrow(TypeError);
    expect(() => linkUpgradeMessage({ ...FIELDS, time: 1.5 })).toThrow(TypeError);
  });

  it('writes a header the parser reads back, signed afresh each time, and says what is wrong with a bad one', async () => {
    const alice = await keyPair();
    const sign = (fields: Parameters<typeof signLinkStatement>[1]) => signLinkStatement(alice.privateKey, fields);
    const header = await createLinkProofHeader(sign, { origin: '[::1]:8787', entityId: 'alice-laptop', nowMs: 1_900_000_000_999 });
    expect(header).toMatch(/^v1;t=1900000000;o=\[::1\]:8787;n=[A-Za-z0-9_-]{43};s=[A-Za-z0-9_-]{86}$/);
    const read = parseLinkProofHeader(header);
    if (!read.ok) throw new Error(read.problem);
    expect(read.proof).toMatchObject({ time: 1_900_000_000, origin: '[::1]:8787' });
    expect(await verifyLinkUpgrade(alice.verifyKey, { purpose: 'upgrade', entityId: 'alice-laptop', ...read.proof }, read.proof.signature)).toBe(true);
    expect(await createLinkProofHeader(sign, { origin: 'h', entityId: 'alice-laptop', nowMs: 0 })).not.toBe(await createLinkProofHeader(sign, { origin: 'h', entityId: 'alice-laptop', nowMs: 0 }));
    expect(parseLinkProofHeader('v1;t=1;o=h;n=x;s=y')).toEqual({ ok: false, problem: 'its nonce "n" is not 43 base64url characters' });
    expect(parseLinkProofHeader(header.replace(/;s=.*/, ';s=AAAA'))).toEqual({ ok: false, problem: 'its signature "s" is not 86 base64url characters' });
    expect(parseLinkProofHeader(header.replace('o=[::1]:8787', 'o=a/b'))).toEqual({ ok: false, problem: 'its worker origin "o" is not a host[:port]' });
    // A value past 512 characters is refused before it is parsed, even one that would parse once trimmed.
    expect(parseLinkProofHeader(`${' '.repeat(600)}${header}`)).toEqual({ ok: false, problem: 'it is longer than 512 characters' });
    expect(parseLinkProofHeader(`${header}${' '.repeat(512 - header.length)}`)).toMatchObject({ ok: true });
    expect(parseLinkProofHeader('Bearer x')).toMatchObject({ ok: false, problem: expect.stringContaining('expected "v1;t=') });
  });
});
