import { describe, expect, it, vi } from 'vitest';
import { InMemorySessionTable, type AgentSession } from './session-table.ts';

function fakeSession(id: string, agent = 'alice'): AgentSession & { closedWith: string[]; busy: number } {
  const session = {
    id,
    agent,
    route: 'aggregate',
    servers: ['everything'],
    channelCount: 1,
    busy: 0,
    closedWith: [] as string[],
    get inFlight() {
      return session.busy;
    },
    handle: async () => new Response(null),
    close: async (why?: string) => {
      session.closedWith.push(why ?? '');
    },
  };
  return session;
}

describe('session table', () => {
  it('adds, finds, lists and removes sessions', () => {
    const table = new InMemorySessionTable({ idleMs: 1000, now: () => 5 });
    const s = fakeSession('s1');
    table.add(s);
    expect(table.get('s1')).toBe(s);
    expect(table.size).toBe(1);
    expect(table.list()).toEqual([{ id: 's1', agent: 'alice', route: 'aggregate', servers: ['everything'], channels: 1, lastSeen: 5 }]);
    table.remove('s1');
    expect(table.get('s1')).toBeUndefined();
    table.dispose();
  });

  it('tells of each session that opened, and of its end with why and after how long; one that never opened, of nothing', async () => {
    let now = 0;
    const events: unknown[][] = [];
    const table = new InMemorySessionTable({
      idleMs: 100,
      sweepIntervalMs: 60_000,
      now: () => now,
      onSession: { opened: (s) => void events.push(['opened', s.id]), ended: (s, because, ms) => void events.push(['ended', s.id, because, ms]) },
    });
    // An initialize that failed: added, never opened, taken out again.
    table.add(fakeSession('failed'));
    table.remove('failed');
    for (const id of ['idle', 'agent-closed', 'upstream', 'config', 'room', 'last']) {
      table.add(fakeSession(id, id === 'room' ? 'bob' : 'alice'));
      table.opened(id);
    }
    table.opened('idle'); // told once
    now = 50;
    for (const id of ['agent-closed', 'upstream', 'config', 'room', 'last']) table.touch(id);
    table.remove('agent-closed');
    table.remove('upstream', { because: 'server-exited', why: 'the server exited' });
    now = 120;
    await table.sweep();
    await table.closeWhere((session) => (session.id === 'config' ? 'agent removed' : null));
    (await table.admit('bob', 1)).release();
    await table.closeAll();
    expect(events).toEqual([
      ...['idle', 'agent-closed', 'upstream', 'config', 'room', 'last'].map((id) => ['opened', id]),
      ['ended', 'agent-closed', 'closed', 50],
      ['ended', 'upstream', 'server-exited', 50],
      ['ended', 'idle', 'idle', 120],
      ['ended', 'config', 'config-changed', 120],
      ['ended', 'room', 'limit-reached', 120],
      ['ended', 'last', 'shutdown', 120],
    ]);
    table.dispose();
  });

  it('keeps no sweep timer until it holds a session, and none once disposed (review s20: a Workers session object whose initialize was refused kept one)', () => {
    vi.useFakeTimers();
    try {
      const table = new InMemorySessionTable({ idleMs: 1000 });
      expect(vi.getTimerCount()).toBe(0);
      table.add(fakeSession('s1'));
      expect(vi.getTimerCount()).toBe(1);
      table.remove('s1');
      table.dispose();
      table.add(fakeSession('s2'));
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('closes sessions idle for the idle time, keeps touched and busy ones', async () => {
    let now = 0;
    const table = new InMemorySessionTable({ idleMs: 100, sweepIntervalMs: 60_000, now: () => now });
    const idle = fakeSession('idle');
    const touched = fakeSession('touched');
    const busy = fakeSession('busy');
    busy.busy = 1;
    for (const s of [idle, touched, busy]) table.add(s);
    now = 90;
    table.touch('touched');
    now = 150;
    expect(await table.sweep()).toBe(1);
    expect(idle.closedWith).toEqual(['idle']);
    expect(table.get('idle')).toBeUndefined();
    expect(table.get('touched')).toBe(touched);
    expect(table.get('busy')).toBe(busy);
    table.dispose();
  });

  it('lets requests in flight protect a session only for the busy limit', async () => {
    let now = 0;
    const table = new InMemorySessionTable({ idleMs: 100, maxBusyMs: 1000, sweepIntervalMs: 60_000, now: () => now });
    const stuck = fakeSession('stuck');
    stuck.busy = 1;
    table.add(stuck);
    now = 500;
    expect(await table.sweep()).toBe(0);
    now = 1600;
    expect(await table.sweep()).toBe(1);
    expect(stuck.closedWith).toEqual(['idle']);
    table.dispose();
  });

  it('counts the busy limit from the oldest request in flight: a session always busy with calls that are answered is kept (review s19)', async () => {
    let now = 0;
    const table = new InMemorySessionTable({ idleMs: 100, maxBusyMs: 1000, sweepIntervalMs: 60_000, now: () => now });
    const working = Object.assign(fakeSession('working'), { oldestInFlightAt: 0 });
    const stuck = Object.assign(fakeSession('stuck'), { oldestInFlightAt: 0 });
    working.busy = stuck.busy = 1;
    table.add(working);
    table.add(stuck);
    // Every sweep finds each busy; working's oldest call is always a recent one, stuck's the same.
    for (now = 300; now <= 3000; now += 300) {
      working.oldestInFlightAt = now - 200;
      await table.sweep();
    }
    expect(working.closedWith).toEqual([]);
    expect(table.get('working')).toBe(working);
    expect(stuck.closedWith).toEqual(['idle']);
    expect(table.get('stuck')).toBeUndefined();
    table.dispose();
  });

  it('closes every session on closeAll', async () => {
    const table = new InMemorySessionTable({ idleMs: 100 });
    const a = fakeSession('a');
    const b = fakeSession('b', 'bob');
    table.add(a);
    table.add(b);
    await table.closeAll();
    expect(a.closedWith).toEqual(['shutdown']);
    expect(b.closedWith).toEqual(['shutdown']);
    expect(table.size).toBe(0);
    table.dispose();
  });
});

describe('session table limits', () => {
  it('ends the agent\'s oldest idle session to admit one past its limit, and no other agent\'s', async () => {
    let now = 0;
    const table = new InMemorySessionTable({ idleMs: 60_000, sweepIntervalMs: 60_000, now: () => now });
    const old = fakeSession('old');
    const newer = fakeSession('newer');
    const bob = fakeSession('bob-1', 'bob');
    table.add(bob);
    table.add(old);
    now = 10;
    table.add(newer);
    const room = await table.admit('alice', 2);
    expect(old.closedWith).toEqual(['limit']);
    expect(table.get('old')).toBeUndefined();
    expect(newer.closedWith).toEqual([]);
    expect(bob.closedWith).toEqual([]);
    // The room is counted until released: a second opening at once must make room again.
    const again = await table.admit('alice', 2);
    expect(newer.closedWith).toEqual(['limit']);
    room.release();
    again.release();
    table.dispose();
  });

  it('refuses with limit-reached when every session of the agent is busy', async () => {
    const table = new InMemorySessionTable({ idleMs: 60_000, sweepIntervalMs: 60_000 });
    const busy = fakeSession('busy');
    busy.busy = 1;
    table.add(busy);
    await expect(table.admit('alice', 1)).rejects.toMatchObject({ reason: 'limit-reached' });
    expect(busy.closedWith).toEqual([]);
    table.dispose();
  });

  it('closes the sessions a config change picks, with the reason it gives', async () => {
    const table = new InMemorySessionTable({ idleMs: 60_000, sweepIntervalMs: 60_000 });
    const a = fakeSession('a');
    const b = fakeSession('b', 'bob');
    table.add(a);
    table.add(b);
    expect(await table.closeWhere((s) => (s.agent === 'bob' ? 'agent removed' : null))).toBe(1);
    expect(b.closedWith).toEqual(['config']);
    expect(table.get('a')).toBe(a);
    table.dispose();
  });

  it('ends with its OAuth grant every session the grant opened, and none other: told, remembered and audited as grant-revoked', async () => {
    const ended: string[][] = [];
    const table = new InMemorySessionTable({ idleMs: 60_000, sweepIntervalMs: 60_000, onSession: { opened: () => {}, ended: (s, because) => void ended.push([s.id, because]) } });
    const grant = (id: string) => ({ id, agent: 'alice', agentTokenSha256: 'a', approverTokenSha256: 'a' });
    const sessions = { first: fakeSession('first'), second: fakeSession('second'), other: fakeSession('other'), static: fakeSession('static') };
    table.add(sessions.first, grant('g1'));
    table.add(sessions.second, grant('g1'));
    table.add(sessions.other, grant('g2'));
    table.add(sessions.static);
    for (const id of Object.keys(sessions)) table.opened(id);
    expect(await table.endGrants((g) => g.id === 'g1', 'its OAuth grant was revoked by the app')).toBe(2);
    expect([sessions.first.closedWith, sessions.second.closedWith, sessions.other.closedWith, sessions.static.closedWith]).toEqual([['grant'], ['grant'], [], []]);
    expect(table.list().map((s) => s.id)).toEqual(['other', 'static']);
    expect(ended).toEqual([['first', 'grant-revoked'], ['second', 'grant-revoked']]);
    expect(await table.endOf('first', 'alice', 'aggregate')).toEqual({ because: 'grant-revoked', why: 'its OAuth grant was revoked by the app' });
    table.dispose();
  });

  it('remembers why it ended a session (idle, a config change, the agent\'s limit), and what a session closing itself says', async () => {
    let now = 0;
    const table = new InMemorySessionTable({ idleMs: 100, sweepIntervalMs: 60_000, now: () => now });
    for (const id of ['idle', 'config', 'oldest', 'newer', 'upstream', 'plain']) table.add(fakeSession(id));
    now = 50;
    for (const id of ['config', 'oldest', 'newer', 'upstream', 'plain']) table.touch(id);
    now = 120;
    for (const id of ['config', 'newer', 'upstream', 'plain']) table.touch(id);
    expect(await table.sweep()).toBe(1);
    await table.closeWhere((s) => (s.id === 'config' ? 'server "everything" no longer allowed' : null));
    (await table.admit('alice', 4)).release();
    table.remove('upstream', { because: 'trust-profile-stale', why: 'Trust profile "workspace" changed' });
    table.remove('plain');
    const end = (id: string) => table.endOf(id, 'alice', 'aggregate');
    expect(await end('idle')).toEqual({ because: 'idle', why: 'no request for more than 0 s' });
    expect(await end('config')).toEqual({ because: 'config-changed', why: 'the worker config changed: server "everything" no longer allowed' });
    expect(await end('oldest')).toEqual({ because: 'limit-reached', why: 'agent "alice" opened a session past its limit of 4, and this was its least recently used idle one' });
    expect(await end('upstream')).toEqual({ because: 'trust-profile-stale', why: 'Trust profile "workspace" changed' });
    expect(await end('plain')).toBeUndefined();
    expect(await end('newer')).toBeUndefined();
    expect(await table.endOf('idle', 'bob', 'aggregate')).toBeUndefined();
    table.dispose();
  });
});
