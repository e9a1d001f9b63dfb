/**
 * An agent's requests in flight count against one `max-requests-per-agent` across a config reload:
 * the composed worker builds a new app on each reload and hands it the same counters. A counter
 * per config entry let an agent hold its cap under the old config and its cap again under the new.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { advanceBy, useFakeClock } from '../../test/support/fake-clock.ts';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { BASE, testConfig } from '../../test/support/in-process-app.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { createApp } from '../app.ts';
import { AgentRequestCounters, AgentRequests } from './request-limits.ts';
import { InMemorySessionTable } from './session-table.ts';

const sessions = new InMemorySessionTable({ idleMs: 60_000 });
afterEach(async () => {
  await sessions.closeAll();
});

function hangingServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('hang', {}, () => new Promise(() => {}));
  return server;
}

const HEADERS = { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const hang = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hang', arguments: {} } });

/** A session on `app`'s passthrough, and a way to post on it (a DELETE without a body). */
async function sessionOn(app: ReturnType<typeof createApp>) {
  const url = `${BASE}/servers/alpha/mcp`;
  const init = await app.request(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(initialize) });
  const headers = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  await init.text();
  return (body?: unknown) => app.request(url, body === undefined ? { method: 'DELETE', headers } : { method: 'POST', headers, body: JSON.stringify(body) });
}

describe('AgentRequestCounters', () => {
  it('keeps one counter per agent name, whatever config entry asks, under the limit the newest config set', () => {
    const counters = new AgentRequestCounters();
    counters.configure({ 'max-requests-per-agent': 2 });
    const before = counters.of({ name: 'alice' });
    before.take(2);
    counters.configure({ 'max-requests-per-agent': 1 });
    const after = counters.of({ name: 'alice' });
    expect(after).toBe(before);
    expect([after.limit, after.room]).toEqual([1, 0]);
    after.release(2);
    expect(counters.of({ name: 'alice' }).room).toBe(1);
    counters.configure(undefined);
    expect([counters.of({ name: 'bob' }).inFlight, counters.of({ name: 'bob' }).limit, counters.of({ name: 'alice' }).limit]).toEqual([0, 256, 256]);
  });

  it("counts an agent's calls taken before a reload against its cap after it", async () => {
    const router = new InProcessRouter({ alpha: hangingServer });
    const requestCounters = new AgentRequestCounters();
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], { 'max-requests-per-agent': 2 });
    const first = createApp({ config, router, sessions, retryAfterMs: 0, requestCounters });
    const old = await sessionOn(first);
    expect((await old(hang(1))).status).toBe(200);
    expect((await old(hang(2))).status).toBe(200);

    // The reloaded config: the same agent, another entry.
    const reloaded = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], { 'max-requests-per-agent': 2 });
    const second = createApp({ config: reloaded, router, sessions, retryAfterMs: 0, requestCounters });
    const url = `${BASE}/servers/alpha/mcp`;
    const refused = await second.request(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(initialize) });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ id: 0, error: { data: { reason: 'limit-reached', agent: 'alice', limit: 2 } } });

    // A session the agent ends under the old config gives its calls back under the new one.
    expect((await old()).status).toBe(200);
    const opened = await second.request(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(initialize) });
    expect(opened.status).toBe(200);
    expect(opened.headers.get('mcp-session-id')).not.toBeNull();
    await opened.text();
  });
});

describe('a modern request slot', () => {
  it('is given back once: at its release, or, parked for an agent that left, at the end of its grace and not before', async () => {
    useFakeClock();
    try {
      const alice = new AgentRequests('alice', 2, { cancelGraceMs: 1_000 });
      const read = alice.takeSlot()!;
      const left = alice.takeSlot()!;
      expect(alice.takeSlot()).toBeNull();
      read.release();
      read.release();
      expect(alice.inFlight).toBe(1);
      left.park();
      left.release(); // the answer's end after the agent left: the grace still holds it
      expect(alice.inFlight).toBe(1);
      await advanceBy(1_000);
      expect(alice.inFlight).toBe(0);
      // Held by another request: a second release of the parked one would show as 0.
      const other = alice.takeSlot()!;
      left.release();
      expect(alice.inFlight).toBe(1);
      other.release();
    } finally {
      vi.useRealTimers();
    }
  });
});
