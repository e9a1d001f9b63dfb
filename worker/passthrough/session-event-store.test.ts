import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SessionEventStore } from './session-event-store.ts';

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: n } });

async function replay(store: SessionEventStore, from: string): Promise<[string, unknown][]> {
  const sent: [string, unknown][] = [];
  await store.replayEventsAfter(from, { send: async (id, m) => void sent.push([id, (m as { params?: { data?: unknown } }).params?.data]) });
  return sent;
}

describe('SessionEventStore', () => {
  it('replays the events of the same stream after the given id, in order', async () => {
    const store = new SessionEventStore();
    const a1 = await store.storeEvent('_GET_stream', note(1));
    await store.storeEvent('req-7', note(2));
    const a3 = await store.storeEvent('_GET_stream', note(3));
    await store.storeEvent('_GET_stream', note(4));
    expect(await replay(store, a1)).toEqual([[a3, 3], [expect.any(String), 4]]);
    expect(await store.getStreamIdForEventId(a3)).toBe('_GET_stream');
    expect(await store.replayEventsAfter(a1, { send: async () => {} })).toBe('_GET_stream');
  });

  it('keeps only the newest events and replays nothing from a forgotten id', async () => {
    const store = new SessionEventStore(3);
    const first = await store.storeEvent('s', note(1));
    for (let n = 2; n <= 5; n++) await store.storeEvent('s', note(n));
    expect(store.size).toBe(3);
    expect(await replay(store, first)).toEqual([]);
    expect(await store.replayEventsAfter(first, { send: async () => {} })).toBe('');
  });
});
