import { describe, expect, it } from 'vitest';
import { bubblewrapLaunch } from './bubblewrap/bubblewrap-backend.ts';
import type { BubblewrapPolicy } from './containment-policy.ts';
import { PolicyCache } from './policy-cache.ts';

function policy(revision: string): BubblewrapPolicy {
  return bubblewrapLaunch({ backend: 'bubblewrap', executable: '/usr/bin/bwrap', args: [], env: {}, cwd: '/tmp', revision });
}

describe('PolicyCache', () => {
  it('compiles once per session, revision and server', async () => {
    const cache = new PolicyCache();
    let compiled = 0;
    const compile = (revision: string) => async () => {
      compiled++;
      return policy(revision);
    };
    const key = { sessionId: 's1', revision: 'sha256:a', server: 'files' };
    const [first, second] = await Promise.all([cache.getOrCompile(key, compile('sha256:a')), cache.getOrCompile(key, compile('sha256:a'))]);
    expect(first).toBe(second);
    await cache.getOrCompile({ ...key, revision: 'sha256:b' }, compile('sha256:b'));
    await cache.getOrCompile({ ...key, sessionId: 's2' }, compile('sha256:a'));
    await cache.getOrCompile({ ...key, server: 'docs' }, compile('sha256:a'));
    expect(compiled).toBe(4);
  });

  it('caches null (uncontained) like any other result', async () => {
    const cache = new PolicyCache();
    let compiled = 0;
    const key = { sessionId: 's', revision: 'sha256:a', server: 'x' };
    await cache.getOrCompile(key, async () => (compiled++, null));
    expect(await cache.getOrCompile(key, async () => (compiled++, null))).toBeNull();
    expect(compiled).toBe(1);
  });

  it('does not keep a failed compilation', async () => {
    const cache = new PolicyCache();
    const key = { sessionId: 's', revision: 'sha256:a', server: 'x' };
    await expect(cache.getOrCompile(key, async () => Promise.reject(new Error('no backend')))).rejects.toThrow('no backend');
    expect(cache.size).toBe(0);
    expect(await cache.getOrCompile(key, async () => policy('sha256:a'))).toEqual(policy('sha256:a'));
  });

  it('forgets a session', async () => {
    const cache = new PolicyCache();
    await cache.getOrCompile({ sessionId: 's1', revision: 'r', server: 'a' }, async () => null);
    await cache.getOrCompile({ sessionId: 's1', revision: 'r', server: 'b' }, async () => null);
    await cache.getOrCompile({ sessionId: 's2', revision: 'r', server: 'a' }, async () => null);
    cache.dropSession('s1');
    expect(cache.size).toBe(1);
  });
});
