/**
 * An agent's `notifications/cancelled` on a legacy session of `/servers/:name/mcp` or `/mcp`: the
 * server it reaches never answers the request (MCP, "Cancellation"), so the session ends the call
 * itself: it no longer counts as in flight (a busy session is never idle, so never swept, nor
 * chosen to make room), its audit line says it was cancelled, and the POST that carried it ends.
 * Its place under the agent's cap is kept until its late answer comes or its grace ends (review
 * isolation.md, finding 4): a server that ignores the cancellation is still at work. The
 * end-to-end counterpart is `test/resilience/cancelled-calls.test.ts`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { advanceBy, advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { auditFromConfig } from '../../shared/audit/audit-from-config.ts';
import { silentLogger } from '../../shared/log.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';
import { RecentCalls } from '../audit/recent-calls.ts';
import { WorkerAudit } from '../audit/worker-audit.ts';
import { createInMemoryChannelPair, type ChannelTransport } from '../../shared/channel-transport.ts';
import type { ChannelRouter } from '../routing/channel-router.ts';
import { createApp } from '../app.ts';
import { AgentRequestCounters } from './request-limits.ts';
import { InMemorySessionTable } from './session-table.ts';

/**
 * A raw server behind the channel (an SDK server never answers a call it saw cancelled): it
 * answers initialize, and a `tools/call` only when the test sends the answer (`server()`), after
 * the agent's cancellation if it likes. `calls` lists the ids of the calls it got.
 */
function rawServer(): { router: ChannelRouter; calls: Array<string | number>; server: () => ChannelTransport } {
  const calls: Array<string | number> = [];
  let server!: ChannelTransport;
  const router: ChannelRouter = {
    async open() {
      const [channel, host] = createInMemoryChannelPair();
      server = host;
      host.onmessage = (message) => {
        const m = message as { id?: string | number; method?: string };
        if (m.method === 'initialize') void host.send({ jsonrpc: '2.0', id: m.id!, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } } });
        else if (m.method === 'tools/call') calls.push(m.id!);
      };
      await host.start();
      return channel;
    },
  };
  return { router, calls, server: () => server };
}

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** `hang` never answers: what the agent sees of a server that honours a cancellation. */
function hangingServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('hang', {}, () => new Promise(() => {}));
  return server;
}

describe('a cancelled call', () => {
  it.each([
    ['passthrough', '/servers/alpha/mcp', 'hang'],
    ['aggregate', '/mcp', 'alpha__hang'],
  ])('ends in the %s session at once: not in flight, its stream ended, audited as cancelled', async (_route, path, tool) => {
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], {});
    const lines: Array<Record<string, unknown>> = [];
    const { audit: log } = auditFromConfig(config.audit, { component: 'worker', write: (line) => lines.push(JSON.parse(line)), log: silentLogger });
    harness = startInProcessApp(config, new InProcessRouter({ alpha: hangingServer }), { audit: new WorkerAudit({ config, log: log!, recentCalls: new RecentCalls(4), cancelGraceMs: 50 }) });
    const headers = { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const url = `${BASE}${path}`;
    const init = await harness.fetch(url, {
      method: 'POST', headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    const id = init.headers.get('mcp-session-id')!;
    await init.text();
    const inSession = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
    const send = (body: unknown) => harness!.fetch(url, { method: 'POST', headers: inSession, body: JSON.stringify(body) });
    await send({ jsonrpc: '2.0', method: 'notifications/initialized' });

    const call = await send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: tool, arguments: {} } });
    const session = harness.sessions.get(id)!;
    await expect.poll(() => session.inFlight).toBe(1);
    expect((await send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'stopped' } })).status).toBe(202);
    await expect.poll(() => session.inFlight).toBe(0);
    expect(await call.text()).not.toContain('"id":7');
    await expect.poll(() => lines.filter((l) => l.method === 'tools/call').map((l) => [l.tool, l.decision, l.outcome, l.reason])).toEqual([['hang', 'allowed', 'error', 'cancelled']]);

    // The session goes on.
    const again = await send({ jsonrpc: '2.0', id: 8, method: 'tools/list' });
    expect(await again.text()).toContain(`"name":"${tool}"`);
  });

  it('records a cancelled call the server ran anyway as it went, marked cancelRequested, and the agent gets no answer', async () => {
    const { router, calls, server } = rawServer();
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], {});
    const lines: Array<Record<string, unknown>> = [];
    const { audit: log } = auditFromConfig(config.audit, { component: 'worker', write: (line) => lines.push(JSON.parse(line)), log: silentLogger });
    harness = startInProcessApp(config, router as unknown as InProcessRouter, { audit: new WorkerAudit({ config, log: log!, recentCalls: new RecentCalls(4), cancelGraceMs: 60_000 }) });
    const headers = { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const url = `${BASE}/servers/alpha/mcp`;
    const init = await harness.fetch(url, {
      method: 'POST', headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    const inSession = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    await init.text();
    const send = (body: unknown) => harness!.fetch(url, { method: 'POST', headers: inSession, body: JSON.stringify(body) });
    const call = await send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'write', arguments: {} } });
    expect((await send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } })).status).toBe(202);
    expect(calls).toHaveLength(1); // the call reached the server before its cancellation
    await server().send({ jsonrpc: '2.0', id: calls[0]!, result: { content: [{ type: 'text', text: 'written' }] } });
    expect(lines.filter((l) => l.method === 'tools/call').map((l) => [l.tool, l.outcome, l.cancelRequested])).toEqual([['write', 'ok', true]]);
    expect(await call.text()).not.toContain('written');
  });
});

describe("a cancelled call's place under the agent's cap", () => {
  const headers = { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
  const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
  let sessions: InMemorySessionTable | undefined;
  afterEach(async () => {
    await sessions?.closeAll();
    sessions = undefined;
  });

  async function sessionOn(router: ChannelRouter | InProcessRouter, path: string, counters: AgentRequestCounters) {
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], { 'max-requests-per-agent': 1 });
    sessions = new InMemorySessionTable({ idleMs: 60_000 });
    const app = createApp({ config, router: router as ChannelRouter, sessions, retryAfterMs: 0, requestCounters: counters });
    const url = `${BASE}${path}`;
    const init = await app.request(url, { method: 'POST', headers, body: JSON.stringify(initialize) });
    const inSession = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    await init.text();
    return (body: unknown) => Promise.resolve(app.request(url, { method: 'POST', headers: inSession, body: JSON.stringify(body) }));
  }

  it('on the passthrough, is kept until the late answer of a server that ignored the cancellation, which the agent never sees', async () => {
    const { router, calls, server } = rawServer();
    const counters = new AgentRequestCounters();
    const send = await sessionOn(router, '/servers/alpha/mcp', counters);
    const call = await send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'work', arguments: {} } });
    expect((await send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } })).status).toBe(202);
    expect(await call.text()).toBe('');
    const refused = await send({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'work', arguments: {} } });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ id: 8, error: { data: { reason: 'limit-reached', agent: 'alice', limit: 1 } } });
    expect(counters.of({ name: 'alice' }).inFlight).toBe(1);

    await server().send({ jsonrpc: '2.0', id: calls[0]!, result: { content: [{ type: 'text', text: 'late' }] } });
    expect(counters.of({ name: 'alice' }).inFlight).toBe(0);
    const taken = send({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'work', arguments: {} } });
    await expect.poll(() => calls.length).toBe(2);
    await server().send({ jsonrpc: '2.0', id: calls[1]!, result: { content: [{ type: 'text', text: 'done' }] } });
    expect(await (await taken).json()).toMatchObject({ id: 9, result: { content: [{ text: 'done' }] } });
  });

  it('on the aggregate, whose upstream client drops a late answer, is kept until the grace ends', async () => {
    useFakeClock();
    try {
      const counters = new AgentRequestCounters({ cancelGraceMs: 10_000 });
      const send = await advanceUntilSettled(sessionOn(new InProcessRouter({ alpha: hangingServer }), '/mcp', counters), { stepMs: 1 });
      const alice = counters.of({ name: 'alice' });
      const call = await advanceUntilSettled(send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'alpha__hang', arguments: {} } }), { stepMs: 1 });
      expect((await advanceUntilSettled(send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }), { stepMs: 1 })).status).toBe(202);
      expect(await call.text()).toBe('');
      expect(alice.inFlight).toBe(1);
      expect((await send({ jsonrpc: '2.0', id: 8, method: 'tools/list' })).status).toBe(429);
      await advanceBy(9_000);
      expect(alice.inFlight).toBe(1);
      await advanceBy(1_000);
      expect(alice.inFlight).toBe(0);
      const listed = await advanceUntilSettled(send({ jsonrpc: '2.0', id: 9, method: 'tools/list' }), { stepMs: 1 });
      expect(await listed.text()).toContain('alpha__hang');
    } finally {
      vi.useRealTimers();
    }
  });
});
