import { describe, expect, it } from 'vitest';
import { VerifiedTokenCache } from './verified-tokens.ts';

describe('VerifiedTokenCache', () => {
  it('returns what a remembered token verified as, and nothing for another token', () => {
    const cache = new VerifiedTokenCache<string>();
    cache.remember('token-a', 'alice');
    expect(cache.get('token-a')).toBe('alice');
    expect(cache.get('token-b')).toBeUndefined();
    expect(cache.get('token-a ')).toBeUndefined();
  });

  it('forgets a verification once its time to live has passed, so the next request is checked in full', () => {
    let now = 1_000;
    const cache = new VerifiedTokenCache<string>({ ttlMs: 100, now: () => now });
    cache.remember('token-a', 'alice');
    now += 99;
    expect(cache.get('token-a')).toBe('alice');
    now += 1;
    expect(cache.get('token-a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps at most max tokens, the oldest going first', () => {
    const cache = new VerifiedTokenCache<number>({ max: 2 });
    cache.remember('t1', 1);
    cache.remember('t2', 2);
    cache.remember('t3', 3);
    expect(cache.size).toBe(2);
    expect(cache.get('t1')).toBeUndefined();
    expect(cache.get('t2')).toBe(2);
    expect(cache.get('t3')).toBe(3);
  });
});
