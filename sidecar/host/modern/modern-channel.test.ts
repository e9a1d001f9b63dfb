/** A modern channel on the host, seen from the worker's end of an in-memory channel pair. */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { isHostAnswer } from '../../../shared/audit/host-answers.ts';
import { createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { isFailureReason } from '../../../shared/errors.ts';
import { CallbackFrameSocket } from '../../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../../shared/link/link-endpoint.ts';
import { silentLogger } from '../../log.ts';
import type { CallSink } from './in-flight-calls.ts';
import { serveModernChannel } from './modern-channel.ts';
import type { ServerInstance } from './server-instance.ts';

describe('serveModernChannel', () => {
  it('answers a method it does not forward (a worker of another version sent it) with -32601 and a stable reason, as its own answer', async () => {
    const [worker, host] = createInMemoryChannelPair();
    const answered = new Promise<JSONRPCMessage>((resolve) => {
      worker.onmessage = resolve;
    });
    await worker.start();
    let started = false;
    serveModernChannel(host, { server: 'everything', log: silentLogger, instance: () => ((started = true), new Promise(() => {})) });
    await worker.send({ jsonrpc: '2.0', id: 7, method: 'tasks/list', params: {} });
    const answer = (await answered) as { id: number; error: { code: number; message: string; data?: { reason?: unknown } } };
    expect(answer).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found: tasks/list', data: { reason: 'invalid-request' } } });
    expect(isFailureReason(answer.error.data?.reason)).toBe(true);
    expect(isHostAnswer(answer)).toBe(true);
    expect(started).toBe(false);
  });

  it('holds the agent\'s instance while the link holds too much of a request\'s frames, until they are written out, after its answer too', async () => {
    // A link whose host socket keeps every frame until the test reports it written (link-flow.ts).
    let workerSocket!: CallbackFrameSocket;
    let hostSocket!: CallbackFrameSocket;
    workerSocket = new CallbackFrameSocket({ send: (text) => queueMicrotask(() => hostSocket.receive(text)), close: () => {} });
    hostSocket = new CallbackFrameSocket({ send: (text) => queueMicrotask(() => workerSocket.receive(text)), close: () => {}, tracksWrites: true });
    let sink!: CallSink;
    let answer!: (outcome: { result: unknown }) => void;
    const instance = {
      held: 0,
      serverInfo: { name: 'flood', version: '1' },
      holdReading() {
        instance.held++;
        return () => void instance.held--;
      },
      call(_request: unknown, given: CallSink) {
        sink = given;
        return { upstreamId: 1, outcome: new Promise((resolve) => (answer = resolve)), cancel() {} };
      },
    };
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'host' });
    const host = new LinkEndpoint(hostSocket, {
      role: 'sidecar',
      flow: { channelBytes: 1000, channelResumeBytes: 100, linkBytes: 10_000, linkResumeBytes: 5_000 },
      onOpen: async (_request, channel) => void serveModernChannel(channel, { server: 'flood', log: silentLogger, instance: async () => instance as unknown as ServerInstance }),
    });
    try {
      const channel = await worker.openChannel({ type: 'mcp', connection: { 'server-name': 'flood' } });
      const received: JSONRPCMessage[] = [];
      channel.onmessage = (message) => received.push(message);
      await channel.start();
      await channel.send({ jsonrpc: '2.0', id: 1, method: 'resources/list', params: {} });
      await vi.waitUntil(() => sink !== undefined);
      const written = (count: number) => {
        for (let i = 0; i < count; i++) hostSocket.written();
      };
      written(1); // the ack
      for (let i = 0; i < 2; i++) sink.notify({ method: 'notifications/message', params: { level: 'info', data: 'y'.repeat(600) } });
      expect(instance.held).toBe(1);
      answer({ result: { resources: [] } });
      await vi.waitUntil(() => received.some((m) => 'id' in m && m.id === 1));
      await vi.waitUntil(() => channel.closed);
      expect(instance.held).toBe(1); // the channel is closed, its frames are not written out yet
      written(4);
      expect(instance.held).toBe(0);
    } finally {
      worker.close();
    }
  });
});
