import { describe, expect, it } from 'vitest';
import { paramsDigest, RequestStateCodec } from './request-state.ts';

const claims = { agent: 'alice', server: 'everything', revision: 'uncontained', handle: 'h-1', round: 0, method: 'tools/call', digest: 'd' };

describe('requestState codec', () => {
  it('opens what it sealed, with every claim intact', async () => {
    const codec = await RequestStateCodec.create();
    const state = await codec.seal(claims, 60_000);
    expect(await codec.open(state)).toEqual({ ok: true, claims: { v: 1, ...claims, exp: expect.any(Number) } });
  });

  it('refuses a state with anything changed: appended text, a changed claim under the old tag, garbage', async () => {
    const codec = await RequestStateCodec.create();
    const state = await codec.seal(claims, 60_000);
    expect(await codec.open(`${state}-TAMPERED`)).toEqual({ ok: false, problem: 'invalid' });
    const [, tag] = state.split('.');
    const forged = Buffer.from(JSON.stringify({ v: 1, ...claims, agent: 'mallory', exp: Date.now() + 60_000 })).toString('base64url');
    expect(await codec.open(`${forged}.${tag}`)).toEqual({ ok: false, problem: 'invalid' });
    for (const junk of ['', '.', 'abc', 'a.b.c', `${state}.x`, 'x'.repeat(5000)]) expect(await codec.open(junk)).toEqual({ ok: false, problem: 'invalid' });
  });

  it("refuses another host's state: the key is this codec's own", async () => {
    const mine = await RequestStateCodec.create();
    const theirs = await RequestStateCodec.create();
    expect(await mine.open(await theirs.seal(claims, 60_000))).toEqual({ ok: false, problem: 'invalid' });
  });

  it('says a state is expired once its time has passed', async () => {
    let now = 1_000_000;
    const codec = await RequestStateCodec.create({ now: () => now });
    const state = await codec.seal(claims, 10_000);
    now += 9_999;
    expect((await codec.open(state)).ok).toBe(true);
    now += 1;
    expect(await codec.open(state)).toEqual({ ok: false, problem: 'expired' });
  });

  it('keeps the agent it was sealed for, so a caller can refuse it for another agent', async () => {
    const codec = await RequestStateCodec.create();
    const opened = await codec.open(await codec.seal(claims, 60_000));
    expect(opened.ok && opened.claims.agent).toBe('alice');
  });

  it('digests params independently of key order, and differently for different params', async () => {
    expect(await paramsDigest({ name: 'x', arguments: { a: 1, b: [1, { c: 2, d: 3 }] } })).toBe(await paramsDigest({ arguments: { b: [1, { d: 3, c: 2 }], a: 1 }, name: 'x' }));
    expect(await paramsDigest({ name: 'x', arguments: { a: 1 } })).not.toBe(await paramsDigest({ name: 'x', arguments: { a: 2 } }));
  });
});
