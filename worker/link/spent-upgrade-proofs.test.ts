import { describe, expect, it } from 'vitest';
import { SpentUpgradeProofs } from './spent-upgrade-proofs.ts';

const T = 1_900_000_000;

describe('spent upgrade proofs', () => {
  it('takes a nonce once per host, until the proof\'s own time has left the window', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300 });
    expect(spent.spend('alice', 'n1', T, T * 1000)).toBe('fresh');
    expect(spent.spend('alice', 'n1', T, T * 1000 + 1_000)).toBe('replayed');
    expect(spent.spend('bob', 'n1', T, T * 1000 + 1_000)).toBe('fresh');
    expect(spent.spend('alice', 'n1', T, (T + 300) * 1000 + 999)).toBe('replayed');
    // At (T + 301) s the proof no longer passes the time check: forgetting it lets nothing new in.
    expect(spent.spend('alice', 'n1', T, (T + 301) * 1000)).toBe('fresh');
  });

  it('keeps a proof first seen at the window\'s early edge until its late edge has passed, to the millisecond', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300 });
    // Signed at T by a clock 300 s ahead: the worker takes it at T - 300 s, and would still take it at T + 300.999 s.
    expect(spent.spend('alice', 'n1', T, (T - 300) * 1000)).toBe('fresh');
    expect(spent.spend('alice', 'n1', T, (T + 300) * 1000 + 500)).toBe('replayed');
    expect(spent.spend('alice', 'n1', T, (T + 300) * 1000 + 999)).toBe('replayed');
  });

  it('gives each host its own bucket: one host filling its own never lets another\'s used proof in again', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300, maxPerHost: 3 });
    expect(spent.spend('alice', 'a1', T, T * 1000)).toBe('fresh');
    for (const nonce of ['m1', 'm2', 'm3']) expect(spent.spend('mallory', nonce, T, T * 1000)).toBe('fresh');
    // Mallory's bucket is full: her next proof is refused, her used ones stay used, Alice's too.
    expect(spent.spend('mallory', 'm4', T, T * 1000)).toBe('full');
    expect(spent.spend('mallory', 'm1', T, T * 1000)).toBe('replayed');
    expect(spent.spend('alice', 'a1', T, T * 1000)).toBe('replayed');
    expect(spent.spend('alice', 'a2', T, T * 1000)).toBe('fresh');
    expect(spent.size).toBe(5);
    // Room again once her oldest proofs' time has left the window.
    expect(spent.roomAt('mallory', T * 1000)).toBe((T + 301) * 1000);
    expect(spent.roomAt('alice', T * 1000)).toBe(T * 1000);
    expect(spent.spend('mallory', 'm4', T + 301, (T + 301) * 1000)).toBe('fresh');
    expect(spent.size).toBe(3);
  });
});
