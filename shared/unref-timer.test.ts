import { afterEach, describe, expect, it, vi } from 'vitest';
import { unrefTimer } from './unref-timer.ts';

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('unrefTimer', () => {
  it('unrefs a Node timer object', () => {
    const timer = setInterval(() => {}, 60_000);
    try {
      expect(timer.hasRef()).toBe(true);
      unrefTimer(timer);
      expect(timer.hasRef()).toBe(false);
    } finally {
      clearInterval(timer);
    }
  });

  it('hands a numeric timer id to Deno.unrefTimer', () => {
    const unrefed: number[] = [];
    vi.stubGlobal('Deno', { unrefTimer: (id: number) => unrefed.push(id) });
    unrefTimer(42);
    expect(unrefed).toEqual([42]);
  });

  it('does nothing where the runtime has neither', () => {
    expect(() => unrefTimer(7)).not.toThrow();
    expect(() => unrefTimer(undefined)).not.toThrow();
  });
});
