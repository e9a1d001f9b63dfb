import { describe, expect, it } from 'vitest';
import { ENTITY_ID_HEADER } from '../../shared/link/link-types.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER, UPGRADE_PROOF_WINDOW_S } from '../../shared/link/link-upgrade-proof.ts';
import { hostCredential, hostSigner, type HostCredential } from '../../test/support/configs.ts';
import { createHostVerifier } from './host-auth.ts';
import { createLinkUpgradeGate, type LinkUpgradeGateOptions } from './link-upgrade-gate.ts';
import { SpentUpgradeProofs } from './spent-upgrade-proofs.ts';

const ORIGIN = '127.0.0.1:8787';
const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
const KEYS = new Map<string, HostCredential>(['alice-laptop', 'mallory-box'].map((id) => [id, hostCredential(id)]));

function gateOf(options: Partial<LinkUpgradeGateOptions> = {}) {
  const logs: { msg: string; fields?: Record<string, unknown> }[] = [];
  const log = { info: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }), warn: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }) };
  const verifier = createHostVerifier([...KEYS].map(([id, key]) => ({ 'entity-id': id, 'public-key': key.publicKey })));
  const gate = createLinkUpgradeGate({ verifier, allowedHosts: ['127.0.0.1'], log, now: () => NOW, ...options });
  return { gate, logs };
}

async function proofOf(entityId: string, nowMs = NOW): Promise<string> {
  return createLinkProofHeader(await hostSigner(KEYS.get(entityId)!), { origin: ORIGIN, entityId, nowMs });
}

function request(entityId: string, proof?: string): Request {
  return new Request(`http://${ORIGIN}/link`, { headers: { host: ORIGIN, upgrade: 'websocket', [ENTITY_ID_HEADER]: entityId, ...(proof !== undefined ? { [LINK_PROOF_HEADER]: proof } : {}) } });
}

describe('link upgrade gate', () => {
  it('keeps one host\'s used proofs used whatever another host\'s key signs, and refuses that host alone, 429, once its own bucket is full', async () => {
    const { gate } = gateOf({ spent: new SpentUpgradeProofs({ windowSeconds: UPGRADE_PROOF_WINDOW_S, maxPerHost: 4 }) });
    const captured = await proofOf('alice-laptop');
    expect(await gate(request('alice-laptop', captured))).toMatchObject({ ok: true });
    // Mallory's key (stolen, or its host gone rogue) signs dial after dial.
    for (let i = 0; i < 4; i++) expect(await gate(request('mallory-box', await proofOf('mallory-box')))).toMatchObject({ ok: true });
    const full = await gate(request('mallory-box', await proofOf('mallory-box')));
    expect(full).toMatchObject({ ok: false, check: 'too-many-dials' });
    if (full.ok) throw new Error('upgraded');
    expect(full.response.status).toBe(429);
    expect(full.response.headers.get('retry-after')).toBe(String(UPGRADE_PROOF_WINDOW_S + 1));
    expect(await full.response.json()).toMatchObject({ error: { reason: 'limit-reached', check: 'too-many-dials', limit: 'host', max: 4, message: expect.stringMatching(/^Host "mallory-box" signed 4 link requests to this worker within 10 minutes, far more than a sidecar dials: .*in 301 s\)/) } });
    expect(await gate(request('alice-laptop', captured))).toMatchObject({ ok: false, check: 'replayed' });
    expect(await gate(request('alice-laptop', await proofOf('alice-laptop')))).toMatchObject({ ok: true });
  });

  it('judges a proof\'s time only once its signature verified, and says nothing of a host about a request not signed by its key', async () => {
    const { gate, logs } = gateOf();
    // A stranger's request naming alice-laptop, a time long past and a signature that is not hers.
    const forged = `v1;t=1000;o=${ORIGIN};n=${'A'.repeat(43)};s=${'B'.repeat(86)}`;
    expect(await gate(request('alice-laptop', forged))).toMatchObject({ ok: false, check: 'bad-signature' });
    expect(await gate(request('alice-laptop'))).toMatchObject({ ok: false, check: 'no-proof' });
    const said = JSON.stringify(logs);
    expect(said).not.toMatch(/clock|skew/);
    expect(said).not.toContain('Host \\"alice-laptop\\" sent');
    expect(logs.at(-1)?.fields?.problem).toMatch(/^A link request naming host "alice-laptop" carries no X-Switchyard-Link-Proof: /);
    // Her own key's proof whose time is off: the clock is named, as a real host with a wrong clock needs.
    const stale = await gate(request('alice-laptop', await proofOf('alice-laptop', NOW - 412_000)));
    expect(stale).toMatchObject({ ok: false, check: 'clock-skew' });
    expect(logs.at(-1)?.fields).toMatchObject({ check: 'clock-skew', 'skew-seconds': -412, problem: expect.stringMatching(/^The clock of host "alice-laptop" is 412 s behind the worker's \(2030-01-01T12:00:00Z; at most 300 s apart\)/) });
  });

  it('tells a sidecar that dialled a worker with a public-url on loopback how to link there, and a relayed proof apart', async () => {
    const { gate, logs } = gateOf({ publicUrl: 'https://switchyard.example.workers.dev' });
    expect(await gate(request('alice-laptop', await proofOf('alice-laptop')))).toMatchObject({ ok: false, check: 'relayed' });
    expect(logs.at(-1)?.fields?.problem).toBe(
      'Host "alice-laptop" signed this link request for worker "127.0.0.1:8787", but this worker is "switchyard.example.workers.dev" (its "public-url"): its sidecar dialled it on this machine. To link on loopback beside the public URL, set "link-on-loopback": true in the worker config (Deno and Node); under wrangler dev, set "public-url" to http://127.0.0.1:8787 in the config it runs with, or leave it out',
    );
    const elsewhere = gateOf({ publicUrl: 'https://yard.example.com' });
    const relayed = await createLinkProofHeader(await hostSigner(KEYS.get('alice-laptop')!), { origin: 'evil.example', entityId: 'alice-laptop', nowMs: NOW });
    expect(await elsewhere.gate(request('alice-laptop', relayed))).toMatchObject({ ok: false, check: 'relayed' });
    expect(elsewhere.logs.at(-1)?.fields?.problem).toBe('Host "alice-laptop" signed this link request for worker "evil.example", but this worker is "yard.example.com" (its "public-url"): point the sidecar\'s "worker" at that URL; a link relayed through another worker is refused');
    const bare = gateOf({});
    expect(await bare.gate(request('alice-laptop', relayed))).toMatchObject({ ok: false, check: 'relayed' });
    expect(bare.logs.at(-1)?.fields?.problem).toBe('Host "alice-laptop" signed this link request for worker "evil.example", but this worker is "127.0.0.1:8787": a link relayed through another worker is refused; if a proxy rewrites Host, set "public-url" in the worker config to this worker\'s public URL');
  });

  it('does not tell a sidecar to turn on link-on-loopback when it is on: it names the address the worker takes (review s25)', async () => {
    const { gate, logs } = gateOf({ publicUrl: 'https://yard.example.com', linkOnLoopback: true, listenPort: () => 8794 });
    expect(await gate(request('alice-laptop', await proofOf('alice-laptop')))).toMatchObject({ ok: false, check: 'relayed' });
    expect(logs.at(-1)?.fields?.problem).toBe(
      'Host "alice-laptop" signed this link request for worker "127.0.0.1:8787", but this worker is "yard.example.com" (its "public-url"): its sidecar dialled another address on this machine than the worker\'s own, and "link-on-loopback" takes only that one: point the sidecar\'s "worker" at http://127.0.0.1:8794, where this worker listens, or at the public URL',
    );
  });

  it('logs at most one line a minute per check and host, the next counting those left out, and refuses every request all the same', async () => {
    let now = NOW;
    const { gate, logs } = gateOf({ now: () => now });
    const junk = `v1;t=${NOW / 1000};o=${ORIGIN};n=${'A'.repeat(43)};s=${'B'.repeat(86)}`;
    for (let i = 0; i < 50; i++) expect(await gate(request('alice-laptop', junk))).toMatchObject({ ok: false, check: 'bad-signature' });
    for (let i = 0; i < 20; i++) expect(await gate(request(`nobody-${i}`))).toMatchObject({ ok: false, check: 'unknown-host' });
    await gate(request('mallory-box', junk));
    await gate(request('alice-laptop'));
    expect(logs.map((l) => [l.fields?.check, l.fields?.['entity-id']])).toEqual([['bad-signature', 'alice-laptop'], ['unknown-host', 'nobody-0'], ['bad-signature', 'mallory-box'], ['no-proof', 'alice-laptop']]);
    now += 59_999;
    await gate(request('alice-laptop', junk));
    expect(logs).toHaveLength(4);
    now += 1;
    await gate(request('alice-laptop', junk));
    expect(logs.at(-1)?.fields).toMatchObject({ check: 'bad-signature', 'entity-id': 'alice-laptop', 'unlogged-since-last': 50 });
    // A genuine host's refusal, decided after its key verified, is not held back by a stranger's lines.
    expect(await gate(request('alice-laptop', await proofOf('alice-laptop', now - 412_000)))).toMatchObject({ ok: false, check: 'clock-skew' });
    expect(logs.at(-1)?.fields).toMatchObject({ check: 'clock-skew', 'entity-id': 'alice-laptop' });
  });
});
