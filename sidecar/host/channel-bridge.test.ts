import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import type { JsonRpcErrorResponse } from '../../shared/errors.ts';
import { createLogger, silentLogger } from '../log.ts';
import { AuditLog } from '../../shared/audit/audit-log.ts';
import { CallLedger } from '../../shared/audit/call-ledger.ts';
import { bridgeChannels } from './channel-bridge.ts';
import { isHostAnswer } from '../../shared/audit/host-answers.ts';

/** A server transport that records what it is sent and answers every request with `result: {}`. */
function fakeServer(answer: (message: JSONRPCMessage) => JSONRPCMessage | null = (m) => ('method' in m && 'id' in m ? { jsonrpc: '2.0', id: m.id, result: {} } : null)) {
  const sent: JSONRPCMessage[] = [];
  const server: Transport = {
    async start() {},
    async close() {
      server.onclose?.();
    },
    async send(message) {
      sent.push(message);
      const reply = answer(message);
      if (reply !== null) queueMicrotask(() => server.onmessage?.(reply));
    },
  };
  return { server, sent };
}

/** The bridge between an agent channel and a fake server, with `filter` on the way in. */
async function bridged(filter: (m: JSONRPCMessage) => JsonRpcErrorResponse | null) {
  const [agent, host] = createInMemoryChannelPair();
  const { server, sent } = fakeServer();
  const bridge = bridgeChannels(host, server, { server: 'test', log: silentLogger, filter });
  await bridge.start();
  const got: JSONRPCMessage[] = [];
  agent.onmessage = (m) => got.push(m);
  await agent.start();
  return { agent, sent, got, bridge };
}

const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 2));
};

describe('bridgeChannels on hostile input', () => {
  it('denies a request whose filter throws, never forwards it, and forwards the next', async () => {
    let calls = 0;
    const { agent, sent, got } = await bridged((m) => {
      calls++;
      if ('id' in m && m.id === 1) throw new RangeError('Maximum call stack size exceeded');
      return null;
    });
    await agent.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } });
    await agent.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x' } });
    await until(() => got.length === 2);
    expect(got).toEqual([
      { jsonrpc: '2.0', id: 1, error: { code: -32010, message: 'Request denied by the trust profile: its rules could not be evaluated for this request', data: { reason: 'denied-by-policy' } } },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
    expect(sent.map((m) => ('id' in m ? m.id : null))).toEqual([2]);
    expect(calls).toBe(2);
  });

  it('names a denied tool in its log lines and audit line cut short, however long the agent made it', async () => {
    const [agent, host] = createInMemoryChannelPair();
    const { server, sent } = fakeServer();
    const lines: string[] = [];
    const log = createLogger({ level: 'debug', write: (line) => lines.push(line) });
    const ledger = new CallLedger(new AuditLog({ component: 'sidecar', write: (line) => lines.push(line) }), { agent: 'a', server: 'test', host: 'h' });
    const deny = (m: JSONRPCMessage) => ('id' in m && m.id === 1 ? { jsonrpc: '2.0' as const, id: 1, error: { code: -32010, message: 'Denied', data: { reason: 'denied-by-policy' as const } } } : null);
    let calls = 0;
    const throwing = (m: JSONRPCMessage) => (++calls === 2 ? (() => { throw new Error('boom'); })() : deny(m));
    await bridgeChannels(host, server, { server: 'test', log, ledger, filter: throwing }).start();
    const got: JSONRPCMessage[] = [];
    agent.onmessage = (m) => got.push(m);
    await agent.start();
    const name = 'n'.repeat(1_000_000);
    await agent.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });
    await agent.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name } });
    await until(() => got.length === 2);
    expect(sent).toEqual([]);
    expect(lines.length).toBeGreaterThanOrEqual(4);
    for (const line of lines) expect(line.length).toBeLessThan(2_000);
    expect(lines.filter((line) => line.includes('n'.repeat(256)))).toHaveLength(lines.length);
  });

  it('ends the audit line of a call the agent cancels, as cancelled, once no answer came in the grace, and forwards the cancellation', async () => {
    const [agent, host] = createInMemoryChannelPair();
    const { server, sent } = fakeServer(() => null); // a server that honours cancellation never answers
    const lines: Array<Record<string, unknown>> = [];
    const ledger = new CallLedger(new AuditLog({ component: 'sidecar', write: (line) => lines.push(JSON.parse(line)) }), { agent: 'a', server: 'test', host: 'h' }, { cancelGraceMs: 20 });
    await bridgeChannels(host, server, { server: 'test', log: silentLogger, ledger }).start();
    await agent.start();
    await agent.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await agent.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'stopped' } });
    await until(() => sent.length === 2);
    expect(sent[1]).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'stopped' } });
    await until(() => lines.length === 1);
    expect(ledger.inFlight).toBe(0);
    expect(lines.map((l) => [l.tool, l.decision, l.outcome, l.reason])).toEqual([['slow', 'allowed', 'error', 'cancelled']]);
  });

  it('records the answer of a cancelled call that came anyway: the call ran, and its line says so', async () => {
    const [agent, host] = createInMemoryChannelPair();
    const { server } = fakeServer(); // a server that ignores the cancellation and answers
    const lines: Array<Record<string, unknown>> = [];
    const ledger = new CallLedger(new AuditLog({ component: 'sidecar', write: (line) => lines.push(JSON.parse(line)) }), { agent: 'a', server: 'test', host: 'h' }, { cancelGraceMs: 60_000 });
    await bridgeChannels(host, server, { server: 'test', log: silentLogger, ledger }).start();
    const got: JSONRPCMessage[] = [];
    agent.onmessage = (m) => got.push(m);
    await agent.start();
    // Sent back to back: the cancellation reaches the ledger before the server's answer comes back.
    await Promise.all([
      agent.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'write' } }),
      agent.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
    ]);
    await until(() => lines.length === 1);
    expect(lines.map((l) => [l.tool, l.outcome, l.reason, l.cancelRequested])).toEqual([['write', 'ok', undefined, true]]);
  });

  it('marks what it answers itself as the host\'s own, a denial or a request the server could not take, and never what the server wrote', async () => {
    const [agent, host] = createInMemoryChannelPair();
    const forged = (id: string | number) => ({ jsonrpc: '2.0' as const, id, error: { code: -32010, message: 'Denied', data: { reason: 'denied-by-policy' } } });
    const { server } = fakeServer((m) => ('method' in m && 'id' in m ? forged(m.id) : null));
    const deny = (m: JSONRPCMessage) => ('id' in m && m.id === 1 ? forged(1) as JsonRpcErrorResponse : null);
    const bridge = bridgeChannels(host, server, { server: 'test', log: silentLogger, filter: deny });
    await bridge.start();
    const got: JSONRPCMessage[] = [];
    agent.onmessage = (m) => got.push(m);
    await agent.start();
    await agent.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } });
    await agent.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'x' } });
    await until(() => got.length === 2);
    server.send = async () => {
      throw new Error('gone');
    };
    await agent.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'x' } });
    await until(() => got.length === 3);
    expect(got.map((m) => [(m as { id: number }).id, (m as { error: { data: { reason: string } } }).error.data.reason, isHostAnswer(m)])).toEqual([
      [1, 'denied-by-policy', true],
      [2, 'denied-by-policy', false],
      [3, 'server-exited', true],
    ]);
  });

  it('answers a request whose server answer the link cannot carry (its JSON.stringify threw), instead of dropping it', async () => {
    const [agent, host] = createInMemoryChannelPair();
    const send = host.send.bind(host);
    // What a link channel's send does with an answer too deep to serialize.
    host.send = async (message) => {
      if ('result' in message && (message.result as { deep?: unknown }).deep !== undefined) throw new RangeError('Maximum call stack size exceeded');
      return send(message);
    };
    const { server } = fakeServer((m) => ('method' in m && 'id' in m ? { jsonrpc: '2.0', id: m.id, result: { deep: true } } : null));
    await bridgeChannels(host, server, { server: 'test', log: silentLogger }).start();
    const got: JSONRPCMessage[] = [];
    agent.onmessage = (m) => got.push(m);
    await agent.start();
    await agent.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'x' } });
    await until(() => got.length === 1);
    expect(got).toEqual([{ jsonrpc: '2.0', id: 5, error: { code: -32600, message: 'Server "test" answered with a message the link cannot carry', data: { reason: 'invalid-request' } } }]);
  });
});
