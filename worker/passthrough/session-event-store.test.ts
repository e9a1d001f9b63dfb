import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SessionEventStore } from './session-event-store.ts';

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: n } });

function replay(store: SessionEventStore, from: string): [string, unknown][] {
  const sent: [string, unknown][] = [];
  store.replayAfter(from, (id, m) => void sent.push([id, (m as { params?: { data?: unknown } }).params?.data]));
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

  it('keeps only the newest events and replays nothing from a forgotten id', () => {
    const store = new SessionEventStore(3);
    const first = store.storeEvent('s', note(1));
    for (let n = 2; n <= 5; n++) store.storeEvent('s', note(n));
    expect(store.size).toBe(3);
    expect(replay(store, first)).toEqual([]);
    expect(store.streamIdOf(first)).toBeUndefined();
  });
});
