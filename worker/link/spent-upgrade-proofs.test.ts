import { describe, expect, it } from 'vitest';
import { SpentUpgradeProofs } from './spent-upgrade-proofs.ts';

const T = 1_900_000_000;

describe('spent upgrade proofs', () => {
  it('takes a nonce once per host, until the proof\'s own time has left the window', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300 });
    expect(spent.spend('alice', 'n1', T, T * 1000)).toBe(true);
    expect(spent.spend('alice', 'n1', T, T * 1000 + 1_000)).toBe(false);
    expect(spent.spend('bob', 'n1', T, T * 1000 + 1_000)).toBe(true);
    expect(spent.spend('alice', 'n1', T, (T + 300) * 1000 + 999)).toBe(false);
    // At (T + 301) s the proof no longer passes the time check: forgetting it lets nothing new in.
    expect(spent.spend('alice', 'n2', T + 1, (T + 301) * 1000)).toBe(true);
    expect(spent.size).toBe(1);
    expect(spent.spend('alice', 'n1', T, (T + 301) * 1000)).toBe(true);
  });

  it('keeps a proof first seen at the window\'s early edge until its late edge has passed, to the millisecond', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300 });
    // Signed at T by a clock 300 s ahead: the worker takes it at T - 300 s, and would still take it at T + 300.999 s.
    expect(spent.spend('alice', 'n1', T, (T - 300) * 1000)).toBe(true);
    expect(spent.spend('alice', 'n1', T, (T + 300) * 1000 + 500)).toBe(false);
    expect(spent.spend('alice', 'n1', T, (T + 300) * 1000 + 999)).toBe(false);
  });

  it('holds at most max entries, dropping the oldest first', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300, max: 3 });
    for (const nonce of ['a', 'b', 'c', 'd']) expect(spent.spend('alice', nonce, T, T * 1000)).toBe(true);
    expect(spent.size).toBe(3);
    expect(spent.spend('alice', 'd', T, T * 1000)).toBe(false);
    expect(spent.spend('alice', 'a', T, T * 1000)).toBe(true);
  });
});
