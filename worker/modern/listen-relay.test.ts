import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { relayListen } from './listen-relay.ts';

const LISTEN = { jsonrpc: '2.0' as const, id: 9, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } };
const ACK = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 9 }, notifications: {} } };

/** Lets the relay's start-then-send promise chain (microtasks) run: no clock involved. */
const drained = () => new Promise((r) => setImmediate(r));

async function host() {
  const [channel, far] = InMemoryTransport.createLinkedPair();
  const received: JSONRPCMessage[] = [];
  const closed = new Promise<true>((resolve) => (far.onclose = () => resolve(true)));
  far.onmessage = (m) => received.push(m);
  await far.start();
  return { channel, far, received, closed };
}

async function readEvents(reader: ReadableStreamDefaultReader<string>, count: number): Promise<unknown[]> {
  let text = '';
  const events = () => text.split('\n\n').filter((e) => e.includes('data:'));
  while (events().length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  return events().map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data:'))!.slice(5)));
}

describe('relayListen', () => {
  it('answers an SSE stream once the acknowledgement arrives, then each notification, and closes the channel when the agent cancels', async () => {
    const { channel, far, received, closed } = await host();
    const answering = relayListen(channel, LISTEN);
    await drained();
    expect(received).toEqual([LISTEN]);
    await far.send(ACK as JSONRPCMessage);
    const response = await answering;
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    await far.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    expect(await readEvents(reader, 2)).toEqual([ACK, { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} }]);
    await reader.cancel();
    expect(await closed).toBe(true);
  });

  it('answers an error that comes before any acknowledgement as JSON', async () => {
    const { channel, far } = await host();
    const answering = relayListen(channel, LISTEN);
    await drained();
    await far.send({ jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'Invalid params: no filter' } });
    const response = await answering;
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: 9, error: { code: -32602 } });
  });

  it('ends a stream its agent stopped reading once it holds more than the bound: limit-reached as its last event, the channel closed', async () => {
    const { channel, far, closed } = await host();
    const told: number[] = [];
    const answering = relayListen(channel, LISTEN, { maxUnreadBytes: 8 * 1024, onUnread: ({ limit }) => told.push(limit) });
    await drained();
    await far.send(ACK as JSONRPCMessage);
    const reader = (await answering).body!.pipeThrough(new TextDecoderStream()).getReader();
    expect(await readEvents(reader, 1)).toEqual([ACK]); // the agent reads the acknowledgement, then stops
    const changed = (n: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/resources/updated', params: { uri: `file:///${n}`, pad: 'u'.repeat(2_000) } });
    for (let n = 0; n < 20; n++) await far.send(changed(n)).catch(() => {});
    expect(await Promise.race([closed, drained().then(() => 'still open')])).toBe(true);
    expect(told).toEqual([8 * 1024]);
    const events = await readEvents(reader, 100);
    expect(events.length).toBeLessThan(8);
    expect(events.at(-1)).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32012, message: 'Listen stream ended: more than 8192 bytes of it were left unread', data: { reason: 'limit-reached', limit: 8192 } } });
  });

  it('counts only what waits behind the event being read: a large change read slowly is not cut by the next one', async () => {
    const { channel, far } = await host();
    const told: number[] = [];
    const answering = relayListen(channel, LISTEN, { maxUnreadBytes: 8 * 1024, onUnread: ({ limit }) => told.push(limit) });
    await drained();
    await far.send(ACK as JSONRPCMessage);
    const reader = (await answering).body!.pipeThrough(new TextDecoderStream()).getReader();
    expect(await readEvents(reader, 1)).toEqual([ACK]);
    const large = { jsonrpc: '2.0' as const, method: 'notifications/resources/updated', params: { uri: 'file:///big', pad: 'u'.repeat(300_000) } };
    const small = { jsonrpc: '2.0' as const, method: 'notifications/resources/updated', params: { uri: 'file:///small' } };
    await far.send(large);
    await far.send(small);
    expect(told).toEqual([]);
    expect(await readEvents(reader, 2)).toEqual([large, small]);
    await reader.cancel();
  });

  it('ends the stream with the closing result the host sends', async () => {
    const { channel, far } = await host();
    const answering = relayListen(channel, LISTEN);
    await drained();
    await far.send(ACK as JSONRPCMessage);
    const closing = { jsonrpc: '2.0', id: 9, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 9 } } };
    await far.send(closing as JSONRPCMessage);
    expect(await readEvents((await answering).body!.pipeThrough(new TextDecoderStream()).getReader(), 3)).toEqual([ACK, closing]);
  });
});
