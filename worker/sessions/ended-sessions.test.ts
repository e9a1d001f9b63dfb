import { afterEach, describe, expect, it, vi } from 'vitest';
import { EndedSessions } from './ended-sessions.ts';

const session = (id: string, agent = 'alice', route = 'server:files') => ({ id, agent, route });
const stale = { because: 'trust-profile-stale', why: 'Trust profile "workspace" changed on its host' } as const;

afterEach(() => vi.restoreAllMocks());

describe('ended sessions', () => {
  it('tells an end to the agent of the session on its route only, at once after it is recorded', async () => {
    const ended = new EndedSessions();
    ended.record(session('s1'), stale);
    expect(await ended.find('s1', 'alice', 'server:files')).toEqual(stale);
    expect(await ended.find('s1', 'bob', 'server:files')).toBeUndefined();
    expect(await ended.find('s1', 'alice', 'aggregate')).toBeUndefined();
    expect(await ended.find('s2', 'alice', 'server:files')).toBeUndefined();
  });

  it('forgets an end after its time, and the oldest past its count', async () => {
    let now = 0;
    const ended = new EndedSessions({ now: () => now, max: 2, keptMs: 1000 });
    ended.record(session('a'), { because: 'idle', why: 'a' });
    now = 500;
    ended.record(session('b'), { because: 'idle', why: 'b' });
    ended.record(session('c'), { because: 'idle', why: 'c' });
    expect(await ended.find('a', 'alice', 'server:files')).toBeUndefined();
    expect(ended.size).toBe(2);
    expect((await ended.find('b', 'alice', 'server:files'))?.why).toBe('b');
    now = 1500;
    expect(await ended.find('b', 'alice', 'server:files')).toBeUndefined();
    ended.record(session('d'), { because: 'idle', why: 'd' });
    await ended.find('d', 'alice', 'server:files');
    expect(ended.size).toBe(1);
  });

  it('drops the oldest end first, whatever order their digests finish in', async () => {
    // The first end's digest finishes last, as the crypto thread pool may have it.
    const sign = crypto.subtle.sign.bind(crypto.subtle);
    let first: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (first = resolve));
    let calls = 0;
    vi.spyOn(crypto.subtle, 'sign').mockImplementation(async (...args: Parameters<typeof sign>) => {
      const mine = calls++;
      const mac = await sign(...args);
      if (mine === 0) await held;
      if (mine === 2) first!();
      return mac;
    });
    const ended = new EndedSessions({ max: 2 });
    for (const id of ['a', 'b', 'c']) ended.record(session(id), { because: 'idle', why: id });
    const kept = await Promise.all(['a', 'b', 'c'].map(async (id) => (await ended.find(id, 'alice', 'server:files'))?.why ?? null));
    expect(kept).toEqual([null, 'b', 'c']);
  });

  it('keeps a why short', async () => {
    const ended = new EndedSessions();
    ended.record(session('s'), { because: 'server-exited', why: 'x'.repeat(10_000) });
    expect((await ended.find('s', 'alice', 'server:files'))?.why).toHaveLength(300);
  });
});
