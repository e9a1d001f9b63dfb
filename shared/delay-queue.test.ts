import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DelayQueue, useTimerPerEntry } from './delay-queue.ts';

describe('DelayQueue', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const queue = (ms: number) => new DelayQueue(ms, () => Date.now());

  it('runs each entry its delay after it was added, in order', () => {
    const q = queue(100);
    const ran: string[] = [];
    q.add(() => ran.push('a'));
    vi.advanceTimersByTime(40);
    q.add(() => ran.push('b'));
    vi.advanceTimersByTime(59);
    expect(ran).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['a']);
    vi.advanceTimersByTime(39);
    expect(ran).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['a', 'b']);
    expect(q.size).toBe(0);
  });

  it('never runs a cancelled entry, and stops its timer once it finds nothing live', () => {
    const q = queue(100);
    const ran: string[] = [];
    const a = q.add(() => ran.push('a'));
    const b = q.add(() => ran.push('b'));
    q.add(() => ran.push('c'));
    q.cancel(b);
    expect(q.size).toBe(3); // b waits behind the live head
    q.cancel(a);
    expect(q.size).toBe(1); // a and b dropped at once
    vi.advanceTimersByTime(100);
    expect(ran).toEqual(['c']);
    const d = q.add(() => ran.push('d'));
    q.cancel(d);
    expect(q.size).toBe(0);
    vi.advanceTimersByTime(100);
    expect([ran, vi.getTimerCount()]).toEqual([['c'], 0]);
  });

  it('runs an entry a callback adds at its own time, and an entry cancelled after it ran is a no-op', () => {
    const q = queue(50);
    const ran: string[] = [];
    const first = q.add(() => {
      ran.push('first');
      q.add(() => ran.push('added'));
    });
    vi.advanceTimersByTime(50);
    q.cancel(first);
    expect(ran).toEqual(['first']);
    vi.advanceTimersByTime(49);
    expect(ran).toEqual(['first']);
    vi.advanceTimersByTime(1);
    expect(ran).toEqual(['first', 'added']);
  });

  it('still runs later entries after a callback threw', () => {
    const q = queue(100);
    const ran: string[] = [];
    q.add(() => {
      throw new Error('boom');
    });
    vi.advanceTimersByTime(50);
    q.add(() => ran.push('later'));
    expect(() => vi.advanceTimersByTime(50)).toThrow('boom');
    vi.advanceTimersByTime(50);
    expect(ran).toEqual(['later']);
  });

  it('refuses a delay that is not a finite number of ms', () => {
    expect(() => new DelayQueue(-1)).toThrow(/delay must be a finite number of ms, got -1/);
    expect(() => new DelayQueue(Number.NaN)).toThrow(RangeError);
  });

  it('keeps its deadlines on the monotonic clock when the wall clock jumps', () => {
    vi.useRealTimers();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const wall = vi.spyOn(Date, 'now');
    try {
      const q = new DelayQueue(1000);
      const ran: string[] = [];
      q.add(() => ran.push('a'));
      vi.advanceTimersByTime(500);
      q.add(() => ran.push('b'));
      const then = Date.now();
      wall.mockReturnValue(then + 3_600_000);
      vi.advanceTimersByTime(500);
      expect(ran).toEqual(['a']); // an hour forward does not make 'b' due
      wall.mockReturnValue(then - 3_600_000);
      vi.advanceTimersByTime(499);
      expect(ran).toEqual(['a']);
      vi.advanceTimersByTime(1);
      expect(ran).toEqual(['a', 'b']); // an hour back does not hold it
    } finally {
      wall.mockRestore();
    }
  });
});

describe('DelayQueue with a timer per entry (workerd, where a timer ends with the request that set it)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    useTimerPerEntry();
  });
  afterEach(() => {
    useTimerPerEntry(false);
    vi.useRealTimers();
  });

  it('gives each entry its own timer, so no entry waits on a timer another request set', () => {
    const q = new DelayQueue(100, () => Date.now());
    const ran: string[] = [];
    q.add(() => ran.push('a'));
    vi.advanceTimersByTime(40);
    const b = q.add(() => ran.push('b'));
    q.add(() => ran.push('c'));
    expect(vi.getTimerCount()).toBe(3);
    expect(q.size).toBe(3);
    q.cancel(b);
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(60);
    expect(ran).toEqual(['a']);
    vi.advanceTimersByTime(40);
    expect(ran).toEqual(['a', 'c']);
    expect(q.size).toBe(0);
    q.cancel(b); // a no-op once cancelled
    expect(q.size).toBe(0);
  });
});
