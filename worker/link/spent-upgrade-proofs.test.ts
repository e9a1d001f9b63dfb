import { describe, expect, it } from 'vitest';
import { SpentUpgradeProofs } from './spent-upgrade-proofs.ts';

describe('spent upgrade proofs', () => {
  it('takes a nonce once per host, for two windows from when it was first seen', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300 });
    expect(spent.spend('alice', 'n1', 0)).toBe(true);
    expect(spent.spend('alice', 'n1', 1_000)).toBe(false);
    expect(spent.spend('bob', 'n1', 1_000)).toBe(true);
    expect(spent.spend('alice', 'n1', 599_999)).toBe(false);
    // By then the proof's own time is out of the window: forgetting it lets nothing new in.
    expect(spent.spend('alice', 'n2', 600_001)).toBe(true);
    expect(spent.size).toBe(2);
    expect(spent.spend('alice', 'n1', 600_002)).toBe(true);
  });

  it('holds at most max entries, dropping the oldest first', () => {
    const spent = new SpentUpgradeProofs({ windowSeconds: 300, max: 3 });
    for (const nonce of ['a', 'b', 'c', 'd']) expect(spent.spend('alice', nonce, 0)).toBe(true);
    expect(spent.size).toBe(3);
    expect(spent.spend('alice', 'd', 0)).toBe(false);
    expect(spent.spend('alice', 'a', 0)).toBe(true);
  });
});
