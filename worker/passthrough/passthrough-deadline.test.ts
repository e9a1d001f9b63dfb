/**
 * The per-request deadline of `/servers/:name/mcp` (`request-timeout-seconds`): a server that
 * does not answer gets its request cancelled and the agent gets `request-timeout`; progress
 * restarts the deadline; a server that never answers `initialize` has its session closed, which
 * closes its channel (and so, on a sidecar, ends its process). Without the setting there is no
 * deadline, but for `initialize`, which the open deadline (60 s by default) bounds; and an
 * initialize the agent stops waiting for (its stream dropped and not resumed, or the agent gone
 * before the session was made) ends its session at once. The end-to-end counterparts, over a real
 * link, are in `test/resilience/` (`server-faults.test.ts`, `abandoned-initialize.test.ts`).
 *
 * The clock is vitest's fake one: each test connects on real time, then installs the fake clock
 * and advances it until the outcome settles, so the 0.3 s deadline costs no real 0.3 s.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import type { ChannelRouter } from '../routing/channel-router.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';
import { advanceBy, advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';
import { INITIALIZE_RESUME_GRACE_MS } from '../sessions/legacy-http-endpoint.ts';

let harness: InProcessApp | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await harness?.close();
  harness = undefined;
});

const cancelled: string[] = [];

function slowServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('hang', {}, (extra) => new Promise(() => extra.signal.addEventListener('abort', () => cancelled.push(String(extra.requestId)))));
  server.registerTool('slow', { inputSchema: { ms: z.number(), steps: z.number() } }, async ({ ms, steps }, extra) => {
    for (let step = 1; step <= steps; step++) {
      await new Promise((resolve) => setTimeout(resolve, ms / steps));
      if (extra._meta?.progressToken !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: extra._meta.progressToken, progress: step, total: steps } });
      }
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  return server;
}

async function setup(extra: Record<string, unknown>, router: ChannelRouter = new InProcessRouter({ alpha: slowServer })): Promise<InProcessApp> {
  const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], extra);
  harness = startInProcessApp(config, router as InProcessRouter);
  return harness;
}

describe('/servers/:name/mcp request deadline', () => {
  it('answers request-timeout, cancels the request on the server, and keeps the session working', async () => {
    const app = await setup({ 'request-timeout-seconds': 0.3 });
    const client = await app.client('/servers/alpha/mcp', 'alice-token');
    useFakeClock();
    const error = (await advanceUntilSettled(client.callTool({ name: 'hang', arguments: {} }, CallToolResultSchema, { timeout: 10_000 }).catch((e: unknown) => e))) as McpError;
    expect(error).toBeInstanceOf(McpError);
    expect(error.data).toMatchObject({ reason: 'request-timeout', server: 'alpha' });
    expect(error.message).toContain('did not answer "tools/call" within 0.3 s');
    await expect.poll(() => cancelled.length).toBeGreaterThan(0);
    expect(await client.callTool({ name: 'echo', arguments: { text: 'still here' } })).toEqual({ content: [{ type: 'text', text: 'still here' }] });
  });

  it('restarts the deadline on progress, so a long tool that reports progress finishes', async () => {
    const app = await setup({ 'request-timeout-seconds': 0.3 });
    const client = await app.client('/servers/alpha/mcp', 'alice-token');
    useFakeClock();
    const result = await advanceUntilSettled(client.callTool({ name: 'slow', arguments: { ms: 900, steps: 9 } }, CallToolResultSchema, { onprogress: () => {}, timeout: 10_000 }));
    expect(result.content).toEqual([{ type: 'text', text: 'done' }]);
  });

  it("tells the session table when its oldest call in flight arrived, the next one's once that one is answered", async () => {
    const app = await setup({});
    const client = await app.client('/servers/alpha/mcp', 'alice-token');
    const session = app.sessions.get((client.transport as { sessionId?: string }).sessionId!)!;
    expect(session.oldestInFlightAt).toBeUndefined();
    const slow = client.callTool({ name: 'slow', arguments: { ms: 200, steps: 1 } });
    await expect.poll(() => session.inFlight).toBe(1);
    const first = session.oldestInFlightAt!;
    const between = Date.now();
    void client.callTool({ name: 'hang', arguments: {} }).catch(() => {});
    await expect.poll(() => session.inFlight).toBe(2);
    expect(session.oldestInFlightAt).toBe(first);
    await slow;
    await expect.poll(() => session.inFlight).toBe(1);
    expect(session.oldestInFlightAt).toBeGreaterThanOrEqual(between);
  });

  it('has no deadline unless request-timeout-seconds is set', async () => {
    const app = await setup({});
    const client = await app.client('/servers/alpha/mcp', 'alice-token');
    useFakeClock();
    const result = await advanceUntilSettled(client.callTool({ name: 'slow', arguments: { ms: 400, steps: 1 } }));
    expect(result.content).toEqual([{ type: 'text', text: 'done' }]);
  });

  it('closes the session, and with it the channel, when the server never answers initialize', async () => {
    let serverClosed!: () => void;
    const closed = new Promise<void>((resolve) => (serverClosed = resolve));
    const silent: ChannelRouter = {
      async open() {
        const [worker, server] = createInMemoryChannelPair();
        server.onclose = () => serverClosed();
        await server.start();
        return worker;
      },
    };
    const app = await setup({ 'request-timeout-seconds': 0.3 }, silent);
    useFakeClock();
    const text = await advanceUntilSettled(app.fetch(`${BASE}/servers/alpha/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    }).then((response) => response.text()));
    expect(text).toContain('"reason":"request-timeout"');
    expect(text).toContain('did not answer \\"initialize\\" within 0.3 s; the request was cancelled and the session closed');
    await closed;
    expect(app.sessions.size).toBe(0);
  });
});

/** A router whose server never answers anything; `closed` settles when the worker closes its channel. */
function silentRouter(): { router: ChannelRouter; closed: Promise<void> } {
  let serverClosed!: () => void;
  const closed = new Promise<void>((resolve) => (serverClosed = resolve));
  const router: ChannelRouter = {
    async open() {
      const [worker, server] = createInMemoryChannelPair();
      server.onclose = () => serverClosed();
      await server.start();
      return worker;
    },
  };
  return { router, closed };
}

const initializeRequest = (protocolVersion: string): RequestInit => ({
  method: 'POST',
  headers: { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
});

describe('/servers/:name/mcp initialize that never gets its answer to the agent', () => {
  it('is bounded by the open deadline (60 s) without request-timeout-seconds, and the session ends', async () => {
    const { router, closed } = silentRouter();
    const app = await setup({}, router);
    useFakeClock();
    const started = Date.now();
    const answered = app.fetch(`${BASE}/servers/alpha/mcp`, initializeRequest('2025-06-18')).then((response) => response.text());
    // The fake clock moves only once the initialize is in flight, its deadline armed: opening
    // takes real turns of the event loop (digests), which the clock would otherwise run past.
    while (app.sessions.list()[0] === undefined || app.sessions.get(app.sessions.list()[0]!.id)!.inFlight === 0) await new Promise((resolve) => setImmediate(resolve));
    const text = await advanceUntilSettled(answered, { stepMs: 500 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(60_000);
    expect(text).toContain('"reason":"request-timeout"');
    expect(text).toContain('did not answer \\"initialize\\" within 60 s');
    await closed;
    expect(app.sessions.size).toBe(0);
  });

  it('ends its session and channel at once when the agent drops the initialize stream it cannot resume', async () => {
    const { router, closed } = silentRouter();
    const app = await setup({}, router);
    const response = await app.fetch(`${BASE}/servers/alpha/mcp`, initializeRequest('2025-06-18'));
    expect(response.status).toBe(200);
    expect(app.sessions.size).toBe(1);
    await response.body!.cancel();
    await expect.poll(() => app.sessions.size).toBe(0);
    await closed;
  });

  it('ends its session and channel when the agent left while its server was being opened', async () => {
    const { router: silent, closed } = silentRouter();
    let letOpen!: () => void;
    const opening = new Promise<void>((resolve) => (letOpen = resolve));
    let asked!: () => void;
    const openAsked = new Promise<void>((resolve) => (asked = resolve));
    const slowOpen: ChannelRouter = {
      async open(...args) {
        asked();
        await opening;
        return silent.open(...args);
      },
    };
    const app = await setup({}, slowOpen);
    const agent = new AbortController();
    const response = app.fetch(`${BASE}/servers/alpha/mcp`, { ...initializeRequest('2025-06-18'), signal: agent.signal });
    await openAsked;
    agent.abort();
    letOpen();
    await response.catch(() => undefined);
    await expect.poll(() => app.sessions.size).toBe(0);
    await closed;
  });

  it('waits for a resume of a primed initialize stream, and ends the session when none comes', async () => {
    const { router, closed } = silentRouter();
    const app = await setup({}, router);
    const response = await app.fetch(`${BASE}/servers/alpha/mcp`, initializeRequest('2025-11-25'));
    const sessionId = response.headers.get('mcp-session-id')!;
    const reader = response.body!.getReader();
    const priming = new TextDecoder().decode((await reader.read()).value);
    const eventId = /^id: (.+)$/m.exec(priming)![1]!;
    useFakeClock();
    await reader.cancel();
    // Resumed within the grace: the session stays, however long the grace would have been.
    await advanceBy(INITIALIZE_RESUME_GRACE_MS - 1000);
    const resumed = await app.fetch(`${BASE}/servers/alpha/mcp`, {
      headers: { authorization: 'Bearer alice-token', accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25', 'last-event-id': eventId },
    });
    expect(resumed.status).toBe(200);
    await advanceBy(INITIALIZE_RESUME_GRACE_MS * 2);
    expect(app.sessions.size).toBe(1);
    // Dropped again and not resumed: abandoned once the grace is out.
    await resumed.body!.cancel();
    await advanceBy(INITIALIZE_RESUME_GRACE_MS - 1000);
    expect(app.sessions.size).toBe(1);
    await advanceUntilSettled(closed);
    expect(app.sessions.size).toBe(0);
  });
});
