import { describe, expect, it } from 'vitest';
import { EndedSessions } from './ended-sessions.ts';

const session = (id: string, agent = 'alice', route = 'server:files') => ({ id, agent, route });
const stale = { because: 'trust-profile-stale', why: 'Trust profile "workspace" changed on its host' } as const;

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

  it('keeps a why short', async () => {
    const ended = new EndedSessions();
    ended.record(session('s'), { because: 'server-exited', why: 'x'.repeat(10_000) });
    expect((await ended.find('s', 'alice', 'server:files'))?.why).toHaveLength(300);
  });
});
