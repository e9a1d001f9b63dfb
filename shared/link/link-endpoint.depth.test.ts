/**
 * Hostile frames never take an endpoint down and never leave anyone waiting: a frame nested deeper
 * than a JSON-RPC message may be is refused with an answer to whoever waits on it, and a channel
 * consumer that throws is logged and its request answered, while the link and every other
 * channel go on. Before, a deep frame reached the channel and the consumer's exception the
 * socket's message handler, which in the sidecar meant the event loop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createFrameSocketPair } from './frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler } from './link-endpoint.ts';
import type { ChannelTransport } from '../channel-transport.ts';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
};

/** A sidecar endpoint whose one channel hands messages to `consume`, facing a raw worker socket the test drives. */
function sidecarFacingRawWorker(consume: (message: JSONRPCMessage, channel: ChannelTransport) => void) {
  const [sidecarSocket, raw] = createFrameSocketPair();
  const warnings: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
  const onOpen: ChannelOpenHandler = async (_request, channel) => {
    channel.onmessage = (message) => consume(message, channel);
    void channel.start();
  };
  const sidecar = new LinkEndpoint(sidecarSocket, { role: 'sidecar', onOpen, log: { info() {}, warn: (msg, fields) => warnings.push({ msg, fields }) } });
  endpoints.push(sidecar);
  const received: Array<Record<string, unknown>> = [];
  raw.onmessage = (text) => received.push(JSON.parse(text));
  return { sidecar, raw, received, warnings };
}

const frame = (message: string, channel = 1) => `{"v":1,"type":"channel-message","channel":${channel},"message":${message}}`;
const request = (id: number, pad: string) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"x","arguments":{"pad":${pad}}}}`;

describe('link frames nested too deep', () => {
  it('answers a 100,000-level request on its channel with invalid-request; the channel never sees it and the link goes on', async () => {
    const seen: JSONRPCMessage[] = [];
    const { sidecar, raw, received } = sidecarFacingRawWorker((message, channel) => {
      seen.push(message);
      void channel.send({ jsonrpc: '2.0', id: (message as { id: number }).id, result: {} });
    });
    raw.send(JSON.stringify({ v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp', connection: { 'server-name': 'x' } } }));
    await until(() => received.some((f) => f.type === 'channel-open-ack'));
    raw.send(frame(request(41, nest(100_000))));
    raw.send(frame(request(42, nest(3))));
    await until(() => received.filter((f) => f.type === 'channel-message').length === 2);
    expect(received.filter((f) => f.type === 'channel-message')).toEqual([
      { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', id: 41, error: { code: -32600, message: 'Request nested deeper than 128 levels', data: { reason: 'invalid-request' } } } },
      { v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', id: 42, result: {} } },
    ]);
    expect(seen.map((m) => (m as { id: number }).id)).toEqual([42]);
    expect(sidecar.closed).toBe(false);
    expect(sidecar.stats.malformedFrames).toBe(1);
  });

  it('turns a too-deep answer into an error for the local side that asked, on the worker end', async () => {
    const [workerSocket, raw] = createFrameSocketPair();
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'raw' });
    endpoints.push(worker);
    const frames: Array<Record<string, unknown>> = [];
    raw.onmessage = (text) => {
      const f = JSON.parse(text) as Record<string, unknown>;
      frames.push(f);
      if (f.type === 'channel-open') raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: f.channel }));
    };
    const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'x' } });
    const got: JSONRPCMessage[] = [];
    channel.onmessage = (message) => got.push(message);
    await channel.start();
    raw.send(frame(`{"jsonrpc":"2.0","id":"q-1","result":{"x":${nest(100_000)}}}`, channel.id));
    await until(() => got.length === 1);
    expect(got).toEqual([{ jsonrpc: '2.0', id: 'q-1', error: { code: -32600, message: 'Response nested deeper than 128 levels', data: { reason: 'invalid-request' } } }]);
    expect(frames.filter((f) => f.type === 'channel-message')).toEqual([]);
    expect(worker.closed).toBe(false);
  });

  it('ends a channel whose channel-reply is too deep: the open resolves, the caller gets the refusal of its answer, then the close', async () => {
    const [workerSocket, raw] = createFrameSocketPair();
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'raw', peerFeatures: new Set(['open-first', 'open-reply'] as const) });
    endpoints.push(worker);
    raw.onmessage = (text) => {
      const f = JSON.parse(text) as { type: string; channel: number };
      if (f.type === 'channel-open') raw.send(`{"v":1,"type":"channel-reply","channel":${f.channel},"message":{"jsonrpc":"2.0","id":7,"result":{"x":${nest(100_000)}}}}`);
    };
    const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'x' } }, { first: { jsonrpc: '2.0', id: 7, method: 'tools/call' } });
    const got: JSONRPCMessage[] = [];
    channel.onmessage = (message) => got.push(message);
    let closed = false;
    channel.onclose = () => (closed = true);
    await channel.start();
    expect(got).toEqual([{ jsonrpc: '2.0', id: 7, error: { code: -32600, message: 'Response nested deeper than 128 levels', data: { reason: 'invalid-request' } } }]);
    expect(closed).toBe(true);
    expect(worker.stats).toMatchObject({ channels: 0, malformedFrames: 1 });
    expect(worker.closed).toBe(false);
  });

  it('refuses a too-deep channel-open with channel-open-error', async () => {
    const { raw, received } = sidecarFacingRawWorker(() => {});
    raw.send(`{"v":1,"type":"channel-open","channel":3,"request":{"type":"mcp","connection":{"server-name":"x","target":${nest(100_000)}}}}`);
    await until(() => received.length === 1);
    expect(received).toEqual([{ v: 1, type: 'channel-open-error', channel: 3, reason: 'invalid-request', message: 'Connection request nested deeper than 128 levels' }]);
  });

  it('passes a message of exactly 128 levels', async () => {
    const seen: JSONRPCMessage[] = [];
    const { raw, received } = sidecarFacingRawWorker((message) => seen.push(message));
    raw.send(JSON.stringify({ v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp', connection: { 'server-name': 'x' } } }));
    await until(() => received.length === 1);
    raw.send(frame(request(1, nest(125))));
    await until(() => seen.length === 1);
  });
});

describe('a channel consumer that throws', () => {
  it('is logged and its request answered; the link and the next message go on', async () => {
    const seen: number[] = [];
    const { sidecar, raw, received, warnings } = sidecarFacingRawWorker((message) => {
      const id = (message as { id: number }).id;
      seen.push(id);
      if (id === 1) throw new RangeError('Maximum call stack size exceeded');
    });
    raw.send(JSON.stringify({ v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp', connection: { 'server-name': 'x' } } }));
    await until(() => received.length === 1);
    raw.send(frame(request(1, '1')));
    raw.send(frame(request(2, '2')));
    await until(() => seen.length === 2 && received.length === 2);
    expect(received[1]).toEqual({
      v: 1,
      type: 'channel-message',
      channel: 1,
      message: { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'The message could not be handled on the host: see its log', data: { reason: 'invalid-request' } } },
    });
    expect(warnings).toContainEqual({ msg: 'A channel failed to handle a message', fields: { peer: 'worker', channel: 1, error: 'RangeError' } });
    expect(sidecar.closed).toBe(false);
  });
});
