/**
 * `/servers/:name/mcp` to an edge-direct HTTP server nobody listens for (a real fetch to a closed
 * port): the agent's initialize is answered `launch-failed` naming the server, the session it
 * would have opened is gone, and the failure is in the recent errors the status page shows
 * (review s22: the session stayed live until the idle sweep, counted on the page, and the answer
 * said the server was "no longer connected").
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../app.ts';
import { parseWorkerConfig } from '../config/worker-config.ts';
import { InMemoryHostLinkRegistry } from '../link/host-link-registry.ts';
import { ExecutorTargetRouter } from '../routing/executor-target-router.ts';
import { InMemorySessionTable } from '../sessions/session-table.ts';
import { RecentErrors } from '../status/recent-errors.ts';
import { sha256Hex } from '../auth/agent-auth.ts';

const sessions: InMemorySessionTable[] = [];
afterEach(async () => {
  for (const table of sessions.splice(0)) {
    await table.closeAll();
    table.dispose();
  }
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function initializeAt(url: string, extra: Record<string, unknown> = {}) {
  const config = parseWorkerConfig({
    agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['docs'] }],
    servers: { docs: { executor: { type: 'http', url } } },
    ...extra,
  }, { runtime: 'edge' });
  const table = new InMemorySessionTable({ idleMs: 60_000 });
  sessions.push(table);
  const recentErrors = new RecentErrors();
  const registry = new InMemoryHostLinkRegistry({ hosts: [] });
  const app = createApp({ config, router: new ExecutorTargetRouter({ registry }), sessions: table, registry, recentErrors, retryAfterMs: 0 });
  const response = await app.request('http://localhost:8787/servers/docs/mcp', {
    method: 'POST',
    headers: { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json', host: 'localhost:8787' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  const text = await response.text();
  const answer = JSON.parse(text.includes('data:') ? text.slice(text.indexOf('data:') + 5).trim() : text) as { error: { message: string; data: { reason: string } } };
  return { answer, table, recentErrors };
}

describe('a passthrough session to an edge-direct server that cannot be reached', () => {
  it('answers initialize launch-failed, keeps no session, and records the failure', async () => {
    const { answer, table, recentErrors } = await initializeAt(`http://127.0.0.1:${await closedPort()}/mcp`);
    expect(answer.error.data.reason).toBe('launch-failed');
    expect(answer.error.message).toMatch(/^Server "docs" could not be reached: .*(ECONNREFUSED|refused)/i);
    await expect.poll(() => table.size).toBe(0);
    expect(recentErrors.list()).toEqual([expect.objectContaining({ reason: 'launch-failed', server: 'docs', agent: 'alice' })]);
  });

  it('blames no server for the send its own timeout aborted (review of s22)', async () => {
    const hanging = createHttpServer(() => {}); // takes the initialize, never answers
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const { answer, table, recentErrors } = await initializeAt(`http://127.0.0.1:${(hanging.address() as { port: number }).port}/mcp`, { 'request-timeout-seconds': 1 });
      expect(answer.error.data.reason).toBe('request-timeout');
      await expect.poll(() => table.size).toBe(0);
      expect(recentErrors.list().filter((e) => e.reason === 'launch-failed')).toEqual([]);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });
});
