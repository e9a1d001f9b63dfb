import { describe, expect, it } from 'vitest';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../shared/errors.ts';
import { silentLogger } from '../log.ts';
import { HostedServers, type HostedFacts } from './hosted-servers.ts';
import { ProcessBudget } from './process-budget.ts';

/** A server transport that records what it was sent and can answer. */
function fakeServer() {
  const sent: JSONRPCMessage[] = [];
  let closed = 0;
  const transport: Transport = {
    start: async () => {},
    send: async (message) => void sent.push(message),
    close: async () => {
      closed += 1;
      transport.onclose?.();
    },
  };
  return { transport, sent, closes: () => closed, answer: (id: number) => transport.onmessage?.({ jsonrpc: '2.0', id, result: {} }) };
}

const facts = (name: string): HostedFacts => ({ name, connection: { 'server-name': name, agent: 'alice' } as HostedFacts['connection'], config: { kind: 'stdio', command: 'x', args: [], env: {} }, revision: null });

describe('hosted servers', () => {
  it('holds the budget slot while open, busy between a request and its answer', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 10 }, log: silentLogger });
    const hosted = new HostedServers();
    const server = fakeServer();
    const outer = hosted.track(server.transport, facts('a'), budget.reserve('alice', 'a'));
    await outer.start();
    await outer.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } });
    // Busy: the next launch of the agent cannot end it.
    expect(() => budget.reserve('alice', 'b')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    server.answer(1);
    const errors: Error[] = [];
    outer.onerror = (error) => errors.push(error);
    budget.reserve('alice', 'b');
    // Idle now: it was ended to make room, with the reason its channel closes with.
    expect(errors.map((e) => (e as WireError).reason)).toEqual(['limit-reached']);
    expect(server.closes()).toBe(1);
    expect(hosted.size).toBe(0);
  });

  it('counts an agent\'s own listen as work, and the listen the host opens for a legacy session as none (review of s21)', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 10 }, log: silentLogger });
    const hosted = new HostedServers();
    const server = fakeServer();
    const outer = hosted.track(server.transport, facts('a'), budget.reserve('alice', 'a'));
    await outer.start();
    await outer.send({ jsonrpc: '2.0', id: 'switchyard-listen-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
    await outer.send({ jsonrpc: '2.0', id: 'agent-listen', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
    expect(() => budget.reserve('alice', 'b')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    await outer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'agent-listen' } });
    outer.onerror = () => {};
    budget.reserve('alice', 'b');
    expect(server.closes()).toBe(1);
  });

  it('is idle again once the server tears down an agent\'s listen, which it will never answer (review of s23)', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 10 }, log: silentLogger });
    const hosted = new HostedServers();
    const server = fakeServer();
    const outer = hosted.track(server.transport, facts('a'), budget.reserve('alice', 'a'));
    await outer.start();
    await outer.send({ jsonrpc: '2.0', id: 7, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
    expect(() => budget.reserve('alice', 'b')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    server.transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'shutting down' } });
    outer.onerror = () => {};
    budget.reserve('alice', 'b');
    expect(server.closes()).toBe(1);
  });

  it('is idle again once the agent cancels its request, which the server will never answer', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 10 }, log: silentLogger });
    const hosted = new HostedServers();
    const server = fakeServer();
    const outer = hosted.track(server.transport, facts('a'), budget.reserve('alice', 'a'));
    await outer.start();
    await outer.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await outer.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow' } });
    await outer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    expect(() => budget.reserve('alice', 'b')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    await outer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
    expect(server.sent.map((m) => ('method' in m ? m.method : 'answer'))).toEqual(['tools/call', 'tools/call', 'notifications/cancelled', 'notifications/cancelled']);
    server.answer(2); // an answer already on its way counts for nothing
    budget.reserve('alice', 'b');
    expect(server.closes()).toBe(1);
  });

  it('is idle again after a request its server did not take (a full stdin), and holds the server it wraps', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 10 }, log: silentLogger });
    const hosted = new HostedServers();
    const server = fakeServer();
    let holds = 0;
    const transport = {
      ...server.transport,
      send: async () => {
        throw new WireError('limit-reached', 'Server "a" is not reading its input');
      },
      holdReading: () => (holds++, () => void holds--),
    };
    const outer = hosted.track(transport, facts('a'), budget.reserve('alice', 'a'));
    await outer.start();
    await expect(outer.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } })).rejects.toMatchObject({ reason: 'limit-reached' });
    budget.reserve('alice', 'b'); // not busy: it was ended to make room
    expect(hosted.size).toBe(0);
    const release = (outer as unknown as { holdReading(): () => void }).holdReading();
    expect(holds).toBe(1);
    release();
    expect(holds).toBe(0);
  });

  it('stays busy with a request whose cancellation the server did not take: it works on', async () => {
    const budget = new ProcessBudget({ limits: { perAgent: 1, total: 10 }, log: silentLogger });
    const hosted = new HostedServers();
    const server = fakeServer();
    const transport = {
      ...server.transport,
      send: async (message: JSONRPCMessage) => {
        if ('method' in message && message.method === 'notifications/cancelled') throw new WireError('limit-reached', 'Server "a" is not reading its input');
        server.sent.push(message);
      },
    };
    const outer = hosted.track(transport, facts('a'), budget.reserve('alice', 'a'));
    await outer.start();
    await outer.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await expect(outer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } })).rejects.toMatchObject({ reason: 'limit-reached' });
    // Busy still: the next launch of the agent cannot end it mid-call.
    expect(() => budget.reserve('alice', 'b')).toThrow(expect.objectContaining({ reason: 'limit-reached' }));
    expect(hosted.size).toBe(1);
  });

  it('ends only the servers a config change finds a reason for, and forgets closed ones', async () => {
    const hosted = new HostedServers();
    const [a, b] = [fakeServer(), fakeServer()];
    const outerA = hosted.track(a.transport, facts('a'));
    const outerB = hosted.track(b.transport, facts('b'));
    const errors: string[] = [];
    outerA.onerror = (e) => errors.push(`a:${(e as WireError).reason}`);
    outerB.onerror = (e) => errors.push(`b:${(e as WireError).reason}`);
    expect(await hosted.endWhere(async (f) => (f.name === 'a' ? new WireError('server-exited', 'changed') : null))).toBe(1);
    expect(errors).toEqual(['a:server-exited']);
    expect([a.closes(), b.closes()]).toEqual([1, 0]);
    await outerB.close();
    expect(hosted.size).toBe(0);
  });
});
