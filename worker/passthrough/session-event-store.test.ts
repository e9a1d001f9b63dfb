import { describe, expect, it } from 'vitest';
import { EVENT_STORE_BUDGET_BYTES, MAX_STORED_EVENT_BYTES, SessionEventStore } from './session-event-store.ts';

const note = (n: number | string): string => JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: n } });

function replay(store: SessionEventStore, from: string): [string, unknown][] {
  const sent: [string, unknown][] = [];
  store.replayAfter(from, (id, text) => void sent.push([id, (JSON.parse(text) as { params: { data: unknown } }).params.data]));
  return sent;
}

describe('SessionEventStore', () => {
  it('replays the events of the same stream after the given id, in order', () => {
    const store = new SessionEventStore();
    const a1 = store.storeEvent('_GET_stream', note(1));
    store.storeEvent('req-7', note(2));
    const a3 = store.storeEvent('_GET_stream', note(3));
    store.storeEvent('_GET_stream', note(4));
    expect(replay(store, a1)).toEqual([[a3, 3], [expect.any(String), 4]]);
    expect(store.streamIdOf(a3)).toBe('_GET_stream');
  });

  it('keeps at most its byte budget, forgetting the oldest events first', () => {
    const store = new SessionEventStore();
    const big = 'x'.repeat(200 * 1024);
    const ids = Array.from({ length: 64 }, (_, n) => store.storeEvent('7', note(`${n}${big}`)));
    expect(store.bytes).toBeLessThanOrEqual(EVENT_STORE_BUDGET_BYTES);
    // 12.8 MB were stored: only the newest ones are left, and a resume from the start gets those.
    const replayed = replay(store, ids[0]!).map(([id]) => id);
    expect(replayed.length).toBe(store.size);
    expect(replayed).toEqual(ids.slice(ids.length - store.size));
    expect(store.size).toBeLessThan(21);
  });

  it('does not keep an event over the size threshold, and a resume from its id still gets what follows', () => {
    const store = new SessionEventStore();
    const huge = store.storeEvent('3', note('y'.repeat(MAX_STORED_EVENT_BYTES)));
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
    const next = store.storeEvent('3', note('after'));
    expect(store.streamIdOf(huge)).toBe('3');
    expect(replay(store, huge)).toEqual([[next, 'after']]);
  });

  it('replays what a stream still has after an evicted id, never another stream\'s events', () => {
    const store = new SessionEventStore({ maxEvents: 3 });
    const first = store.storeEvent('s', note(1));
    store.storeEvent('t', note('other'));
    for (let n = 2; n <= 5; n++) store.storeEvent('s', note(n));
    expect(store.size).toBe(3);
    expect(store.streamIdOf(first)).toBe('s');
    expect(replay(store, first).map(([, data]) => data)).toEqual([3, 4, 5]);
  });

  it('forgets a stream on request, and a resume from it then replays nothing', () => {
    const store = new SessionEventStore();
    const done = store.storeEvent('1', note('answer'));
    store.storeEvent('1', note('late'));
    const live = store.storeEvent('2', note('progress'));
    store.storeEvent('2', note('more'));
    store.forgetStream('1');
    expect(store.size).toBe(2);
    expect(store.bytes).toBe(note('progress').length + note('more').length);
    expect(replay(store, done)).toEqual([]);
    expect(replay(store, live).map(([, data]) => data)).toEqual(['more']);
  });

  it('knows only ids it could have issued', () => {
    const store = new SessionEventStore();
    const id = store.storeEvent('_GET_stream', note(1));
    expect(store.streamIdOf(id)).toBe('_GET_stream');
    for (const bad of ['', 'nope', '_1', 's_', 's_0', 's_01', 's_9', 's_1e3', 's_-1']) expect(store.streamIdOf(bad)).toBeUndefined();
    expect(replay(store, 's_9')).toEqual([]);
  });
});
