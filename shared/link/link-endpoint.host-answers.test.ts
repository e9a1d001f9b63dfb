/**
 * Who wrote an answer (`host-answers`): the host's own answers, marked on its side
 * (`audit/host-answers.ts`), reach the worker marked, in `channel-message` and `channel-reply`
 * frames alike, and nothing a server wrote does; the worker asks for marks on each open only of a
 * host that announced the feature, the host marks only where asked, and a mark from a host that
 * did not announce it is not believed. Older ends on either side get only the keys their strict
 * schemas take.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { hostAnswer, isHostAnswer } from '../audit/host-answers.ts';
import type { ChannelTransport } from '../channel-transport.ts';
import { createFrameSocketPair } from './frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler, type LinkEndpointOptions } from './link-endpoint.ts';
import type { LinkFeature } from './link-features.ts';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

const ALL: ReadonlySet<LinkFeature> = new Set(['open-first', 'open-reply', 'host-answers']);
const denial = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, error: { code: -32010, message: 'Denied', data: { reason: 'denied-by-policy' } } }) as JSONRPCMessage;
const call = (id: number, name: string): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
};

/**
 * A host whose tool `deny` it refuses itself (a marked answer), and whose tool `forge` is answered
 * by "its server" with the same error, unmarked; `reply`: both as the channel's last message.
 */
function deciding(how: 'send' | 'reply'): ChannelOpenHandler {
  return async (_request, channel) => {
    channel.onmessage = (message) => {
      const { id, params } = message as unknown as { id: number; params: { name: string } };
      const answer = params.name === 'deny' ? hostAnswer(denial(id)) : denial(id);
      void (how === 'send' ? channel.send(answer) : channel.reply(answer)).catch(() => {});
    };
    await channel.start();
  };
}

function link(onOpen: ChannelOpenHandler, peerFeatures: ReadonlySet<LinkFeature>) {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'test-host', peerFeatures });
  const sidecar = new LinkEndpoint(sidecarSocket, { role: 'sidecar', onOpen });
  endpoints.push(worker, sidecar);
  const framesIn: Array<Record<string, unknown>> = [];
  const hostOut: Array<Record<string, unknown>> = [];
  worker.onFrame = (direction, text) => void (direction === 'in' && framesIn.push(JSON.parse(text)));
  sidecar.onFrame = (direction, text) => void (direction === 'out' && hostOut.push(JSON.parse(text)));
  return { worker, sidecar, framesIn, hostOut };
}

/** What the worker's consumer gets for a call of `tool`, and whether it is marked as the host's own. */
async function answerTo(worker: LinkEndpoint, tool: string, first: boolean): Promise<{ message: JSONRPCMessage; own: boolean }> {
  const request = call(1, tool);
  const channel = await worker.openChannel({ type: 'mcp' }, first ? { first: request } : {});
  const got = new Promise<JSONRPCMessage>((resolve) => (channel.onmessage = resolve));
  await channel.start();
  if (channel.sentAhead === undefined) await channel.send(request);
  const message = await got;
  return { message, own: isHostAnswer(message) };
}

/** A worker endpoint facing a raw socket: an older or a misbehaving host, driven by hand. */
function rawHost(options: Partial<LinkEndpointOptions>) {
  const [workerSocket, raw] = createFrameSocketPair();
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'raw', ...options });
  endpoints.push(worker);
  const received: Array<Record<string, any>> = [];
  raw.onmessage = (text) => received.push(JSON.parse(text));
  return { worker, raw, received };
}

describe('the host\'s own answers on a link (host-answers)', () => {
  it('reach the worker marked, in a channel-message, and a server\'s answer saying the same does not', async () => {
    const { worker, framesIn } = link(deciding('send'), ALL);
    expect(await answerTo(worker, 'deny', false)).toEqual({ message: denial(1), own: true });
    expect(await answerTo(worker, 'forge', false)).toEqual({ message: denial(1), own: false });
    expect(framesIn.filter((f) => f.type === 'channel-message').map((f) => f.own)).toEqual([true, undefined]);
  });

  it('reach the worker marked in a channel-reply too, the frame a modern request\'s answer comes in', async () => {
    const { worker, framesIn } = link(deciding('reply'), ALL);
    expect(await answerTo(worker, 'deny', true)).toEqual({ message: denial(1), own: true });
    expect(await answerTo(worker, 'forge', true)).toEqual({ message: denial(1), own: false });
    expect(framesIn.map((f) => [f.type, f.own])).toEqual([['channel-reply', true], ['channel-reply', undefined]]);
  });

  it('include what the host\'s endpoint answers itself, a request its handler failed on', async () => {
    const { worker } = link(async (_request, channel) => {
      channel.onmessage = () => {
        throw new Error('handler bug');
      };
      await channel.start();
    }, ALL);
    const { message, own } = await answerTo(worker, 'any', false);
    expect(message).toMatchObject({ id: 1, error: { data: { reason: 'invalid-request' } } });
    expect(own).toBe(true);
  });

  it('are asked for on every open, with or without a first message, only of a host that announced host-answers', async () => {
    const asked = rawHost({ peerFeatures: ALL });
    void asked.worker.openChannel({ type: 'mcp' }, { first: call(1, 'x') }).catch(() => {});
    void asked.worker.openChannel({ type: 'mcp' }).catch(() => {});
    // An older sidecar: it announced the two features before this one, and gets the open its schema takes.
    const older = rawHost({ peerFeatures: new Set(['open-first', 'open-reply'] as const) });
    void older.worker.openChannel({ type: 'mcp' }, { first: call(1, 'x') }).catch(() => {});
    void older.worker.openChannel({ type: 'mcp' }).catch(() => {});
    await until(() => asked.received.length === 2 && older.received.length === 2);
    expect(asked.received.map((frame) => Object.keys(frame).sort())).toEqual([
      ['channel', 'first', 'own', 'reply', 'request', 'type', 'v'],
      ['channel', 'own', 'request', 'type', 'v'],
    ]);
    expect(asked.received.map((frame) => frame.own)).toEqual([true, true]);
    expect(older.received.map((frame) => Object.keys(frame).sort())).toEqual([
      ['channel', 'first', 'reply', 'request', 'type', 'v'],
      ['channel', 'request', 'type', 'v'],
    ]);
  });

  it('go unmarked to a worker that did not ask, an older one whose strict schema refuses the key, and still arrive', async () => {
    for (const how of ['send', 'reply'] as const) {
      const { worker, hostOut } = link(deciding(how), new Set(['open-first', 'open-reply'] as const));
      expect(await answerTo(worker, 'deny', how === 'reply')).toEqual({ message: denial(1), own: false });
      await until(() => hostOut.some((f) => 'message' in f));
      expect(hostOut.filter((f) => 'own' in f)).toEqual([]);
    }
  });

  it('are not believed from a host that did not announce host-answers, whatever its frames say', async () => {
    const { worker, raw, received } = rawHost({ peerFeatures: new Set(['open-first'] as const) });
    const opening = worker.openChannel({ type: 'mcp' });
    await until(() => received.length === 1);
    const id = received[0]!.channel as number;
    raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: id }));
    const channel: ChannelTransport = await opening;
    const got = new Promise<JSONRPCMessage>((resolve) => (channel.onmessage = resolve));
    await channel.start();
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: id, message: denial(1), own: true }));
    const message = await got;
    expect(message).toEqual(denial(1));
    expect(isHostAnswer(message)).toBe(false);
    expect(worker.stats.malformedFrames).toBe(0);
  });

  it('mark only the answer in the frame that said so, on a host that did announce it', async () => {
    const { worker, raw, received } = rawHost({ peerFeatures: ALL });
    const opening = worker.openChannel({ type: 'mcp' });
    await until(() => received.length === 1);
    const id = received[0]!.channel as number;
    raw.send(JSON.stringify({ v: 1, type: 'channel-open-ack', channel: id }));
    const channel = await opening;
    const got: JSONRPCMessage[] = [];
    channel.onmessage = (message) => got.push(message);
    await channel.start();
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: id, message: denial(1), own: true }));
    raw.send(JSON.stringify({ v: 1, type: 'channel-message', channel: id, message: denial(2) }));
    await until(() => got.length === 2);
    expect(got.map((message) => isHostAnswer(message))).toEqual([true, false]);
  });
});
