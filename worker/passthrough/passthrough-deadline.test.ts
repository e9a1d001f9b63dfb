/**
 * The per-request deadline of `/servers/:name/mcp` (`request-timeout-seconds`): a server that
 * does not answer gets its request cancelled and the agent gets `request-timeout`; progress
 * restarts the deadline; a server that never answers `initialize` has its session closed, which
 * closes its channel (and so, on a sidecar, ends its process). Without the setting there is no
 * deadline. The end-to-end counterpart, over a real link, is in `test/resilience/`.
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
import { advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';

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
