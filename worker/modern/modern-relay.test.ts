/** The modern relay's one timer: the deadline, and the agent's abort read only for a slow answer; who closes a link channel after the response. */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler } from '../../shared/link/link-endpoint.ts';
import { advanceBy, advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';
import { eventsOf } from '../../test/support/sse-events.ts';
import { HOST_CLOSE_WAIT_MS, relayModernRequest } from './modern-relay.ts';

const request = { jsonrpc: '2.0' as const, id: 1, method: 'tools/list' };

async function hostEnd() {
  const [channel, host] = createInMemoryChannelPair();
  const received = new Promise<JSONRPCMessage>((resolve) => {
    host.onmessage = resolve;
  });
  const closed = new Promise<void>((resolve) => {
    host.onclose = resolve;
  });
  await host.start();
  return { channel, host, received, closed };
}

describe('relayModernRequest', () => {
  it('does not read the agent signal for an answer that comes before the watch', async () => {
    const { channel, host, received } = await hostEnd();
    let reads = 0;
    const answered = relayModernRequest(channel, request, { signal: () => (reads++, new AbortController().signal) });
    await received;
    await host.send({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    expect(await (await answered).json()).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    expect(reads).toBe(0);
  });

  it('sees an agent that left before the watch, and closes the channel', async () => {
    const { channel, received, closed } = await hostEnd();
    const abort = new AbortController();
    const told: unknown[] = [];
    const answered = relayModernRequest(channel, request, { signal: () => abort.signal, onAnswer: (m) => told.push(m) });
    await received;
    abort.abort();
    await closed;
    expect((await answered).status).toBe(499);
    expect(told).toEqual([null]);
  });

  it('answers as an event stream once the watch finds no answer, with comments until the answer, its last event (review s24)', async () => {
    const { channel, host, received } = await hostEnd();
    const response = await relayModernRequest(channel, request, { signal: () => new AbortController().signal, keepAliveMs: 5 });
    await received;
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    expect((await reader.read()).value).toBe(': keepalive\n\n');
    await host.send({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    let rest = '';
    for (let read = await reader.read(); !read.done; read = await reader.read()) rest += read.value;
    expect(rest.replaceAll(': keepalive\n\n', '')).toBe(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools: [] } })}\n\n`);
  });

  it('keeps JSON and its HTTP status for an answer quicker than a keepalive past the watch, an error included (review s24)', async () => {
    useFakeClock();
    try {
      const { channel, host, received } = await hostEnd();
      const answered = relayModernRequest(channel, request, { signal: () => new AbortController().signal, keepAliveMs: 5_000 });
      await received;
      await advanceBy(2_000);
      await host.send({ jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } });
      const response = await advanceUntilSettled(answered);
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/json');
    } finally {
      vi.useRealTimers();
    }
  });

  it('writes keepalives to a stream a notification opened before the watch too', async () => {
    const { channel, host, received } = await hostEnd();
    const answered = relayModernRequest(channel, request, { signal: () => new AbortController().signal, keepAliveMs: 5 });
    await received;
    await host.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } });
    const reader = (await answered).body!.pipeThrough(new TextDecoderStream()).getReader();
    let read = '';
    while (!read.includes(': keepalive')) read += (await reader.read()).value;
    // The progress event whole, then the comment: never inside it.
    expect(read.startsWith('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"')).toBe(true);
    expect(read.split('\n\n').filter((e) => e !== '').every((e) => e === ': keepalive' || e.startsWith('event: message\ndata: '))).toBe(true);
    await host.send({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    await reader.cancel();
  });

  it('cancels the call when that stream is cancelled, the agent gone though its request was never aborted: the channel closes, the place is parked', async () => {
    const { channel, closed } = await hostEnd();
    const slot: string[] = [];
    const told: unknown[] = [];
    const response = await relayModernRequest(channel, request, {
      signal: () => new AbortController().signal,
      keepAliveMs: 5,
      slot: { release: () => slot.push('release'), park: () => slot.push('park') },
      onAnswer: (m) => told.push(m),
    });
    await response.body!.cancel();
    await closed;
    expect(slot).toEqual(['park']);
    expect(told).toEqual([null]);
  });

  it('answers request-timeout at the deadline, the abort watch armed or not', async () => {
    for (const signal of [undefined, () => new AbortController().signal]) {
      const { channel, closed } = await hostEnd();
      const response = await relayModernRequest(channel, request, { timeoutMs: 5, ...(signal !== undefined ? { signal } : {}) });
      expect(await response.json()).toMatchObject({ id: 1, error: { data: { reason: 'request-timeout' } } });
      await closed;
    }
  });
});

describe('relayModernRequest for an agent that stops reading', () => {
  const progress = (n: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/progress', params: { progressToken: 'p', progress: n, message: 'x'.repeat(4_000) } });

  it('ends the SSE stream once it holds more than the bound unread: the channel closes, the error is the last event, the rest is dropped', async () => {
    const { channel, host, received, closed } = await hostEnd();
    const told: Array<[number, number]> = [];
    const answers: unknown[] = [];
    const answered = relayModernRequest(channel, request, { maxUnreadBytes: 16 * 1024, onUnread: ({ unreadBytes, limit }) => told.push([unreadBytes, limit]), onAnswer: (m) => answers.push(m) });
    await received;
    await host.send(progress(0));
    const response = await answered;
    const reader = response.body!.getReader();
    const first = await reader.read(); // the agent reads one event, then stops
    // 40 KB more for a reader that reads nothing: the stream is ended on the way, not after.
    for (let n = 1; n <= 10; n++) await host.send(progress(n)).catch(() => {});
    expect(channel.closed).toBe(true);
    await closed;
    expect(told).toHaveLength(1);
    expect(told[0]![0]).toBeGreaterThan(16 * 1024);
    expect(told[0]![1]).toBe(16 * 1024);
    expect(answers).toEqual([{ jsonrpc: '2.0', id: 1, error: { code: -32012, message: expect.stringMatching(/^Answer stream ended: more than 16384 bytes of it were left unread/), data: { reason: 'limit-reached', limit: 16 * 1024 } } }]);

    let text = new TextDecoder().decode(first.value);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    const events = eventsOf(text).map((e) => JSON.parse(e.data) as { id?: number; params?: { progress: number } });
    // What was queued within the bound, then the error: nothing past the bound was kept.
    expect(events.length).toBeLessThan(8);
    expect(events.slice(0, -1).map((e) => e.params!.progress)).toEqual(events.slice(0, -1).map((_, i) => i));
    expect(events.at(-1)).toEqual(answers[0]);
  });

  it("keeps a stream of an agent past its unread budget, and ends one nobody reads only past the hard bound, counting what the stream holds", async () => {
    const { channel, host, received } = await hostEnd();
    const meter = { agent: 'alice', unreadBytes: 0, maxUnreadBytes: 10_000 };
    const answered = relayModernRequest(channel, request, { maxUnreadBytes: 1 << 30, meter });
    await received;
    for (let n = 0; n < 4; n++) await host.send(progress(n));
    // 16 KB unread: past the budget (which refuses new requests), not the hard bound of 4 × 10 KB.
    expect(meter.unreadBytes).toBeGreaterThan(10_000);
    expect(channel.closed).toBe(false);
    for (let n = 4; n < 14; n++) await host.send(progress(n)).catch(() => {});
    expect(channel.closed).toBe(true);
    const events = eventsOf(await (await answered).text()).map((e) => JSON.parse(e.data) as unknown);
    expect(events.at(-1)).toMatchObject({ id: 1, error: { code: -32012, message: 'Answer stream ended: agent "alice" holds more than 40000 bytes of answers unread, so the call was cancelled', data: { reason: 'limit-reached', limit: 40_000 } } });
    expect(meter.unreadBytes).toBe(0);
  });

  it('ends a stream it left unread with the error instead of adding the answer, as it does a notification (review s24: a slow answer skipped the hard bound)', async () => {
    const { channel, host, received } = await hostEnd();
    const meter = { agent: 'alice', unreadBytes: 0, maxUnreadBytes: 10_000 };
    const answered = relayModernRequest(channel, request, { maxUnreadBytes: 1 << 30, meter });
    await received;
    // The tenth takes it past the hard bound of 4 × 10 KB unread, after that notification's own check.
    for (let n = 0; n < 10; n++) await host.send(progress(n));
    expect(channel.closed).toBe(false);
    await host.send({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'y'.repeat(200_000) }] } }).catch(() => {});
    const events = eventsOf(await (await answered).text()).map((e) => JSON.parse(e.data) as unknown);
    expect(events.at(-1)).toMatchObject({ id: 1, error: { code: -32012, data: { reason: 'limit-reached' } } });
    expect(JSON.stringify(events)).not.toContain('yyyy');
  });

  it('counts only what waits behind the event being read: a large notification read slowly is not cut by the next event', async () => {
    const { channel, host, received } = await hostEnd();
    const told: unknown[] = [];
    const answered = relayModernRequest(channel, request, { maxUnreadBytes: 16 * 1024, onUnread: (unread) => told.push(unread) });
    await received;
    const large = { jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: 'z'.repeat(500_000) } };
    await host.send(large);
    const reader = (await answered).body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value); // one piece taken: a slow link
    await host.send(progress(1));
    await host.send({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    expect(told).toEqual([]);
    expect(eventsOf(text).map((e) => JSON.parse(e.data) as unknown)).toEqual([large, progress(1), { jsonrpc: '2.0', id: 1, result: { content: [] } }]);
  });

  it('relays every event to a reader that keeps up, however much passes', async () => {
    const { channel, host, received } = await hostEnd();
    const answered = relayModernRequest(channel, request, { maxUnreadBytes: 16 * 1024 });
    await received;
    await host.send(progress(0));
    const reader = (await answered).body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    for (let n = 1; n <= 40; n++) {
      await host.send(progress(n));
      while (eventsOf(text).length < n) text += (await reader.read()).value;
    }
    await host.send({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
    const events = eventsOf(text).map((e) => JSON.parse(e.data) as unknown);
    expect(events).toHaveLength(42);
    expect(events.at(-1)).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    expect(channel.closed).toBe(true);
  });
});

describe('relayModernRequest on a link channel', () => {
  /** A worker and a host endpoint; `closes`: whether the host closes the channel behind its response. */
  function linkWith(closes: boolean) {
    const [workerSocket, hostSocket] = createFrameSocketPair();
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', liveness: false });
    const hostClosed = new Promise<void>((resolveClosed) => {
      const onOpen: ChannelOpenHandler = async (_request, channel) => {
        channel.onmessage = (message) => {
          const answered = channel.send({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { tools: [] } });
          if (closes) void answered.finally(() => channel.close());
        };
        channel.onclose = resolveClosed;
        void channel.start();
      };
      new LinkEndpoint(hostSocket, { role: 'sidecar', onOpen, liveness: false });
    });
    const sent: string[] = [];
    worker.onFrame = (direction, text) => {
      if (direction === 'out') sent.push((JSON.parse(text) as { type: string }).type);
    };
    return { worker, sent, hostClosed };
  }

  // First of the link cases: the fallback's queue is the module's, and its timer is armed here under the fake clock.
  it('closes the channel itself when the host has not, HOST_CLOSE_WAIT_MS after the response', async () => {
    useFakeClock();
    try {
      const { worker, sent, hostClosed } = linkWith(false);
      // The host's ack, held for the answer it went out before here, comes at ACK_DEFER_MS.
      const channel = await advanceUntilSettled(worker.openChannel({ type: 'mcp', connection: { 'server-name': 'x' } }, { first: request }), { stepMs: 1 });
      await relayModernRequest(channel, request);
      expect(sent).toEqual(['channel-open', 'channel-message']);
      await advanceBy(HOST_CLOSE_WAIT_MS - 10);
      expect(channel.closed).toBe(false);
      await advanceUntilSettled(hostClosed);
      expect(sent).toEqual(['channel-open', 'channel-message', 'channel-close']);
      worker.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('sends no channel-close after the response when the host closes the channel behind it', async () => {
    const { worker, sent, hostClosed } = linkWith(true);
    // Sent after the ack, so the response reaches a relay that is running, which then used to close.
    const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'x' } });
    const response = await relayModernRequest(channel, request);
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    await hostClosed;
    expect(channel.closed).toBe(true);
    expect(sent).toEqual(['channel-open', 'channel-message']);
    worker.close();
  });

  it('answers from a host\'s channel-reply and sends nothing after the open: the reply closed the channel', async () => {
    const [workerSocket, hostSocket] = createFrameSocketPair();
    const features = { peerFeatures: new Set(['open-first', 'open-reply'] as const), liveness: false };
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', ...features });
    const received: string[] = [];
    const hostClosed = new Promise<void>((resolveClosed) => {
      const onOpen: ChannelOpenHandler = async (_request, channel) => {
        channel.onmessage = (message) => {
          setTimeout(() => void channel.reply({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { tools: [] } }), 0);
        };
        channel.onclose = resolveClosed;
        void channel.start();
      };
      const host = new LinkEndpoint(hostSocket, { role: 'sidecar', onOpen, liveness: false });
      host.onFrame = (direction, text) => direction === 'in' && received.push((JSON.parse(text) as { type: string }).type);
    });
    const sent: string[] = [];
    worker.onFrame = (direction, text) => direction === 'out' && sent.push((JSON.parse(text) as { type: string }).type);
    const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'x' } }, { first: request });
    const response = await relayModernRequest(channel, request);
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
    await hostClosed;
    expect(channel.closed).toBe(true);
    expect(sent).toEqual(['channel-open']);
    expect(received).toEqual(['channel-open']);
    expect(worker.stats.channels).toBe(0);
    worker.close();
  });
});
