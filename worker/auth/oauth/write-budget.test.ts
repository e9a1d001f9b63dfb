import { describe, expect, it } from 'vitest';
import { WriteBudget } from './write-budget.ts';

describe('WriteBudget', () => {
  it('grants up to its budget in a window, then refuses until the oldest write leaves it', () => {
    let now = 0;
    const budget = new WriteBudget(3, 60_000, () => now);
    const takes = () => [budget.take(), budget.take(), budget.take(), budget.take()].map((slot) => slot !== null);
    expect(takes()).toEqual([true, true, true, false]);
    expect(budget.minutesUntilFree()).toBe(1);
    now = 59_999;
    expect(budget.take()).toBeNull();
    now = 60_000;
    expect(takes()).toEqual([true, true, true, false]);
  });

  it('takes back a refunded take, once', () => {
    const budget = new WriteBudget(1, 60_000, () => 0);
    const slot = budget.take()!;
    slot.refund();
    slot.refund();
    expect([budget.take(), budget.take()].map((s) => s !== null)).toEqual([true, false]);
  });

  it('gives back the refunded take\'s own slot, not a later one', () => {
    let now = 0;
    const budget = new WriteBudget(2, 60_000, () => now);
    const first = budget.take()!;
    now = 30_000;
    expect(budget.take()).not.toBeNull();
    first.refund();
    // The take at 30 s is still counted, so it frees its place only at 90 s.
    now = 60_000;
    expect(budget.take()).not.toBeNull();
    expect(budget.take()).toBeNull();
    now = 90_000;
    expect(budget.take()).not.toBeNull();
  });
});
