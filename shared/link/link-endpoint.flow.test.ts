/**
 * The link endpoint's flow control (`link-flow.ts`) over a socket that reports its writes, as the
 * sidecar's does: the test reports each write itself (`written`), so what waits in the socket is
 * exactly what it has not reported yet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelTransport } from '../channel-transport.ts';
import { CallbackFrameSocket } from './frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler, type LinkEndpointOptions } from './link-endpoint.ts';
import type { FlowLimits } from './link-flow.ts';
import { McpChannelClientTransport } from './mcp-channel-client-transport.ts';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

/** A server the host's channels throttle: counts the holds taken and not released. */
function source(): { held: number; holdReading(): () => void } {
  const s = {
    held: 0,
    holdReading() {
      s.held++;
      let released = false;
      return () => {
        if (!released) s.held--;
        released = true;
      };
    },
  };
  return s;
}

/** A host whose every channel is throttled by a source of its own, kept for the test to send on. */
function throttledHost(): { onOpen: ChannelOpenHandler; channels: ChannelTransport[]; sources: ReturnType<typeof source>[] } {
  const channels: ChannelTransport[] = [];
  const sources: ReturnType<typeof source>[] = [];
  return {
    channels,
    sources,
    onOpen: async (_request, channel) => {
      const s = source();
      (channel as McpChannelClientTransport).throttle(s);
      channels.push(channel);
      sources.push(s);
      await channel.start();
    },
  };
}

/** Worker and sidecar ends; the sidecar's socket holds every frame until the test reports it `written`. */
function link(onOpen: ChannelOpenHandler, flow: Partial<FlowLimits> = { channelBytes: 1000, channelResumeBytes: 300, linkBytes: 2500, linkResumeBytes: 1200 }, before: string[] = [], sidecarOptions: Partial<LinkEndpointOptions> = {}) {
  let workerSocket!: CallbackFrameSocket;
  let sidecarSocket!: CallbackFrameSocket;
  const ended = () =>
    queueMicrotask(() => {
      workerSocket.ended({ code: 1000 });
      sidecarSocket.ended({ code: 1000 });
    });
  workerSocket = new CallbackFrameSocket({ send: (text) => queueMicrotask(() => sidecarSocket.receive(text)), close: ended });
  sidecarSocket = new CallbackFrameSocket({ send: (text) => queueMicrotask(() => workerSocket.receive(text)), close: ended, tracksWrites: true });
  for (const text of before) sidecarSocket.send(text);
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'test-host' });
  const sidecar = new LinkEndpoint(sidecarSocket, { ...sidecarOptions, role: 'sidecar', onOpen, flow });
  endpoints.push(worker, sidecar);
  const received: JSONRPCMessage[] = [];
  return {
    worker,
    sidecar,
    received,
    /** Reports the oldest `count` frames not yet reported as written out. */
    written(count = 1) {
      for (let i = 0; i < count; i++) sidecarSocket.written();
    },
    async open(agent?: string): Promise<ChannelTransport> {
      const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'flood', ...(agent !== undefined ? { agent } : {}) } });
      channel.onmessage = (message) => received.push(message);
      await channel.start();
      return channel;
    },
  };
}

/** A notification whose frame is about `chars` long. */
const padded = (chars: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'y'.repeat(chars - 100) } });
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('LinkEndpoint flow control', () => {
  it('holds what feeds a channel whose frames wait past its budget, and lets it go once they are written out', async () => {
    const host = throttledHost();
    const l = link(host.onOpen);
    await l.open();
    l.written(); // the ack
    const [channel, server] = [host.channels[0]!, host.sources[0]!];
    await channel.send(padded(600));
    expect(server.held).toBe(0);
    await channel.send(padded(600));
    expect(server.held).toBe(1);
    expect(l.sidecar.stats).toMatchObject({ heldChannels: 1 });
    expect(l.sidecar.stats.queuedBytes).toBeGreaterThan(1000);
    l.written(); // ~600 left: above the resume mark
    expect(server.held).toBe(1);
    l.written();
    expect(server.held).toBe(0);
    expect(l.sidecar.stats).toMatchObject({ queuedBytes: 0, heldChannels: 0 });
    await settled();
    expect(l.received).toHaveLength(2); // held back means the server waits: nothing sent was lost
  });

  it('sends a frame larger than the budget, and holds after it', async () => {
    const host = throttledHost();
    const l = link(host.onOpen);
    await l.open();
    l.written();
    await host.channels[0]!.send(padded(5000));
    expect(host.sources[0]!.held).toBe(1);
    await settled();
    expect(l.received).toHaveLength(1);
    l.written();
    expect(host.sources[0]!.held).toBe(0);
  });

  it('holds every busy channel while the whole link is over its budget, not one opened then, and lets go at its resume mark', async () => {
    const host = throttledHost();
    const l = link(host.onOpen, { channelBytes: 1000, channelResumeBytes: 300, linkBytes: 2500, linkResumeBytes: 1200, quietBytes: 500 });
    await l.open();
    await l.open();
    l.written(2);
    for (const channel of host.channels) await channel.send(padded(900)); // each under its budget
    expect(host.sources.map((s) => s.held)).toEqual([0, 0]);
    await host.channels[0]!.send(padded(900)); // 2700 in all: the link is full, and the first over its own
    expect(host.sources.map((s) => s.held)).toEqual([1, 1]);
    await l.open();
    expect(host.sources.map((s) => s.held)).toEqual([1, 1, 0]); // the new one has nothing waiting
    l.written(2); // the link is down to the first channel's second frame and the third's ack
    expect(host.sources.map((s) => s.held)).toEqual([1, 0, 0]); // the first is still over its own budget
    l.written();
    expect(host.sources.map((s) => s.held)).toEqual([0, 0, 0]);
  });

  it('is full while over the link\'s budget, and says so to onRoom when it lets go and when the link ends', async () => {
    const host = throttledHost();
    let rooms = 0;
    const l = link(host.onOpen, { channelBytes: 5000, channelResumeBytes: 1000, linkBytes: 2500, linkResumeBytes: 1200, quietBytes: 500 }, [], { onRoom: () => rooms++ });
    await l.open();
    l.written();
    await host.channels[0]!.send(padded(1500));
    expect(l.sidecar.full).toBe(false);
    await host.channels[0]!.send(padded(1500)); // 3000 waiting: past the link's budget
    expect(l.sidecar.full).toBe(true);
    l.written(); // 1500 left: above the resume mark
    expect([l.sidecar.full, rooms]).toEqual([true, 0]);
    l.written();
    expect([l.sidecar.full, rooms]).toEqual([false, 1]);
    await host.channels[0]!.send(padded(1500));
    await host.channels[0]!.send(padded(1500));
    expect(l.sidecar.full).toBe(true);
    l.sidecar.close({ message: 'Test over' });
    expect([l.sidecar.full, rooms]).toEqual([false, 2]); // nothing waits on a link that ended
  });

  it('has room on a full link for an agent with little waiting on it, not for the agent whose frames fill it', async () => {
    const host = throttledHost();
    const l = link(host.onOpen, { channelBytes: 5000, channelResumeBytes: 1000, linkBytes: 2500, linkResumeBytes: 1200, quietBytes: 500 }, [], { sender: { socketBytes: 1000 } });
    await l.open('alice');
    await l.open('bob');
    l.written(2); // the acks
    expect([l.sidecar.hasRoomFor('alice'), l.sidecar.hasRoomFor('bob')]).toEqual([true, true]);
    for (let i = 0; i < 3; i++) await host.channels[0]!.send(padded(1000)); // alice's: the socket takes one, two wait their turn
    expect(l.sidecar.full).toBe(true);
    expect([l.sidecar.hasRoomFor('alice'), l.sidecar.hasRoomFor('bob')]).toEqual([false, true]);
    l.written(3);
    expect(l.sidecar.full).toBe(false);
    expect(l.sidecar.hasRoomFor('alice')).toBe(true);
  });

  it('keeps a closed channel held until its frames are written out', async () => {
    const host = throttledHost();
    const l = link(host.onOpen);
    const channel = await l.open();
    l.written();
    await host.channels[0]!.send(padded(1500));
    await host.channels[0]!.close();
    await channel.close(); // already closed by the host: nothing more goes
    expect(host.sources[0]!.held).toBe(1);
    l.written(); // the frame
    expect(host.sources[0]!.held).toBe(0);
  });

  it('lets go of every hold when the link ends, and ignores the writes reported after', async () => {
    const host = throttledHost();
    const l = link(host.onOpen);
    await l.open();
    l.written();
    await host.channels[0]!.send(padded(1500));
    expect(host.sources[0]!.held).toBe(1);
    l.sidecar.close({ message: 'Test over' });
    expect(host.sources[0]!.held).toBe(0);
    l.written(3);
    expect(l.sidecar.stats).toMatchObject({ queuedBytes: 0, heldChannels: 0 });
  });

  it('counts only its own frames: the writes of frames sent before it (the handshake) are not its', async () => {
    const host = throttledHost();
    const l = link(host.onOpen, undefined, ['x'.repeat(5000), 'y'.repeat(5000)]);
    await l.open();
    const ack = l.sidecar.stats.queuedBytes;
    expect(ack).toBeGreaterThan(0);
    l.written(2); // the handshake's two
    expect(l.sidecar.stats.queuedBytes).toBe(ack);
    l.written();
    expect(l.sidecar.stats.queuedBytes).toBe(0);
  });

  it('has none on a socket that does not report its writes', async () => {
    const host = throttledHost();
    const l = link(host.onOpen);
    // The worker's socket reports nothing: frames past every budget leave it uncounted and unheld.
    const channel = await l.open();
    await channel.send(padded(5000));
    await channel.send(padded(5000));
    await settled();
    expect(l.worker.stats).toMatchObject({ queuedBytes: 0, peakQueuedBytes: 0, heldChannels: 0 });
    // Where the socket does report them, the same frames are counted.
    await host.channels[0]!.send(padded(5000));
    expect(l.sidecar.stats.peakQueuedBytes).toBeGreaterThan(5000);
  });
});
