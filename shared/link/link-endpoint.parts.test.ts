/**
 * A host's frames in turns and large ones in pieces (`link-sender.ts`), end to end between two
 * endpoints: the sidecar's socket reports each write once the worker's end has it, as a `ws`
 * socket's callback does once the kernel has it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelTransport } from '../channel-transport.ts';
import { channelPartHeader, MAX_FRAME_BYTES } from '../frames.ts';
import { LARGE_FRAME_CHARS, PARTED_FRAMES, partedHeldLimit } from './link-sender.ts';
import type { FlowLimits } from './link-flow.ts';
import { CallbackFrameSocket } from './frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler } from './link-endpoint.ts';
import { LINK_FEATURES } from './link-features.ts';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

/** The header of a frame as sent: a piece's JSON line, or the whole frame. */
const headerOf = (text: string) => JSON.parse(text.split('\n', 1)[0]!) as { type: string; frames?: number };

/**
 * A worker's and a sidecar's sockets joined in one process, each frame delivered a microtask
 * later; the sidecar's reports each write once the worker's end has its frame, as a `ws` socket's
 * callback does once the kernel has it (`sidecarTracksWrites`, the default: false is the worker's
 * kind, where only the peer's acks say what went). `sent` lists the header of every frame each
 * end sent, in order; `closes`, the close codes used. `workerDelayMs`: the worker's frames reach
 * the sidecar that much later (a long round trip, as the host's window sees it in its acks).
 */
function joinedSockets(sidecarTracksWrites = true, workerDelayMs?: number) {
  let worker!: CallbackFrameSocket;
  let sidecar!: CallbackFrameSocket;
  const sent = { worker: [] as ReturnType<typeof headerOf>[], sidecar: [] as ReturnType<typeof headerOf>[] };
  const closes: (number | undefined)[] = [];
  const ended = (code?: number) =>
    queueMicrotask(() => {
      closes.push(code);
      worker.ended({ code: code ?? 1000 });
      sidecar.ended({ code: code ?? 1000 });
    });
  worker = new CallbackFrameSocket({
    send: (text) => {
      sent.worker.push(headerOf(text));
      if (workerDelayMs === undefined) queueMicrotask(() => sidecar.receive(text));
      else setTimeout(() => sidecar.receive(text), workerDelayMs);
    },
    close: ended,
  });
  sidecar = new CallbackFrameSocket({
    send: (text) => {
      sent.sidecar.push(headerOf(text));
      queueMicrotask(() => {
        worker.receive(text);
        if (sidecarTracksWrites) sidecar.written();
      });
    },
    close: ended,
    tracksWrites: sidecarTracksWrites,
  });
  return { worker, sidecar, sent, closes };
}

interface Options {
  /** What each end was told of pacing: both by default. */
  paced?: { worker: boolean; sidecar: boolean };
  maxFrameBytes?: number;
}

/** Worker and sidecar ends; `wire` lists the type of every frame the sidecar sent, in order. */
function link(options: Options = {}) {
  const sockets = joinedSockets();
  const channels: ChannelTransport[] = [];
  const onOpen: ChannelOpenHandler = async (_request, channel) => {
    channels.push(channel);
    await channel.start();
  };
  const max = options.maxFrameBytes !== undefined ? { maxFrameBytes: options.maxFrameBytes } : {};
  const worker = new LinkEndpoint(sockets.worker, { role: 'worker', peer: 'test-host', paced: options.paced?.worker ?? true, ...max });
  const sidecar = new LinkEndpoint(sockets.sidecar, { role: 'sidecar', onOpen, paced: options.paced?.sidecar ?? true, sender: { socketBytes: 1000, partChars: 1000 }, ...max });
  endpoints.push(worker, sidecar);
  /** What each channel the worker opened received, in the order received across channels. */
  const received: { channel: string; text: string }[] = [];
  return {
    worker,
    sidecar,
    get wire() {
      return sockets.sent.sidecar.map((frame) => frame.type);
    },
    closes: sockets.closes,
    received,
    channels,
    /** Opens a channel for server `name`, for `agent` when given. */
    async open(name: string, agent?: string): Promise<ChannelTransport> {
      const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': name, ...(agent !== undefined ? { agent } : {}) } });
      channel.onmessage = (message) => received.push({ channel: name, text: String((message as unknown as { params: { data: string } }).params.data) });
      channel.onclose = () => received.push({ channel: name, text: 'closed' });
      await channel.start();
      return channel;
    },
  };
}

const note = (data: string): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('LinkEndpoint frames in turns and in pieces', () => {
  it('delivers a large message whole, sent in pieces, with a character split across two pieces intact', async () => {
    const l = link();
    await l.open('alice');
    // 🦊 is two UTF-16 code units: at this length one falls across a piece boundary.
    const data = `${'x'.repeat(911)}${'🦊'.repeat(3000)}é`;
    await l.channels[0]!.send(note(data));
    await settled();
    expect(l.received).toEqual([{ channel: 'alice', text: data }]);
    expect(l.wire.filter((type) => type === 'channel-part').length).toBeGreaterThan(5);
    expect(l.worker.stats.malformedFrames).toBe(0);
  });

  it('lets a small message on another channel through before a large one is all sent', async () => {
    const l = link();
    await l.open('alice');
    await l.open('bob');
    const [alice, bob] = [l.channels[0]!, l.channels[1]!];
    const big = 'A'.repeat(20_000);
    void alice.send(note(big));
    void alice.send(note(big));
    void bob.send(note('bob'));
    await settled();
    expect(l.received.map((r) => r.channel)).toEqual(['bob', 'alice', 'alice']);
    expect(l.received.slice(1).every((r) => r.text === big)).toBe(true);
  });

  it('takes turns by agent: another agent\'s message goes after one frame of the many one agent\'s three sessions queued before it', async () => {
    const l = link();
    for (const name of ['a1', 'a2', 'a3']) await l.open(name, 'alice');
    await l.open('bob', 'bob');
    const data = 'x'.repeat(600);
    for (let i = 0; i < 3; i++) for (let c = 0; c < 3; c++) void l.channels[c]!.send(note(data));
    void l.channels[3]!.send(note('bob'));
    await settled();
    // Two of alice's frames went before the socket was full; then alice's turn, then bob's. By channel, bob came after one frame of each of alice's sessions.
    expect(l.received.map((r) => r.channel)).toEqual(['a1', 'a2', 'a3', 'bob', 'a1', 'a2', 'a3', 'a1', 'a2', 'a3']);
  });

  it('keeps a channel\'s order: its close arrives behind its large message', async () => {
    const l = link();
    await l.open('alice');
    const big = 'A'.repeat(5_000);
    void l.channels[0]!.send(note(big));
    void l.channels[0]!.close();
    await settled();
    expect(l.received).toEqual([{ channel: 'alice', text: big }, { channel: 'alice', text: 'closed' }]);
  });

  it('sends a large message whole where the worker did not say it reads pieces', async () => {
    const l = link({ paced: { worker: true, sidecar: false } });
    await l.open('alice');
    const big = 'A'.repeat(5_000);
    await l.channels[0]!.send(note(big));
    await settled();
    expect(l.received).toEqual([{ channel: 'alice', text: big }]);
    expect(l.wire).not.toContain('channel-part');
  });

  it('refuses pieces where the worker did not say it reads them, and keeps the link', async () => {
    const l = link({ paced: { worker: false, sidecar: true } });
    await l.open('alice');
    await l.channels[0]!.send(note('A'.repeat(5_000)));
    await settled();
    expect(l.received).toEqual([]);
    expect(l.worker.stats.malformedFrames).toBeGreaterThan(0);
    expect(l.worker.closed).toBe(false);
  });

  it('ends the link, as for an oversized frame, when a host\'s pieces add up past the frame limit', async () => {
    const w = lonelyWorker(200);
    w.receive(part(1, 'A'.repeat(120)));
    expect(w.endpoint.closed).toBe(false);
    w.receive(part(1, 'A'.repeat(120)));
    expect(w.endpoint.closed).toBe(true);
    expect(w.closes).toEqual([1009]);
  });

  it('ends the link when a host holds more frames in part at once than a host that follows the rules can', async () => {
    const w = lonelyWorker(MAX_FRAME_BYTES);
    // One large frame in part and fifteen smaller ones is what the sender holds at most (partedHeldLimit).
    w.receive(part(1, 'A'.repeat(MAX_FRAME_BYTES - 100)));
    for (let channel = 2; channel <= 16; channel++) w.receive(part(channel, 'A'.repeat(LARGE_FRAME_CHARS)));
    expect(w.endpoint.closed).toBe(false);
    w.receive(part(17, 'A'.repeat(200)));
    expect(w.endpoint.closed).toBe(true);
  });

  it('ends the link when a host begins more frames in pieces at once than a sender has, however small they are', () => {
    const w = lonelyWorker(MAX_FRAME_BYTES);
    for (let channel = 1; channel <= PARTED_FRAMES; channel++) w.receive(part(channel, 'A'));
    expect(w.endpoint.closed).toBe(false);
    w.receive(part(PARTED_FRAMES + 1, 'A'));
    expect([w.endpoint.closed, w.closes]).toEqual([true, [1008]]);
  });

  it('counts each tiny piece at a floor, so a flood of one-character pieces ends the link long before it fills the worker\'s memory', () => {
    const w = lonelyWorker(MAX_FRAME_BYTES);
    let pieces = 0;
    while (!w.endpoint.closed && pieces < 1_000_000) {
      w.receive(part(1, 'A'));
      pieces++;
    }
    expect(pieces).toBeLessThanOrEqual(Math.ceil(partedHeldLimit(MAX_FRAME_BYTES) / 1024) + 1);
    expect(w.closes).toEqual([1009]);
  });

  it('ignores an empty piece that is not its frame\'s last, and holds nothing for it', () => {
    const w = lonelyWorker(MAX_FRAME_BYTES);
    for (let channel = 1; channel <= PARTED_FRAMES + 1; channel++) w.receive(part(channel, ''));
    expect([w.endpoint.stats.malformedFrames, w.endpoint.closed]).toEqual([PARTED_FRAMES + 1, false]);
  });

  it('ignores, as malformed, pieces that make no message of their own channel', async () => {
    const w = lonelyWorker(10_000);
    const elsewhere = JSON.stringify({ v: 1, type: 'channel-message', channel: 2, message: note('x') });
    w.receive(part(1, elsewhere.slice(0, 10)));
    w.receive(part(1, elsewhere.slice(10), true));
    const keepalive = JSON.stringify({ v: 1, type: 'keepalive', id: 3 });
    w.receive(part(3, keepalive, true));
    w.receive('{"v":1,"type":"channel-part","channel":4}'); // no newline, no piece
    w.receive('{"v":1,"type":"channel-part","channel":4,"text":"x"}\nx'); // a key the header does not have
    expect(w.endpoint.stats.malformedFrames).toBe(4);
    expect(w.endpoint.closed).toBe(false);
  });
});

const part = (channel: number, text: string, last = false) => `${channelPartHeader(channel, last)}${text}`;

/** A worker end that reads pieces, fed frames by the test; `closes` lists the close codes it used. */
function lonelyWorker(maxFrameBytes: number, paced = true) {
  const closes: (number | undefined)[] = [];
  const sent: Record<string, unknown>[] = [];
  const socket = new CallbackFrameSocket({ send: (text) => sent.push(JSON.parse(text) as Record<string, unknown>), close: (code) => closes.push(code) });
  const endpoint = new LinkEndpoint(socket, { role: 'worker', peer: 'test-host', paced, maxFrameBytes, liveness: false, acks: { everyChars: 1_000_000, delayMs: 5 } });
  endpoints.push(endpoint);
  return { endpoint, closes, sent, receive: (text: string) => socket.receive(text) };
}

describe('LinkEndpoint acknowledgements on a paced link', () => {
  it('has the worker acknowledge what it read, at once past a size and the rest after a delay, so the host\'s window empties', async () => {
    const sockets = joinedSockets();
    const channels: ChannelTransport[] = [];
    const worker = new LinkEndpoint(sockets.worker, { role: 'worker', peer: 'test-host', paced: true, liveness: false, acks: { everyChars: 1000, delayMs: 20 } });
    const sidecar = new LinkEndpoint(sockets.sidecar, {
      role: 'sidecar',
      paced: true,
      liveness: false,
      sender: { window: { minBytes: 2000 } },
      onOpen: async (_request, channel) => {
        channels.push(channel);
        await channel.start();
      },
    });
    endpoints.push(worker, sidecar);
    const received: JSONRPCMessage[] = [];
    const channel = await worker.openChannel({ type: 'mcp' });
    channel.onmessage = (m) => received.push(m);
    await channel.start();
    // 10 frames of about 600: the window (2000) holds three at a time, so the rest go only as acks come.
    for (let i = 0; i < 10; i++) void channels[0]!.send(note(`${i}`.padEnd(500, '.')));
    await expect.poll(() => received.length).toBe(10);
    // The last few frames, under the size, are acknowledged by the timer.
    await expect.poll(() => sidecar.stats.unackedBytes).toBe(0);
    const acks = sockets.sent.worker.filter((frame) => frame.type === 'link-ack').map((frame) => frame.frames!);
    expect(acks.length).toBeGreaterThan(2);
    expect(acks.reduce((a, b) => a + b, 0)).toBe(11); // the ack of the open, and the ten messages: every frame the host sent
    expect(sidecar.stats).toMatchObject({ unackedBytes: 0, waitingFrames: 0 });
  });

  it('acknowledges the channels\' frames only, never the link\'s own: acks of acks would never end', async () => {
    const w = lonelyWorker(10_000);
    for (let id = 0; id < 3; id++) w.receive(JSON.stringify({ v: 1, type: 'keepalive', id }));
    w.receive('{"v":1,"type":"link-ack","frames":2}');
    w.receive('{"v":1,"type":"keepalive-reply","id":7}');
    w.receive('{"v":1,"type":"channel-close","channel":9}'); // for no channel, but a channel's frame the peer counted
    await expect.poll(() => w.sent.filter((f) => f.type === 'link-ack')).toEqual([{ v: 1, type: 'link-ack', frames: 1 }]);
    expect(w.sent.filter((f) => f.type === 'keepalive-reply')).toHaveLength(3);
  });

  it('refuses an ack where the link is not paced, and keeps the link', () => {
    const w = lonelyWorker(10_000, false);
    w.receive('{"v":1,"type":"link-ack","frames":3}');
    expect(w.endpoint.stats.malformedFrames).toBe(1);
    expect(w.endpoint.closed).toBe(false);
  });
});

describe('the host\'s window on a paced link (link-window.ts)', () => {
  /**
   * The sidecar floods one channel with `frames` frames of 5 KB while the worker's acks take 30 ms
   * to come back; returns the largest window the sidecar had while the worker read them.
   */
  async function flood(sidecarOptions: { handshakeRttMs?: number; keepalive?: boolean }, frames = 200) {
    const sockets = joinedSockets(true, 30);
    const channels: ChannelTransport[] = [];
    const worker = new LinkEndpoint(sockets.worker, { role: 'worker', peer: 'test-host', paced: true, liveness: false, acks: { everyChars: 5000, delayMs: 20 } });
    const sidecar = new LinkEndpoint(sockets.sidecar, {
      role: 'sidecar',
      paced: true,
      ...(sidecarOptions.keepalive === true ? { keepaliveIntervalMs: 10, deadAfterMs: 60_000 } : { liveness: false }),
      ...(sidecarOptions.handshakeRttMs !== undefined ? { handshakeRttMs: sidecarOptions.handshakeRttMs } : {}),
      sender: { window: { minBytes: 20_000, maxBytes: 400_000 }, socketBytes: 1e9 },
      onOpen: async (_request, channel) => {
        channels.push(channel);
        await channel.start();
      },
    });
    endpoints.push(worker, sidecar);
    const channel = await worker.openChannel({ type: 'mcp' });
    const received: string[] = [];
    let largest = 0;
    channel.onmessage = (message) => {
      received.push(String((message as unknown as { params: { data: string } }).params.data));
      largest = Math.max(largest, sidecar.stats.windowBytes);
    };
    await channel.start();
    if (sidecarOptions.keepalive === true) await expect.poll(() => sockets.sent.worker.some((frame) => frame.type === 'keepalive-reply') && sidecar.stats.framesIn > 1).toBe(true);
    const sent = Array.from({ length: frames }, (_, i) => `${i}`.padEnd(5000, '.'));
    for (const data of sent) void channels[0]!.send(note(data));
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(frames);
    expect(received).toEqual(sent);
    return largest;
  }

  it('grows past its least while a flood fills it over a long round trip, the handshake\'s', async () => {
    expect(await flood({ handshakeRttMs: 30 })).toBeGreaterThan(3 * 20_000);
  });

  it('grows as well with the round trip of a keepalive and its reply', async () => {
    expect(await flood({ keepalive: true })).toBeGreaterThan(3 * 20_000);
  });

  it('stays at its least while no round trip is known', async () => {
    expect(await flood({}, 60)).toBe(20_000);
  });
});

describe('the worker\'s end of a paced link', () => {
  /** Worker and sidecar over sockets that report no writes (the worker's never does): the sidecar's acks pace the worker. */
  function pacedPair(windowBytes: number) {
    const sockets = joinedSockets(false);
    const received: { server: string; data: string }[] = [];
    const worker = new LinkEndpoint(sockets.worker, { role: 'worker', peer: 'test-host', paced: true, liveness: false, sender: { window: { minBytes: windowBytes }, partChars: 1000 }, peerFeatures: new Set(LINK_FEATURES) });
    const sidecar = new LinkEndpoint(sockets.sidecar, {
      role: 'sidecar',
      paced: true,
      liveness: false,
      acks: { everyChars: 500, delayMs: 5 },
      onOpen: async (request, channel) => {
        const server = (request as { server: string }).server;
        channel.onmessage = (m) => received.push({ server, data: String((m as unknown as { params: { data: string } }).params.data) });
        await channel.start();
      },
    });
    endpoints.push(worker, sidecar);
    return { worker, sidecar, toSidecar: () => sockets.sent.worker.map((frame) => frame.type), received };
  }

  it('sends an agent\'s large message in pieces and another agent\'s small one between them, as the host acknowledges', async () => {
    const p = pacedPair(1500);
    const alice = await p.worker.openChannel({ server: 'alice' });
    const bob = await p.worker.openChannel({ server: 'bob' });
    await Promise.all([alice.start(), bob.start()]);
    const big = 'A'.repeat(10_000);
    void alice.send(note(big));
    void bob.send(note('bob'));
    await expect.poll(() => p.received.length).toBe(2);
    expect(p.received).toEqual([{ server: 'bob', data: 'bob' }, { server: 'alice', data: big }]);
    expect(p.toSidecar().filter((type) => type === 'channel-part').length).toBeGreaterThan(5);
    await expect.poll(() => p.worker.stats.unackedBytes).toBe(0);
  });

  it('sends a channel open whose first message is large in pieces, which the host reads as the open', async () => {
    const p = pacedPair(100_000);
    const first = note('F'.repeat(5_000));
    const channel = await p.worker.openChannel({ server: 'modern' }, { first });
    await channel.start();
    await expect.poll(() => p.received).toEqual([{ server: 'modern', data: 'F'.repeat(5_000) }]);
    expect(p.toSidecar()[0]).toBe('channel-part');
  });
});

describe('a modern request\'s large answer on a paced link', () => {
  it('arrives whole in a channel-reply sent in pieces, and its channel closes behind it', async () => {
    const sockets = joinedSockets();
    const big = { jsonrpc: '2.0' as const, id: 1, result: { content: [{ type: 'text', text: 'R'.repeat(5_000) }] } };
    const worker = new LinkEndpoint(sockets.worker, { role: 'worker', peer: 'test-host', paced: true, liveness: false, peerFeatures: new Set(LINK_FEATURES) });
    const sidecar = new LinkEndpoint(sockets.sidecar, {
      role: 'sidecar',
      paced: true,
      liveness: false,
      sender: { partChars: 1000 },
      onOpen: async (_request, channel) => {
        channel.onmessage = () => void channel.reply(big);
        await channel.start();
      },
    });
    endpoints.push(worker, sidecar);
    const channel = await worker.openChannel({ type: 'mcp' }, { first: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'big' } } });
    const received: unknown[] = [];
    const closed = new Promise<void>((resolve) => (channel.onclose = () => resolve()));
    channel.onmessage = (m) => received.push(m);
    await channel.start();
    await closed;
    const types = sockets.sent.sidecar.map((frame) => frame.type);
    expect(received).toEqual([big]);
    expect(types.filter((type) => type === 'channel-part').length).toBeGreaterThan(4);
    expect(types).not.toContain('channel-close');
  });
});

describe('the worker\'s end of a paced link, an agent sending faster than the host reads', () => {
  /**
   * A worker's end of a paced link to a host the test plays: the host answers each open at once,
   * and acknowledges each frame as it comes while `reading`; otherwise nothing, until `ackAll()`.
   * `sent` lists the type of every frame the host is to acknowledge, in order.
   */
  function workerToHost(flow: Partial<FlowLimits>, reading = false) {
    let socket!: CallbackFrameSocket;
    const host = { reading, sent: [] as string[], acked: 0 };
    socket = new CallbackFrameSocket({
      send: (text) => {
        const frame = headerOf(text) as { type: string; channel?: number };
        if (frame.type === 'channel-open') queueMicrotask(() => socket.receive(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: frame.channel })));
        if (['keepalive', 'keepalive-reply', 'link-ack', 'link-close'].includes(frame.type)) return;
        host.sent.push(frame.type);
        if (!host.reading) return;
        host.acked++;
        queueMicrotask(() => socket.receive(JSON.stringify({ v: 1, type: 'link-ack', frames: 1 })));
      },
      close: () => {},
    });
    const worker = new LinkEndpoint(socket, { role: 'worker', peer: 'test-host', paced: true, liveness: false, sender: { window: { minBytes: 100 } }, flow });
    endpoints.push(worker);
    return {
      worker,
      host,
      /** The host reads all it was sent, and what each ack lets go, until none waits. */
      ackAll() {
        while (host.sent.length > host.acked) {
          const frames = host.sent.length - host.acked;
          host.acked = host.sent.length;
          socket.receive(JSON.stringify({ v: 1, type: 'link-ack', frames }));
        }
      },
    };
  }

  it('refuses a request with limit-reached while the session\'s messages wait past its budget, lets answers and notifications by, and takes requests again once they drained', async () => {
    const { worker, host, ackAll } = workerToHost({ channelBytes: 500, channelResumeBytes: 100, linkBytes: 1e9, linkResumeBytes: 1e9 - 1 });
    const channel = await worker.openChannel({ type: 'mcp' });
    await channel.start();
    for (let i = 0; i < 3; i++) await channel.send(note(`${i}`.padEnd(300, '.')));
    const request = { jsonrpc: '2.0' as const, id: 7, method: 'tools/call', params: { name: 'echo' } };
    await expect(channel.send(request)).rejects.toMatchObject({ reason: 'limit-reached' });
    await channel.send(note('a notification still goes'));
    await channel.send({ jsonrpc: '2.0', id: 'server-1', result: {} }); // and an answer to the server's own request
    ackAll();
    expect(worker.stats).toMatchObject({ waitingFrames: 0, unackedBytes: 0, heldChannels: 0 });
    await expect(channel.send(request)).resolves.toBeUndefined();
    expect(host.sent.filter((type) => type === 'channel-message')).toHaveLength(6); // three notes, the notification, the answer, the request: not the refused one
  });

  it('refuses an agent\'s new channel and its sessions\' requests with limit-reached while its messages wait past the agent\'s budget, another agent\'s not, and takes them again once drained', async () => {
    // Each session's budget is past the test's reach: only the agent's can refuse.
    const { worker, host, ackAll } = workerToHost({ channelBytes: 1e8, channelResumeBytes: 1e7, linkBytes: 1e9, linkResumeBytes: 1e9 - 1, agentBytes: 1000 }, true);
    const open = (agent: string) => worker.openChannel({ type: 'mcp', connection: { 'server-name': 'echo', agent } });
    const sessions = [await open('alice'), await open('alice'), await open('bob')];
    for (const session of sessions) await session.start();
    host.reading = false;
    // Alice's two sessions queue 1,200 bytes past the window between them: over her budget.
    for (const session of sessions.slice(0, 2)) for (let i = 0; i < 2; i++) await session.send(note(`${i}`.padEnd(300, '.')));
    const request = (id: number) => ({ jsonrpc: '2.0' as const, id, method: 'tools/call', params: { name: 'echo' } });
    await expect(sessions[0]!.send(request(1))).rejects.toMatchObject({ reason: 'limit-reached', detail: { waitingBytes: expect.any(Number) } });
    await expect(open('alice')).rejects.toMatchObject({ reason: 'limit-reached' });
    // Bob's requests and channels go (his open waits its turn behind the window); a notification of alice's too.
    await expect(sessions[2]!.send(request(2))).resolves.toBeUndefined();
    const bobOpens = open('bob');
    await expect(sessions[1]!.send(note('a notification still goes'))).resolves.toBeUndefined();
    // The host reads on: once alice's messages drained, hers go again.
    host.reading = true;
    ackAll();
    await expect.poll(() => worker.stats.waitingFrames).toBe(0);
    await expect(bobOpens).resolves.toBeDefined();
    await expect(sessions[0]!.send(request(3))).resolves.toBeUndefined();
    await expect(open('alice')).resolves.toBeDefined();
  });
});
