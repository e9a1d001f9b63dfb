/**
 * A listen stream on a legacy instance, seen at the wire: the instance's transport is one end of
 * an in-memory channel pair, the other a scripted legacy server that announces list changes and
 * resource subscriptions, answers `resources/subscribe` (refusing `x://refused`, never
 * answering `x://silent`) and records what it gets.
 */
import { describe, expect, it, vi } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { silentLogger } from '../../log.ts';
import { LegacyInstance } from './legacy-instance.ts';
import { listenOnLegacy, listenOnModern, type ListenOutput } from './listen-stream.ts';
import { ModernServerInstance } from './modern-server-instance.ts';
import { HOST_CALL_TIMEOUT_MS } from './host-call.ts';

type Message = { id?: number; method?: string; params?: Record<string, unknown> };
const SUB = 'io.modelcontextprotocol/subscriptionId';

async function scripted() {
  const [hostEnd, server] = createInMemoryChannelPair();
  const got: Message[] = [];
  server.onmessage = (raw) => {
    const message = raw as Message;
    if (message.method === 'initialize') {
      void server.send({ jsonrpc: '2.0', id: message.id!, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } }, serverInfo: { name: 'scripted', version: '1' } } });
      return;
    }
    got.push(message);
    // x://silent: a subscribe this server never answers.
    if ((message.method === 'resources/subscribe' || message.method === 'resources/unsubscribe') && message.params?.uri !== 'x://silent') {
      const refused = message.params?.uri === 'x://refused';
      void server.send({ jsonrpc: '2.0', id: message.id!, ...(refused ? { error: { code: -32602, message: 'No such resource' } } : { result: {} }) } as JSONRPCMessage);
    }
  };
  await server.start();
  const instance = await LegacyInstance.start({ server: 'scripted', transport: hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger });
  const notify = (method: string, params: Record<string, unknown> = {}) => server.send({ jsonrpc: '2.0', method, params });
  return { instance, server, got, notify, methods: () => got.map((m) => `${m.method} ${String(m.params?.uri ?? '')}`.trim()) };
}

function output(): ListenOutput & { notes: Array<Record<string, any>>; replies: unknown[]; drops: number } {
  const notes: Array<Record<string, any>> = [];
  const replies: unknown[] = [];
  const out = { notes, replies, drops: 0, notify: (n: Record<string, any>) => notes.push(n), reply: (a: unknown) => replies.push(a), drop: () => void out.drops++ };
  return out;
}
/** Lets the in-memory channel's queued deliveries (microtasks) run: no clock involved. */
const settle = () => new Promise((r) => setImmediate(r));

/** A listen on a modern server's instance, the server one end of an in-memory channel pair that records the listen's id. */
async function listeningOnModern() {
  const [hostEnd, server] = createInMemoryChannelPair();
  let listenId: number | undefined;
  server.onmessage = (raw) => {
    const message = raw as Message;
    if (message.method === 'subscriptions/listen') listenId = message.id;
  };
  await server.start();
  const instance = await ModernServerInstance.start({ server: 'm', transport: hostEnd, discover: null, log: silentLogger });
  const out = output();
  listenOnModern('L', { notifications: { toolsListChanged: true } }, instance, out);
  await settle();
  return { server, instance, out, listenId: () => listenId! };
}

describe('listen streams on a legacy instance', () => {
  it('subscribes a watched URI upstream once for all streams, unsubscribes after the last, and fans notifications out by filter', async () => {
    const { instance, notify, methods } = await scripted();
    const a = output();
    const b = output();
    const endA = await listenOnLegacy('a', { notifications: { resourceSubscriptions: ['x://doc', 'x://refused'], promptsListChanged: true } }, instance, a);
    const endB = await listenOnLegacy(2, { notifications: { toolsListChanged: true, resourceSubscriptions: ['x://doc'] } }, instance, b);
    expect(a.notes[0]).toEqual({ method: 'notifications/subscriptions/acknowledged', params: { [`_meta`]: { [SUB]: 'a' }, notifications: { resourceSubscriptions: ['x://doc'] } } });
    expect(b.notes[0]!.params).toEqual({ _meta: { [SUB]: 2 }, notifications: { toolsListChanged: true, resourceSubscriptions: ['x://doc'] } });
    expect(methods()).toEqual(['notifications/initialized', 'resources/subscribe x://doc', 'resources/subscribe x://refused']);
    expect(instance.inFlight).toBe(2);

    await notify('notifications/resources/updated', { uri: 'x://doc' });
    await notify('notifications/tools/list_changed');
    await notify('notifications/prompts/list_changed');
    await settle();
    expect(a.notes.slice(1)).toEqual([{ method: 'notifications/resources/updated', params: { uri: 'x://doc', _meta: { [SUB]: 'a' } } }]);
    expect(b.notes.slice(1).map((n) => n.method)).toEqual(['notifications/resources/updated', 'notifications/tools/list_changed']);

    endA();
    await settle();
    expect(methods()).not.toContain('resources/unsubscribe x://doc');
    endB();
    await settle();
    expect(methods().at(-1)).toBe('resources/unsubscribe x://doc');
    expect(instance.inFlight).toBe(0);
    await notify('notifications/tools/list_changed');
    await settle();
    expect(b.notes).toHaveLength(3);
    await instance.close();
  });

  it('gives up a subscribe the server never answers: acknowledged without it, cancelled upstream, nothing left in flight (review s23)', async () => {
    const { instance, methods } = await scripted();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const out = output();
      const listening = listenOnLegacy('s', { notifications: { resourceSubscriptions: ['x://silent', 'x://doc'] } }, instance, out);
      await settle();
      expect(out.notes).toEqual([]);
      vi.advanceTimersByTime(HOST_CALL_TIMEOUT_MS);
      const end = await listening;
      expect(out.notes[0]!.params.notifications).toEqual({ resourceSubscriptions: ['x://doc'] });
      await settle();
      expect(methods()).toContain('notifications/cancelled');
      expect(instance.inFlight).toBe(1); // the stream itself
      end();
      await settle();
      expect(instance.inFlight).toBe(0);
    } finally {
      vi.useRealTimers();
      await instance.close();
    }
  });

  it('ends the stream with the closing result when the instance ends, and refuses a listen without a filter', async () => {
    const { instance } = await scripted();
    const out = output();
    await listenOnLegacy('x', { notifications: {} }, instance, out);
    const bad = output();
    await listenOnLegacy('y', {}, instance, bad);
    expect(bad.replies).toEqual([{ error: { code: -32602, message: expect.stringContaining('params.notifications is missing'), data: { reason: 'invalid-request' } } }]);
    await instance.close();
    await settle();
    expect(out.replies).toEqual([{ result: { resultType: 'complete', _meta: { [SUB]: 'x' } } }]);
  });

  it('keeps nothing of a closed stream on its instance: a stream opened and closed again and again leaves no reaction behind', async () => {
    const { instance } = await scripted();
    // Every reaction a stream could leave on the instance's end is counted where it is attached.
    let reactions = 0;
    const closed = instance.closed;
    Object.defineProperty(instance, 'closed', { get: () => ({ then: (...args: Parameters<Promise<void>['then']>) => (reactions++, closed.then(...args)) }) });
    for (let i = 0; i < 100; i++) {
      const end = await listenOnLegacy(i, { notifications: { toolsListChanged: true } }, instance, output());
      end();
    }
    expect(instance.listeners.size).toBe(0);
    expect(reactions).toBe(0);
    // A stream open when the instance ends still gets its closing result, once.
    const open = output();
    await listenOnLegacy('last', { notifications: { toolsListChanged: true } }, instance, open);
    await instance.close();
    await settle();
    expect(open.replies).toEqual([{ result: { resultType: 'complete', _meta: { [SUB]: 'last' } } }]);
    expect(instance.inFlight).toBe(0);
  });
});

describe('how a listen stream ends (review s23: a crash ended it as gracefully as a stop)', () => {
  it('on a legacy instance: a complete result when the host ends it, no response when the process ends on its own', async () => {
    const stopped = await scripted();
    const byHost = output();
    await listenOnLegacy('a', { notifications: { toolsListChanged: true } }, stopped.instance, byHost);
    await stopped.instance.close();
    await settle();
    expect([byHost.replies, byHost.drops]).toEqual([[{ result: { resultType: 'complete', _meta: { [SUB]: 'a' } } }], 0]);

    const crashed = await scripted();
    const byServer = output();
    await listenOnLegacy('b', { notifications: { toolsListChanged: true } }, crashed.instance, byServer);
    await crashed.server.close();
    await settle();
    expect([byServer.replies, byServer.drops]).toEqual([[], 1]);
  });

  it('on a modern server: dropped when the server cancels the listen or its process ends, completed when the host ends it', async () => {
    // 'wrong': the host ends a server found to speak another era, as if it had ended (its agents listen again).
    for (const end of ['cancel', 'exit', 'stop', 'wrong'] as const) {
      const { server, instance, out, listenId } = await listeningOnModern();
      expect(instance.inFlight).toBe(1);
      if (end === 'cancel') await server.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: listenId(), reason: 'shutting down' } });
      else if (end === 'exit') await server.close();
      else await instance.close(end === 'stop');
      await settle();
      expect([end, out.replies, out.drops]).toEqual(end === 'stop' ? [end, [{ result: { resultType: 'complete', _meta: { [SUB]: 'L' } } }], 0] : [end, [], 1]);
      expect(instance.inFlight).toBe(0);
      await instance.close();
    }
  });

  it('on a modern HTTP server: dropped when the listen\'s stream broke off, answered when the server refused it', async () => {
    const brokeOff = { code: -32009, message: 'The HTTP server ended its answer to subscriptions/listen without one', data: { reason: 'server-exited' } };
    const refused = { code: -32009, message: 'The HTTP server answered subscriptions/listen with HTTP 404 and no modern error', data: { reason: 'server-exited', status: 404 } };
    for (const error of [brokeOff, refused]) {
      const { server, instance, out, listenId } = await listeningOnModern();
      await server.send({ jsonrpc: '2.0', id: listenId(), error } as JSONRPCMessage);
      await settle();
      expect([out.replies, out.drops]).toEqual(error === brokeOff ? [[], 1] : [[{ error: expect.objectContaining({ data: { reason: 'server-exited', status: 404 } }) }], 0]);
      await instance.close();
    }
  });
});
