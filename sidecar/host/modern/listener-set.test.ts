import { describe, expect, it } from 'vitest';
import { ListenerSet } from './listener-set.ts';

describe('ListenerSet', () => {
  it('fans notifications out to the listeners present, and reports its size on each change', () => {
    const sizes: number[] = [];
    const set = new ListenerSet((size) => sizes.push(size));
    const heard: string[] = [];
    const leaveA = set.add({ offer: (method) => heard.push(`a:${method}`) });
    const leaveB = set.add({ offer: (method) => heard.push(`b:${method}`) });
    set.dispatch('one', undefined);
    leaveA();
    leaveA();
    set.dispatch('two', undefined);
    leaveB();
    expect(heard).toEqual(['a:one', 'b:one', 'b:two']);
    expect(sizes).toEqual([1, 2, 1, 0]);
  });

  it('subscribes a URI upstream for its first watcher and unsubscribes it after its last', () => {
    const set = new ListenerSet();
    expect(set.retain('a://x')).toBe(true);
    expect(set.retain('a://x')).toBe(false);
    expect(set.release('a://x')).toBe(false);
    expect(set.release('a://x')).toBe(true);
    expect(set.release('a://x')).toBe(false);
    expect(set.retain('a://x')).toBe(true);
  });
});

describe('ListenerSet at its instance\'s end', () => {
  it('tells every listener once, keeps none, and tells a listener added later at once', () => {
    const set = new ListenerSet();
    const told: string[] = [];
    const leaveA = set.add({ offer: () => {}, ended: () => told.push('a') });
    set.add({ offer: () => {}, ended: () => told.push('b') });
    set.retain('a://x');
    set.end();
    set.end();
    expect(told).toEqual(['a', 'b']);
    expect(set.size).toBe(0);
    leaveA();
    expect(set.release('a://x')).toBe(false);
    set.add({ offer: () => {}, ended: () => told.push('late') });
    expect(told).toEqual(['a', 'b', 'late']);
    expect(set.size).toBe(0);
  });
});
