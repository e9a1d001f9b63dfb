import { describe, expect, it } from 'vitest';
import { WriteBudget } from './write-budget.ts';

describe('WriteBudget', () => {
  it('grants up to its budget in a window, then refuses until the oldest write leaves it', () => {
    let now = 0;
    const budget = new WriteBudget(3, 60_000, () => now);
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([true, true, true, false]);
    expect(budget.minutesUntilFree()).toBe(1);
    now = 59_999;
    expect(budget.take()).toBe(false);
    now = 60_000;
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([true, true, true, false]);
  });

  it('takes back a refunded take', () => {
    const budget = new WriteBudget(1, 60_000, () => 0);
    expect(budget.take()).toBe(true);
    budget.refund();
    expect([budget.take(), budget.take()]).toEqual([true, false]);
  });
});
