import { afterEach, describe, expect, it } from 'vitest';
import {
  CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, InitializeRequestSchema, LoggingMessageNotificationSchema, McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../shared/errors.ts';
import { createTestMcpServer } from '../../test/support/test-mcp-server.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function setup(containment?: 'required') {
  const router = new InProcessRouter({ alpha: createTestMcpServer, beta: createTestMcpServer });
  const config = await testConfig([
    { name: 'alice', servers: ['alpha'], ...(containment !== undefined ? { containment } : {}) },
    { name: 'bob', servers: ['beta'] },
  ], ['alpha', 'beta']);
  harness = startInProcessApp(config, router);
  return { router, harness };
}

describe('/servers/:name/mcp passthrough', () => {
  it('passes the server through unchanged: its initialize result, tools, results and tool errors', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    expect(client.getServerVersion()).toEqual({ name: 'alpha', version: '1.0.0' });
    expect(client.getInstructions()).toBe('Instructions of alpha');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('echo');
    expect(await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).toEqual({ content: [{ type: 'text', text: 'alpha: hi' }] });
    expect(await client.callTool({ name: 'fail', arguments: {} })).toEqual({ isError: true, content: [{ type: 'text', text: 'alpha failed on purpose' }] });
    expect(router.opened).toHaveLength(1);
    expect(router.opened[0]!.connection).toMatchObject({ 'server-name': 'alpha', agent: 'alice' });
    expect(router.opened[0]!.connection.session).toBe((client.transport as { sessionId?: string }).sessionId);
  });

  it('keeps JSON-RPC errors of the server, data included', async () => {
    const { harness } = await setup();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    const error = await client.getPrompt({ name: 'explode' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32010);
    expect((error as McpError).message).toBe('MCP error -32010: Denied on purpose');
    expect((error as McpError).data).toEqual({ reason: 'denied-by-policy', prompt: 'explode' });
  });

  it('relays progress, logging, sampling and elicitation on the right streams', async () => {
    const { harness } = await setup();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token', { sampling: {}, elicitation: {} });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'test', content: { type: 'text', text: 'sampled-by-agent' } }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void logs.push(n.params.data));

    const progress: number[] = [];
    await client.callTool({ name: 'progress', arguments: {} }, CallToolResultSchema, { onprogress: (p) => void progress.push(p.progress) });
    expect(progress).toEqual([1, 2, 3]);

    const sampled = await client.callTool({ name: 'sample', arguments: {} });
    expect(JSON.stringify(sampled)).toContain('sampled-by-agent');
    const elicited = await client.callTool({ name: 'elicit', arguments: {} });
    expect(JSON.stringify(elicited)).toContain('Ada');
    await client.callTool({ name: 'log', arguments: {} });
    expect(logs).toEqual(['logged']);
  });

  it('answers 404 server-not-found for unknown servers and for servers of other agents alike', async () => {
    const { harness } = await setup();
    for (const name of ['beta', 'ghost']) {
      const response = await harness.fetch(`${BASE}/servers/${name}/mcp`, {
        method: 'POST',
        headers: { ...HEADERS, authorization: 'Bearer alice-token' },
        body: JSON.stringify(INIT),
      });
      expect(response.status).toBe(404);
      const body = (await response.json()) as { error: { data: { reason: string }; message: string } };
      expect(body.error.data.reason).toBe('server-not-found');
      expect(body.error.message).toBe(`Server "${name}" not found: this agent may use alpha`);
    }
  });

  it('answers a router refusal at initialize with its status and a JSON-RPC error carrying the reason', async () => {
    const { router, harness } = await setup();
    router.failures.set('alpha', new WireError('host-offline', 'Host "laptop" is offline: its sidecar has no live link to this worker'));
    const response = await harness.fetch(`${BASE}/servers/alpha/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: 'Bearer alice-token' },
      body: JSON.stringify(INIT),
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32003, message: 'Host "laptop" is offline: its sidecar has no live link to this worker', data: { reason: 'host-offline' } },
    });
    expect(harness.sessions.size).toBe(0);
  });

  it('ends the session of a server that refuses initialize, behind its error: it holds no place among the agent\'s sessions (review s24)', async () => {
    const refusing = (name: string) => {
      const server = createTestMcpServer(name);
      server.server.setRequestHandler(InitializeRequestSchema, () => {
        throw new McpError(-32602, 'Unsupported protocol version (test)');
      });
      return server;
    };
    const router = new InProcessRouter({ alpha: createTestMcpServer, gamma: refusing });
    const config = await testConfig([{ name: 'alice', servers: ['alpha', 'gamma'] }], ['alpha', 'gamma']);
    const events: string[] = [];
    const onSession = { opened: (s: { route: string }) => void events.push(`opened ${s.route}`), ended: (s: { route: string }, because: string) => void events.push(`ended ${s.route} ${because}`) };
    harness = startInProcessApp({ ...config, 'max-sessions-per-agent': 2 }, router, { onSession });
    const working = await harness.client('/servers/alpha/mcp', 'alice-token');
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await harness.fetch(`${BASE}/servers/gamma/mcp`, { method: 'POST', headers: { ...HEADERS, authorization: 'Bearer alice-token' }, body: JSON.stringify(INIT) });
      const text = await response.text();
      expect(text, text).toContain('"error":{"code":-32602');
    }
    expect(harness.sessions.size).toBe(1);
    expect(router.opened.filter((o) => o.connection['server-name'] === 'gamma').every((o) => o.channel.closed)).toBe(true);
    expect(await working.callTool({ name: 'echo', arguments: { text: 'still here' } })).toEqual({ content: [{ type: 'text', text: 'alpha: still here' }] });
    // A refused initialize opened nothing: no session line for any of them (README, audit).
    expect(events).toEqual(['opened server:alpha']);
  });

  it('refuses requests without a session id unless they initialize, and sessions of other agents', async () => {
    const { harness } = await setup();
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const noSession = await harness.fetch(`${BASE}/servers/alpha/mcp`, { method: 'POST', headers: { ...HEADERS, authorization: 'Bearer alice-token' }, body: JSON.stringify(list) });
    expect(noSession.status).toBe(400);

    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    const stolen = await harness.fetch(`${BASE}/servers/alpha/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: 'Bearer bob-token', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify(list),
    });
    expect(stolen.status).toBe(404);
  });

  it('closes the upstream channel when the agent deletes the session', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    expect(router.openChannels()).toBe(1);
    await (client.transport as unknown as { terminateSession(): Promise<void> }).terminateSession();
    await expect.poll(() => router.openChannels()).toBe(0);
    expect(harness.sessions.size).toBe(0);
  });

  it('fails requests in flight with the reason when the upstream goes away, and ends the session', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token', { elicitation: {} });
    let asked!: () => void;
    const elicitationSeen = new Promise<void>((resolve) => (asked = resolve));
    client.setRequestHandler(ElicitRequestSchema, () => {
      asked();
      return new Promise(() => {});
    });
    const call = client.callTool({ name: 'elicit', arguments: {} }).catch((e: unknown) => e);
    await elicitationSeen;
    await router.opened[0]!.serverEnd.close({ reason: 'host-offline', message: 'link lost' });
    const error = (await call) as McpError;
    expect(error).toBeInstanceOf(McpError);
    expect(error.data).toEqual({ reason: 'host-offline' });
    expect(error.message).toContain('Server "alpha" ended the session: link lost');
    await expect.poll(() => harness.sessions.size).toBe(0);
  });

  it('answers a request on a session its upstream ended with 404 saying why, to its own agent only', async () => {
    const { router, harness } = await setup();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    await router.opened[0]!.serverEnd.close({ reason: 'trust-profile-stale', message: 'Server "alpha" was ended: the trust profile it runs under on this host changed' });
    await expect.poll(() => harness.sessions.size).toBe(0);
    const ping = (token: string, path = '/servers/alpha/mcp') => harness.fetch(`${BASE}${path}`, {
      method: 'POST',
      headers: { ...HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
    });
    const ended = await ping('alice-token');
    expect(ended.status).toBe(404);
    expect(await ended.json()).toEqual({
      jsonrpc: '2.0', id: null,
      error: {
        code: -32600,
        message: 'Session ended: Server "alpha" was ended: the trust profile it runs under on this host changed; initialize a new session',
        data: { reason: 'invalid-request', endedBecause: 'trust-profile-stale' },
      },
    });
    const other = await ping('bob-token', '/servers/beta/mcp');
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { message: string; data: unknown } }).error).toMatchObject({
      message: 'Session not found: it expired or was closed; initialize a new session', data: { reason: 'invalid-request' },
    });
  });

  it('expires an idle session and closes its channel', async () => {
    let now = 0;
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], { 'session-idle-seconds': 60 }), router, { now: () => now });
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    expect(await harness.sessions.sweep()).toBe(0);
    now = 61_000;
    expect(await harness.sessions.sweep()).toBe(1);
    expect(router.openChannels()).toBe(0);
    expect(harness.sessions.size).toBe(0);
    const error = await client.listTools().catch((e: unknown) => e);
    expect(String(error)).toContain('Session ended: no request for more than 60 s; initialize a new session');
  });
});
