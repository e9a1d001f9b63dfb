import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../errors.ts';
import { closeInfoOf, type ChannelCloseInfo, type ChannelTransport } from '../channel-transport.ts';
import { readJsonRpcText } from '../json-rpc-text.ts';
import { RAW_TEXT_MIN_CHARS } from '../raw-message-text.ts';
import { CallbackFrameSocket, createFrameSocketPair } from './frame-socket.ts';
import { LinkEndpoint, REMEMBERED_CLOSES, exceeds, type ChannelOpenHandler, type LinkEndpointOptions } from './link-endpoint.ts';
import { advanceBy, advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

/** An echo host: every message on a channel comes straight back on it. */
const echoHost: ChannelOpenHandler = async (_request, channel) => {
  channel.onmessage = (message) => void channel.send(message).catch(() => {});
  void channel.start();
};

function link(onOpen: ChannelOpenHandler = echoHost, options: Partial<LinkEndpointOptions> = {}) {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'test-host', ...options });
  const sidecar = new LinkEndpoint(sidecarSocket, { role: 'sidecar', onOpen, ...options });
  endpoints.push(worker, sidecar);
  return { worker, sidecar, workerSocket, sidecarSocket };
}

/** A worker endpoint facing a raw socket the test drives by hand. */
function rawPeer(options: Partial<LinkEndpointOptions> = {}) {
  const [workerSocket, raw] = createFrameSocketPair();
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'raw', ...options });
  endpoints.push(worker);
  const received: Record<string, unknown>[] = [];
  raw.onmessage = (text) => received.push(JSON.parse(text));
  return { worker, raw, received };
}

function nextMessage(channel: ChannelTransport): Promise<JSONRPCMessage> {
  return new Promise((resolve) => (channel.onmessage = resolve));
}

const closeOf = (channel: ChannelTransport): Promise<ChannelCloseInfo> => closeInfoOf(channel);

const ping = (id: number, payload = ''): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'echo', params: { payload } });
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
};

/** A host that starts every channel it is offered and keeps them, in order, for the test to answer on. */
function keepingHost(): { onOpen: ChannelOpenHandler; channels: ChannelTransport[] } {
  const channels: ChannelTransport[] = [];
  return {
    channels,
    onOpen: async (_request, channel) => {
      channels.push(channel);
      await channel.start();
    },
  };
}

/** What `endpoint` sends from now on: each frame's type and text, in order. */
function framesOut(endpoint: LinkEndpoint): { types: string[]; texts: string[] } {
  const types: string[] = [];
  const texts: string[] = [];
  endpoint.onFrame = (direction, text) => {
    if (direction !== 'out') return;
    types.push((JSON.parse(text) as { type: string }).type);
    texts.push(text);
  };
  return { types, texts };
}

describe('LinkEndpoint', () => {
  it('opens a channel and pumps messages both ways', async () => {
    const { worker } = link();
    const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'echo' } });
    const reply = nextMessage(channel);
    void channel.start();
    await channel.send(ping(1, 'hello'));
    expect(await reply).toEqual(ping(1, 'hello'));
  });

  it('sends a large result read from a server line as that very text, and the peer gets the same message', async () => {
    const text = `{"jsonrpc":"2.0", "id":1, "result":{"content":[{"type":"text","text":"${'é'.repeat(RAW_TEXT_MIN_CHARS)}"}]}}`;
    const read = readJsonRpcText(text);
    if (read.kind !== 'message') throw new Error('expected a message');
    const host: ChannelOpenHandler = async (_request, channel) => {
      channel.onmessage = () => void channel.send(read.message).catch(() => {});
      void channel.start();
    };
    const { worker, sidecar } = link(host);
    const sent = framesOut(sidecar).texts;
    const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'echo' } });
    const reply = nextMessage(channel);
    void channel.start();
    await channel.send(ping(1));
    expect(await reply).toEqual(JSON.parse(text));
    expect(sent.at(-1)).toBe(`{"v":1,"type":"channel-message","channel":${channel.id},"message":${text}}`);
  });

  it('turns a WireError thrown by the host into a rejected open with the same reason', async () => {
    const { worker, sidecar } = link(async () => {
      throw new WireError('trust-profile-stale', 'Trust profile "workspace" changed: expected revision sha256:aa');
    });
    const opened = worker.openChannel({ type: 'mcp' });
    await expect(opened).rejects.toMatchObject({ reason: 'trust-profile-stale', message: expect.stringContaining('changed') });
    expect(worker.stats.channels).toBe(0);
    expect(sidecar.stats.channels).toBe(0);
  });

  it('reports any other host failure as launch-failed without its message', async () => {
    const { worker } = link(async () => {
      throw new Error('spawn /secret/path ENOENT');
    });
    const error = await worker.openChannel({}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed' });
    expect(String((error as Error).message)).not.toContain('/secret/path');
  });

  it('queues messages that arrive before the host handler has finished opening', async () => {
    const [raw, sidecarSocket] = createFrameSocketPair();
    let release!: () => void;
    const received: JSONRPCMessage[] = [];
    const sidecar = new LinkEndpoint(sidecarSocket, {
      role: 'sidecar',
      onOpen: async (_request, channel) => {
        await new Promise<void>((resolve) => (release = resolve));
        channel.onmessage = (m) => received.push(m);
        void channel.start();
      },
    });
    endpoints.push(sidecar);
    raw.send(JSON.stringify({ v: 1, type: 'channel-open', channel: 7, request: {} }));
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: 7, message: ping(1) }));
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: 7, message: ping(2) }));
    await until(() => release !== undefined && sidecar.stats.framesIn === 3);
    release();
    await until(() => received.length === 2);
    expect(received).toEqual([ping(1), ping(2)]);
  });

  describe('a first message sent with or right behind the open', () => {
    // To a host that reads open-first (`link-features.ts`) the two go as one frame; to any other, as two.
    it.each([
      ['in a frame of its own, to a host that did not announce open-first', {}, ['out channel-open', 'out channel-message']],
      ['in the channel-open frame, to a host that reads open-first', { peerFeatures: new Set(['open-first'] as const) }, ['out channel-open+first']],
    ] as const)('goes before the ack %s, waits in the host channel until the handler starts it, and is marked sent', async (_case, options: Partial<LinkEndpointOptions>, frames) => {
      let release!: () => void;
      const received: JSONRPCMessage[] = [];
      const { worker, sidecar } = link(async (_request, channel) => {
        await new Promise<void>((resolve) => (release = resolve));
        channel.onmessage = (message) => {
          received.push(message);
          void channel.send({ jsonrpc: '2.0', id: 1, result: { echoed: true } });
        };
        void channel.start();
      }, options);
      const sent: string[] = [];
      worker.onFrame = (direction, text) => {
        const frame = JSON.parse(text) as { type: string; first?: unknown };
        sent.push(`${direction} ${frame.type}${frame.first === undefined ? '' : '+first'}`);
      };
      const opening = worker.openChannel({ type: 'mcp' }, { first: ping(1, 'ahead') });
      expect(sent).toEqual(frames);
      await until(() => release !== undefined && sidecar.stats.framesIn === frames.length);
      expect(received).toEqual([]);
      release();
      const channel = await opening;
      expect(channel.sentAhead).toEqual(ping(1, 'ahead'));
      const reply = nextMessage(channel);
      void channel.start();
      expect(await reply).toEqual({ jsonrpc: '2.0', id: 1, result: { echoed: true } });
      expect(received).toEqual([ping(1, 'ahead')]);
      // The handler answered before it returned, so the answer may precede the ack: it waited in the worker's channel.
      expect(sent.slice(frames.length).sort()).toEqual(['in channel-message', 'in channel-open-ack']);
    });

    it('is dropped unread by a refused open, which rejects with the host\'s reason and message as without it', async () => {
      const seen: JSONRPCMessage[] = [];
      const { worker, sidecar } = link(async (_request, channel) => {
        channel.onmessage = (message) => seen.push(message);
        await Promise.resolve();
        throw new WireError('server-not-found', 'Server "nope" not found on this host');
      });
      await expect(worker.openChannel({ type: 'mcp' }, { first: ping(1) })).rejects.toMatchObject({ reason: 'server-not-found', message: 'Server "nope" not found on this host' });
      expect(seen).toEqual([]);
      expect(worker.stats.channels).toBe(0);
      expect(sidecar.stats.channels).toBe(0);
      expect(sidecar.stats.unknownChannelFrames).toBe(0);
    });

    it('is withdrawn by a close before the ack: the host channel is closed before its handler returns, and no ack follows', async () => {
      let release!: () => void;
      let hostChannel: ChannelTransport | undefined;
      let handled!: () => void;
      const done = new Promise<void>((resolve) => (handled = resolve));
      const { worker, sidecar } = link(async (_request, channel) => {
        hostChannel = channel;
        await new Promise<void>((resolve) => (release = resolve));
        handled();
      });
      const sidecarSent = framesOut(sidecar).types;
      const deadline = new AbortController();
      const opening = worker.openChannel({ type: 'mcp' }, { first: ping(1), signal: deadline.signal });
      await until(() => release !== undefined && sidecar.stats.framesIn === 2);
      const gone = new WireError('request-timeout', 'Opening server "echo" took longer than 1 s: check its host and try again');
      deadline.abort(gone);
      await expect(opening).rejects.toBe(gone);
      await until(() => sidecar.stats.framesIn === 3);
      expect(hostChannel!.closed).toBe(true);
      release();
      await done;
      await Promise.resolve();
      expect(sidecarSent).toEqual([]);
      expect(worker.stats.channels).toBe(0);
      expect(sidecar.stats.channels).toBe(0);
    });

    it('is acked together with the channel\'s first frame out, not in a frame of its own, and an open without one is acked at once', async () => {
      const host = keepingHost();
      const hostChannels = host.channels;
      const { worker, sidecar } = link(host.onOpen);
      const out = framesOut(sidecar).types;
      const plain = await worker.openChannel({ type: 'mcp' });
      expect(out).toEqual(['channel-open-ack']);
      void plain.start();

      let opened = false;
      const opening = worker.openChannel({ type: 'mcp' }, { first: ping(1) }).then((channel) => ((opened = true), channel));
      await until(() => hostChannels.length === 2);
      await Promise.resolve();
      expect(out).toEqual(['channel-open-ack']);
      expect(opened).toBe(false);
      await hostChannels[1]!.send({ jsonrpc: '2.0', id: 1, result: {} });
      expect(out).toEqual(['channel-open-ack', 'channel-open-ack', 'channel-message']);
      const channel = await opening;
      const reply = nextMessage(channel);
      void channel.start();
      expect(await reply).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    });

    it('is acked on its own after a moment when its answer is slow, and before a close when the host closes it unanswered', async () => {
      useFakeClock();
      const host = keepingHost();
      const hostChannels = host.channels;
      const { worker, sidecar } = link(host.onOpen, { liveness: false });
      const out = framesOut(sidecar).types;
      const slow = await advanceUntilSettled(worker.openChannel({ type: 'mcp' }, { first: ping(1) }));
      expect(out).toEqual(['channel-open-ack']);
      expect(slow.closed).toBe(false);

      const closing = worker.openChannel({ type: 'mcp' }, { first: ping(2) });
      await advanceBy(0);
      await hostChannels[1]!.close();
      const closed = await advanceUntilSettled(closing);
      expect(out).toEqual(['channel-open-ack', 'channel-open-ack', 'channel-close']);
      const info = closeOf(closed);
      void closed.start();
      expect(await info).toEqual({});
    });

    it('that is too large for a frame is not marked sent, so the caller\'s own send fails as any send does', async () => {
      const { worker } = link(echoHost, { maxFrameBytes: 256 });
      const channel = await worker.openChannel({ type: 'mcp' }, { first: ping(1, 'x'.repeat(300)) });
      expect(channel.sentAhead).toBeUndefined();
      void channel.start();
      await expect(channel.send(ping(1, 'x'.repeat(300)))).rejects.toMatchObject({ reason: 'invalid-request' });
    });
  });

  describe('a first message in the channel-open frame itself, to a host that reads open-first', () => {
    const opensWithFirst: Partial<LinkEndpointOptions> = { peerFeatures: new Set(['open-first'] as const) };

    it('gets its ack in the answer\'s write, never alone before it', async () => {
      const host = keepingHost();
      const hostChannels = host.channels;
      const { worker, sidecar } = link(host.onOpen, opensWithFirst);
      const out = framesOut(sidecar).types;
      let opened = false;
      const opening = worker.openChannel({ type: 'mcp' }, { first: ping(1) }).then((channel) => ((opened = true), channel));
      await until(() => hostChannels.length === 1);
      await Promise.resolve();
      expect(out).toEqual([]);
      expect(opened).toBe(false);
      await hostChannels[0]!.send({ jsonrpc: '2.0', id: 1, result: {} });
      expect(out).toEqual(['channel-open-ack', 'channel-message']);
      const channel = await opening;
      const reply = nextMessage(channel);
      void channel.start();
      expect(await reply).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    });

    it('is dropped unread by a refused open, which rejects with the host\'s reason and message', async () => {
      const seen: JSONRPCMessage[] = [];
      const { worker, sidecar } = link(async (_request, channel) => {
        channel.onmessage = (message) => seen.push(message);
        await Promise.resolve();
        throw new WireError('server-not-found', 'Server "nope" not found on this host');
      }, opensWithFirst);
      await expect(worker.openChannel({ type: 'mcp' }, { first: ping(1) })).rejects.toMatchObject({ reason: 'server-not-found', message: 'Server "nope" not found on this host' });
      expect(seen).toEqual([]);
      expect(sidecar.stats.channels).toBe(0);
    });

    it('goes in frames of their own when the two do not fit in one', async () => {
      const { worker, sidecar } = link(echoHost, { ...opensWithFirst, maxFrameBytes: 256 });
      const channel = await worker.openChannel({ type: 'mcp', pad: 'p'.repeat(60) }, { first: ping(1, 'x'.repeat(100)) });
      expect(channel.sentAhead).toEqual(ping(1, 'x'.repeat(100)));
      expect(sidecar.stats.framesIn).toBe(2);
      const reply = nextMessage(channel);
      void channel.start();
      expect(await reply).toEqual(ping(1, 'x'.repeat(100)));
    });

    it('is never sent to a host that did not announce open-first: an older sidecar gets the open with the keys its schema takes', async () => {
      const { worker, received } = rawPeer();
      void worker.openChannel({ type: 'mcp' }, { first: ping(1) }).catch(() => {});
      await until(() => received.length === 2);
      expect(received.map((frame) => Object.keys(frame).sort())).toEqual([
        ['channel', 'request', 'type', 'v'],
        ['channel', 'message', 'type', 'v'],
      ]);
    });
  });

  describe('a last message and close in one channel-reply, to a worker that asked on the open (open-reply)', () => {
    const replies: Partial<LinkEndpointOptions> = { peerFeatures: new Set(['open-first', 'open-reply'] as const) };
    /**
     * A host that answers each channel's first message with `reply` once its open is settled, as a
     * server's answer comes; `replied` holds what each reply threw (null when it went).
     */
    function replyingLink(options: Partial<LinkEndpointOptions>, answer = (message: JSONRPCMessage) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { ok: true } }) as JSONRPCMessage) {
      const replied: Array<Promise<unknown>> = [];
      const made = link(async (_request, channel) => {
        channel.onmessage = (message) => {
          replied.push(new Promise((resolve) => setTimeout(resolve, 0)).then(() => channel.reply(answer(message))).then(() => null, (error: unknown) => error));
        };
        await channel.start();
      }, options);
      const { types: out, texts } = framesOut(made.sidecar);
      return { ...made, out, texts, replied };
    }

    it('acks the open, delivers the answer and then closes the channel on the worker, from one frame', async () => {
      const { worker, sidecar, out, replied } = replyingLink(replies);
      const channel = await worker.openChannel({ type: 'mcp' }, { first: ping(1) });
      expect(out).toEqual(['channel-reply']);
      expect(await replied[0]).toBeNull();
      const got: JSONRPCMessage[] = [];
      channel.onmessage = (message) => got.push(message);
      const closed = closeOf(channel);
      await channel.start();
      expect(got).toEqual([{ jsonrpc: '2.0', id: 1, result: { ok: true } }]);
      expect(await closed).toEqual({});
      expect([worker.stats.channels, sidecar.stats.channels]).toEqual([0, 0]);
      // The worker's own close of a channel already ended sends nothing, and nothing is unknown on either end.
      await channel.close();
      expect([worker.stats.unknownChannelFrames, sidecar.stats.unknownChannelFrames]).toEqual([0, 0]);
    });

    it('is asked for only of a host that announced open-reply, and only with a first message in the open', async () => {
      const asked = rawPeer(replies);
      void asked.worker.openChannel({ type: 'mcp' }, { first: ping(1) }).catch(() => {});
      void asked.worker.openChannel({ type: 'mcp' }).catch(() => {});
      const older = rawPeer({ peerFeatures: new Set(['open-first'] as const) });
      void older.worker.openChannel({ type: 'mcp' }, { first: ping(1) }).catch(() => {});
      await until(() => asked.received.length === 2 && older.received.length === 1);
      expect(asked.received.map((frame) => frame.reply)).toEqual([true, undefined]);
      expect(Object.keys(older.received[0]!).sort()).toEqual(['channel', 'first', 'request', 'type', 'v']);
    });

    it('goes as the answer and a close, as before, to a worker that did not ask', async () => {
      const { worker, out } = replyingLink({ peerFeatures: new Set(['open-first'] as const) });
      const channel = await worker.openChannel({ type: 'mcp' }, { first: ping(1) });
      const got = nextMessage(channel);
      const closed = closeOf(channel);
      void channel.start();
      expect(await got).toEqual({ jsonrpc: '2.0', id: 1, result: { ok: true } });
      expect(await closed).toEqual({});
      expect(out).toEqual(['channel-open-ack', 'channel-message', 'channel-close']);
    });

    it('folds the answer and the close of a slow call whose ack went alone', async () => {
      useFakeClock();
      const host = keepingHost();
      const hostChannels = host.channels;
      const { worker, sidecar } = link(host.onOpen, { ...replies, liveness: false });
      const out = framesOut(sidecar).types;
      const channel = await advanceUntilSettled(worker.openChannel({ type: 'mcp' }, { first: ping(1) }));
      expect(out).toEqual(['channel-open-ack']);
      const got: JSONRPCMessage[] = [];
      channel.onmessage = (message) => got.push(message);
      const closed = closeOf(channel);
      void channel.start();
      await hostChannels[0]!.reply({ jsonrpc: '2.0', id: 1, result: {} });
      expect(out).toEqual(['channel-open-ack', 'channel-reply']);
      expect(await advanceUntilSettled(closed)).toEqual({});
      expect(got).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    });

    it('carries a large result read from a server line as that very text', async () => {
      const text = `{"jsonrpc":"2.0", "id":1, "result":{"content":[{"type":"text","text":"${'é'.repeat(RAW_TEXT_MIN_CHARS)}"}]}}`;
      const read = readJsonRpcText(text);
      if (read.kind !== 'message') throw new Error('expected a message');
      const { worker, out, texts } = replyingLink(replies, () => read.message);
      const channel = await worker.openChannel({ type: 'mcp' }, { first: ping(1) });
      const got = nextMessage(channel);
      void channel.start();
      expect(await got).toEqual(JSON.parse(text));
      expect(out).toEqual(['channel-reply']);
      expect(texts).toEqual([`{"v":1,"type":"channel-reply","channel":${channel.id},"message":${text}}`]);
    });

    it('fails as a send does when the answer is too large for a frame, and still closes the channel', async () => {
      const { worker, out, replied } = replyingLink({ ...replies, maxFrameBytes: 256 }, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { big: 'x'.repeat(300) } }) as JSONRPCMessage);
      const channel = await worker.openChannel({ type: 'mcp' }, { first: ping(1) });
      const closed = closeOf(channel);
      void channel.start();
      expect(await closed).toEqual({});
      expect(await replied[0]).toMatchObject({ reason: 'invalid-request' });
      expect(out).toEqual(['channel-open-ack', 'channel-close']);
    });
  });

  it('closes a channel on both ends when either end closes it', async () => {
    const hostChannels: ChannelTransport[] = [];
    const { worker } = link(async (_r, channel) => {
      hostChannels.push(channel);
      void channel.start();
    });
    const channel = await worker.openChannel({});
    void channel.start();
    const hostSide = hostChannels[0]!;
    const hostClosed = closeOf(hostSide);
    await channel.close();
    expect(await hostClosed).toEqual({});

    const second = await worker.openChannel({});
    const secondClosed = closeOf(second);
    void second.start();
    await hostChannels[1]!.close({ reason: 'server-exited', message: 'Server "echo" exited with code 3' });
    expect(await secondClosed).toEqual({ reason: 'server-exited', message: 'Server "echo" exited with code 3' });
  });

  it('rejects an open that gets no answer with request-timeout', async () => {
    useFakeClock();
    const { worker, received } = rawPeer({ openTimeoutMs: 30 });
    await expect(advanceUntilSettled(worker.openChannel({}))).rejects.toMatchObject({ reason: 'request-timeout' });
    expect(received.map((f) => f.type)).toEqual(['channel-open', 'channel-close']);
  });

  it('gives up an open when the caller\'s deadline aborts, with the caller\'s error, instead of its own timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { worker, received } = rawPeer({ openTimeoutMs: 1 });
    const deadline = new AbortController();
    const opening = worker.openChannel({}, { signal: deadline.signal });
    await vi.advanceTimersByTimeAsync(1_000); // far past the endpoint's own 1 ms
    vi.useRealTimers();
    expect(received.map((f) => f.type)).toEqual(['channel-open']);
    const timedOut = new WireError('request-timeout', 'Opening server "files" took longer than 60 s: check its host and try again');
    deadline.abort(timedOut);
    await expect(opening).rejects.toBe(timedOut);
    expect(received.map((f) => f.type)).toEqual(['channel-open', 'channel-close']);
    expect(received[1]).toMatchObject({ reason: 'request-timeout' });
  });

  it('reads nothing once it has closed the link: the peer\'s frames crossing its link-close (both ends stopping at once) are not warned about', async () => {
    // A socket whose close handshake is still under way: frames the peer sent meanwhile still arrive.
    const socket = new CallbackFrameSocket({ send() {}, close() {} });
    const warnings: string[] = [];
    const sidecar = new LinkEndpoint(socket, { role: 'sidecar', onOpen: echoHost, log: { info() {}, warn: (msg) => warnings.push(msg) } });
    socket.receive(JSON.stringify({ v: 1, type: 'channel-open', channel: 1, request: {} }));
    await until(() => sidecar.stats.channels === 1);
    sidecar.close({ message: 'Sidecar stopping' });
    socket.receive(JSON.stringify({ v: 1, type: 'channel-close', channel: 1 }));
    socket.receive(JSON.stringify({ v: 1, type: 'channel-message', channel: 1, message: ping(1) }));
    expect(warnings).toEqual([]);
    expect(sidecar.stats.unknownChannelFrames).toBe(0);
  });

  it('ignores and counts frames for unknown channel ids and malformed frames, and keeps working', async () => {
    const { worker, raw, received } = rawPeer();
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: 999, message: ping(1) }));
    raw.send(JSON.stringify({ v: 1, type: 'channel-close', channel: 998 }));
    raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: 997 }));
    raw.send('not json');
    raw.send(JSON.stringify({ v: 1, type: 'no-such-frame' }));
    // The handshake is over before an endpoint exists: a late one is as good as malformed.
    raw.send(JSON.stringify({ v: 1, type: 'link-accepted' }));
    await until(() => worker.stats.framesIn === 6);
    expect(worker.stats).toMatchObject({ unknownChannelFrames: 3, malformedFrames: 3 });
    expect(worker.closed).toBe(false);
    const opened = worker.openChannel({});
    await until(() => received.length === 1);
    raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: received[0]!.channel }));
    await expect(opened).resolves.toBeDefined();
  });

  describe('a close crossing the peer\'s close of the same channel', () => {
    /** Answers a request and closes its channel in the same turn, as a modern channel's host does. */
    const answerAndClose: ChannelOpenHandler = async (_request, channel) => {
      channel.onmessage = (message) => {
        if (!('method' in message) || !('id' in message)) return;
        void channel.send({ jsonrpc: '2.0', id: message.id, result: {} }).catch(() => {});
        void channel.close();
      };
      void channel.start();
    };
    const unknownWarning = 'Ignored a frame for an unknown channel';

    it('is dropped quietly on both ends: neither counts nor logs the other\'s close as an unknown channel', async () => {
      const warnings: Record<string, string[]> = { worker: [], sidecar: [] };
      const logTo = (end: string) => ({ log: { info() {}, warn: (message: string) => warnings[end]!.push(message) } });
      const [workerSocket, sidecarSocket] = createFrameSocketPair();
      const worker = new LinkEndpoint(workerSocket, { role: 'worker', ...logTo('worker') });
      const sidecar = new LinkEndpoint(sidecarSocket, { role: 'sidecar', onOpen: answerAndClose, ...logTo('sidecar') });
      endpoints.push(worker, sidecar);
      const closes: string[] = [];
      worker.onFrame = (direction, text) => JSON.parse(text).type === 'channel-close' && closes.push(`worker ${direction}`);
      sidecar.onFrame = (direction, text) => JSON.parse(text).type === 'channel-close' && closes.push(`sidecar ${direction}`);
      const ids: number[] = [];
      for (let i = 1; i <= 3; i++) {
        const channel = await worker.openChannel({ type: 'mcp' });
        ids.push(channel.id);
        const answered = new Promise<void>((resolve) => {
          // The worker's modern relay closes the channel as soon as the answer is in: the host's
          // close, sent right behind the answer, is then on its way already.
          channel.onmessage = () => {
            void channel.close();
            resolve();
          };
        });
        await channel.start();
        await channel.send(ping(i));
        await answered;
      }
      // Frames go in order each way: once this open's ack is back, both ends have read every close.
      await worker.openChannel({ type: 'mcp' });
      expect(closes.filter((c) => c === 'worker out')).toHaveLength(3);
      expect(closes.filter((c) => c === 'worker in')).toHaveLength(3);
      expect(closes.filter((c) => c === 'sidecar in')).toHaveLength(3);
      expect(worker.stats.unknownChannelFrames).toBe(0);
      expect(sidecar.stats.unknownChannelFrames).toBe(0);
      expect(warnings).toEqual({ worker: [], sidecar: [] });

      // The peer's close was its last word there: another frame for that channel is unknown again,
      // as is one for a channel never opened.
      sidecarSocket.send(JSON.stringify({ v: 1, type: 'channel-close', channel: ids[0] }));
      sidecarSocket.send(JSON.stringify({ v: 1, type: 'channel-message', channel: 999, message: ping(9) }));
      await worker.openChannel({ type: 'mcp' });
      expect(worker.stats.unknownChannelFrames).toBe(2);
      expect(warnings.worker).toEqual([unknownWarning]);
    });

    it('is dropped quietly when it comes with a late answer to an open given up, and remembered for the last REMEMBERED_CLOSES channels only', async () => {
      const { worker, raw } = rawPeer();
      const opened: number[] = [];
      raw.onmessage = (text) => {
        const frame = JSON.parse(text) as { type: string; channel: number };
        if (frame.type !== 'channel-open') return;
        opened.push(frame.channel);
        if (opened.length > 1) raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: frame.channel }));
      };
      const deadline = new AbortController();
      const givenUp = worker.openChannel({}, { signal: deadline.signal });
      deadline.abort();
      await expect(givenUp).rejects.toMatchObject({ reason: 'request-timeout' });
      // The host had accepted and answered before it heard: ack, answer and close all cross.
      const first = opened[0]!;
      raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: first }));
      raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: first, message: { jsonrpc: '2.0', id: 1, result: {} } }));
      raw.send(JSON.stringify({ v: 1, type: 'channel-close', channel: first }));
      for (let i = 0; i <= REMEMBERED_CLOSES; i++) await (await worker.openChannel({})).close();
      expect(worker.stats.unknownChannelFrames).toBe(0);
      // The first of these is one close too far back and forgotten; the last one is remembered.
      raw.send(JSON.stringify({ v: 1, type: 'channel-close', channel: opened[1] }));
      raw.send(JSON.stringify({ v: 1, type: 'channel-close', channel: opened.at(-1) }));
      await worker.openChannel({});
      expect(worker.stats.unknownChannelFrames).toBe(1);
    });
  });

  it('fails a send that is too large for a frame, without truncating, and keeps the link', async () => {
    const { worker } = link(echoHost, { maxFrameBytes: 1024 });
    const channel = await worker.openChannel({});
    void channel.start();
    await expect(channel.send(ping(1, 'x'.repeat(2000)))).rejects.toThrow(/Message too large for the link/);
    await expect(channel.send(ping(1, 'é'.repeat(600)))).rejects.toThrow(WireError);
    const reply = nextMessage(channel);
    await channel.send(ping(2, 'small'));
    expect(await reply).toEqual(ping(2, 'small'));
  });

  it('closes the link with a reason when an oversized frame arrives', async () => {
    const { worker, raw, received } = rawPeer({ maxFrameBytes: 1024 });
    const closedFromRaw = new Promise((resolve) => (raw.onclose = resolve));
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: 1, message: ping(1, 'x'.repeat(2000)) }));
    expect(await worker.whenClosed).toMatchObject({ reason: 'invalid-request', by: 'this-end', message: expect.stringContaining('exceeds the 1024 byte limit') });
    expect(await closedFromRaw).toMatchObject({ code: 1009 });
    expect(received.at(-1)).toMatchObject({ type: 'link-close', reason: 'invalid-request' });
  });

  it('closes the link when the peer speaks another protocol version', async () => {
    const { worker, raw } = rawPeer();
    raw.send(JSON.stringify({ v: 2, type: 'keepalive', id: 1 }));
    expect(await worker.whenClosed).toMatchObject({ reason: 'invalid-request', message: expect.stringContaining('version 2') });
  });

  it('answers keepalives, and a link with live keepalives stays up', async () => {
    useFakeClock();
    const { worker, sidecar } = link(echoHost, { keepaliveIntervalMs: 10, deadAfterMs: 40 });
    const { raw, received } = rawPeer();
    raw.send(JSON.stringify({ v: 1, type: 'keepalive', id: 41 }));
    await advanceBy(0);
    expect(received).toContainEqual(expect.objectContaining({ type: 'keepalive-reply', id: 41 }));
    await advanceBy(200); // five times the dead-after bound, with keepalives every 10 ms
    expect(worker.closed).toBe(false);
    expect(sidecar.closed).toBe(false);
  });

  it('notices a silent peer and fails every channel with host-offline', async () => {
    useFakeClock();
    const { worker, raw, received } = rawPeer({ keepaliveIntervalMs: 10, deadAfterMs: 60 });
    const opened = worker.openChannel({});
    await advanceBy(0);
    raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: received.find((f) => f.type === 'channel-open')!.channel }));
    const channel = await opened;
    const closed = closeOf(channel);
    void channel.start();
    raw.onmessage = () => {}; // from now on the peer reads but never answers
    expect(await advanceUntilSettled(worker.whenClosed)).toMatchObject({ reason: 'host-offline', by: 'silence', message: expect.stringContaining('the link is dead') });
    expect(await closed).toMatchObject({ reason: 'host-offline' });
    await expect(channel.send(ping(1))).rejects.toMatchObject({ reason: 'host-offline' });
    await expect(worker.openChannel({})).rejects.toMatchObject({ reason: 'host-offline' });
  });

  it('when the link drops, every worker channel and pending open fails at once and every host channel closes', async () => {
    const hostClosed: Promise<ChannelCloseInfo>[] = [];
    let hold = false;
    const { worker, workerSocket } = link(async (_r, channel) => {
      hostClosed.push(closeOf(channel));
      void channel.start();
      if (hold) await new Promise(() => {});
    });
    const channels = await Promise.all([worker.openChannel({}), worker.openChannel({}), worker.openChannel({})]);
    hold = true;
    const pending = worker.openChannel({});
    await until(() => hostClosed.length === 4);
    const workerClosed = channels.map((c) => {
      const p = closeOf(c);
      void c.start();
      return p;
    });
    (workerSocket as CallbackFrameSocket).abort();
    for (const info of await Promise.all(workerClosed)) expect(info.reason).toBe('host-offline');
    await expect(pending).rejects.toMatchObject({ reason: 'host-offline' });
    for (const info of await Promise.all(hostClosed)) expect(info.reason).toBe('host-offline');
  });

  it('keeps 100 concurrent channels apart', async () => {
    const { worker } = link();
    const results = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const channel = await worker.openChannel({});
        const reply = nextMessage(channel);
        void channel.start();
        await channel.send(ping(i, `payload-${i}`));
        const message = await reply;
        await channel.close();
        return message;
      }),
    );
    results.forEach((message, i) => expect(message).toEqual(ping(i, `payload-${i}`)));
    expect(worker.stats.channels).toBe(0);
  });

  it('measures frame size in UTF-8 bytes', () => {
    expect(exceeds('a'.repeat(10), 10)).toBe(false);
    expect(exceeds('a'.repeat(11), 10)).toBe(true);
    expect(exceeds('é'.repeat(5), 10)).toBe(false);
    expect(exceeds('é'.repeat(6), 10)).toBe(true);
  });
});
