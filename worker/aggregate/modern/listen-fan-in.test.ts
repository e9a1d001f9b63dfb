import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { ListenFanIn, MAX_EARLY_BYTES, union } from './listen-fan-in.ts';

const ACK = 'notifications/subscriptions/acknowledged';
const SUB = 'io.modelcontextprotocol/subscriptionId';

async function rig(servers: string[], uris: Record<string, string[]> = {}, options: { ackWaitMs?: number } = {}) {
  const upstream = new Map<string, InMemoryTransport>();
  const channels = servers.map((server) => {
    const [channel, far] = InMemoryTransport.createLinkedPair();
    upstream.set(server, far);
    return { server, channel, ...(uris[server] !== undefined ? { uris: uris[server] } : {}) };
  });
  const fanIn = new ListenFanIn(channels, options);
  const heard: Array<Record<string, any>> = [];
  let closed = false;
  fanIn.onmessage = (m) => heard.push(m);
  fanIn.onclose = () => (closed = true);
  const requests: JSONRPCMessage[] = [];
  for (const far of upstream.values()) {
    far.onmessage = (m) => requests.push(m);
    await far.start();
  }
  await fanIn.start();
  await fanIn.send({ jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true, resourceSubscriptions: ['x://1', 'y://2'] } } });
  const say = (server: string, message: Record<string, unknown>) => upstream.get(server)!.send({ jsonrpc: '2.0', ...message } as JSONRPCMessage);
  return { fanIn, heard, requests, say, upstream, closed: () => closed };
}
const ack = (notifications: Record<string, unknown>) => ({ method: ACK, params: { _meta: { [SUB]: 'L' }, notifications } });

describe('ListenFanIn', () => {
  it('sends the listen to every server, acknowledges once all have, and holds earlier notifications behind it', async () => {
    const { heard, requests, say } = await rig(['a', 'b']);
    expect(requests).toHaveLength(2);
    await say('a', ack({ toolsListChanged: true }));
    await say('a', { method: 'notifications/tools/list_changed', params: { _meta: { [SUB]: 'L' } } });
    expect(heard).toEqual([]);
    await say('b', ack({ resourceSubscriptions: ['x://1'] }));
    expect(heard.map((m) => m.method)).toEqual([ACK, 'notifications/tools/list_changed']);
    expect(heard[0]!.params).toEqual({ _meta: { [SUB]: 'L' }, notifications: { toolsListChanged: true, resourceSubscriptions: ['x://1'] } });
  });

  it('acknowledges with the servers in once the wait is over, one that never acknowledges passing its notifications on later (review s20)', async () => {
    vi.useFakeTimers();
    try {
      const { heard, say } = await rig(['a', 'b'], {}, { ackWaitMs: 500 });
      await say('a', ack({ toolsListChanged: true }));
      await say('a', { method: 'notifications/tools/list_changed', params: { _meta: { [SUB]: 'L' } } });
      expect(heard).toEqual([]);
      await vi.advanceTimersByTimeAsync(500);
      expect(heard.map((m) => m.method)).toEqual([ACK, 'notifications/tools/list_changed']);
      expect(heard[0]!.params.notifications).toEqual({ toolsListChanged: true });
      // b acknowledges late: swallowed, its notifications pass on.
      await say('b', ack({ promptsListChanged: true }));
      await say('b', { method: 'notifications/prompts/list_changed', params: { _meta: { [SUB]: 'L' } } });
      expect(heard.map((m) => m.method)).toEqual([ACK, 'notifications/tools/list_changed', 'notifications/prompts/list_changed']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('holds each earlier notification once, and at most MAX_EARLY_BYTES of them, while a server has yet to acknowledge (review s19)', async () => {
    const { heard, say } = await rig(['a', 'b']);
    await say('a', ack({ toolsListChanged: true }));
    const changed = { method: 'notifications/tools/list_changed', params: { _meta: { [SUB]: 'L' } } };
    for (let n = 0; n < 1000; n++) await say('a', changed);
    const updated = (n: number) => ({ method: 'notifications/resources/updated', params: { uri: `x://${n}/${'p'.repeat(2000)}`, _meta: { [SUB]: 'L' } } });
    for (let n = 0; n < 2000; n++) await say('a', updated(n));
    await say('b', ack({}));
    const held = heard.slice(1);
    expect(held[0]).toMatchObject(changed);
    expect(held.filter((m) => m.method === 'notifications/tools/list_changed')).toHaveLength(1);
    const kept = held.length - 1;
    // About 1 MiB of 2 KB notifications, the earliest ones.
    expect(kept).toBeGreaterThan(400);
    expect(kept).toBeLessThan(MAX_EARLY_BYTES / 2000);
    expect(held.slice(1)).toEqual(Array.from({ length: kept }, (_, n) => expect.objectContaining(updated(n))));
  });

  it('keeps going when one server ends, and ends the stream when the last one does', async () => {
    const { heard, say, closed } = await rig(['a', 'b']);
    await say('a', ack({ toolsListChanged: true }));
    await say('b', { id: 'L', error: { code: -32601, message: 'no listen here' } });
    expect(heard.map((m) => m.method)).toEqual([ACK]);
    await say('a', { id: 'L', result: { resultType: 'complete', _meta: { [SUB]: 'L' } } });
    expect(heard.at(-1)).toEqual({ jsonrpc: '2.0', method: ACK, params: expect.anything() });
    expect(closed()).toBe(true);
  });

  it('drops the agent\'s stream, closing the others, when one acknowledged server\'s stream drops (review s23: it left silently)', async () => {
    const { heard, say, upstream, closed } = await rig(['a', 'b']);
    await say('a', ack({ toolsListChanged: true }));
    await say('b', ack({ toolsListChanged: true }));
    let bClosed = false;
    upstream.get('b')!.onclose = () => (bClosed = true);
    await upstream.get('a')!.close();
    expect(closed()).toBe(true);
    expect(bClosed).toBe(true);
    expect(heard.map((m) => m.method ?? m.id)).toEqual([ACK]);
  });

  it('leaves out of the acknowledgement a server whose stream dropped before it went out (review of s23)', async () => {
    const { heard, say, upstream, closed } = await rig(['a', 'b']);
    await say('a', ack({ toolsListChanged: true }));
    await upstream.get('a')!.close();
    await say('b', ack({ promptsListChanged: true }));
    expect(heard).toEqual([{ jsonrpc: '2.0', method: ACK, params: { _meta: { [SUB]: 'L' }, notifications: { promptsListChanged: true } } }]);
    expect(closed()).toBe(false);
  });

  it('ends with the closing result when every server closed gracefully', async () => {
    const { heard, say, closed } = await rig(['a']);
    await say('a', ack({}));
    await say('a', { id: 'L', result: { resultType: 'complete', _meta: { [SUB]: 'L' } } });
    expect(heard.at(-1)).toEqual({ jsonrpc: '2.0', id: 'L', result: { resultType: 'complete', _meta: { [SUB]: 'L' } } });
    expect(closed()).toBe(false);
  });

  it("answers the first server's error when none acknowledged", async () => {
    const { heard, say } = await rig(['a']);
    await say('a', { id: 'L', error: { code: -32602, message: 'bad filter' } });
    expect(heard).toEqual([{ jsonrpc: '2.0', id: 'L', error: { code: -32602, message: 'bad filter' } }]);
  });

  it('sends each server only the watched URIs it serves', async () => {
    const { requests } = await rig(['a', 'b', 'c'], { a: ['x://1'], b: [] });
    expect(requests.map((r) => (r as unknown as { params: { notifications: unknown } }).params.notifications)).toEqual(expect.arrayContaining([
      { toolsListChanged: true, resourceSubscriptions: ['x://1'] },
      { toolsListChanged: true },
      { toolsListChanged: true, resourceSubscriptions: ['x://1', 'y://2'] },
    ]));
  });

  it('unions flags and URIs', () => {
    expect(union([{ toolsListChanged: true, resourceSubscriptions: ['a'] }, { promptsListChanged: true, resourceSubscriptions: ['a', 'b'] }, {}])).toEqual({
      toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['a', 'b'],
    });
  });
});
