import { afterEach, describe, expect, it } from 'vitest';
import { auditFromConfig } from '../../shared/audit/audit-from-config.ts';
import { AuditLog } from '../../shared/audit/audit-log.ts';
import type { WorkerConfig } from '../config/worker-config.ts';
import { WireError } from '../../shared/errors.ts';
import { silentLogger } from '../../shared/log.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { createTestMcpServer } from '../../test/support/test-mcp-server.ts';
import { RecentCalls } from './recent-calls.ts';
import { WorkerAudit } from './worker-audit.ts';
import { hostAnswer } from '../../shared/audit/host-answers.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const TRACEPARENT = `00-${TRACE}-00f067aa0ba902b7-01`;

const until = async (check: () => boolean) => {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
};

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(options: { includeArguments?: boolean } = {}) {
  const lines: Array<Record<string, any>> = [];
  const config = await testConfig([{ name: 'alice', servers: ['alpha', 'beta'] }, { name: 'bob', servers: ['alpha'] }], ['alpha', 'beta'], options.includeArguments ? { audit: { 'include-arguments': true } } : {});
  const recentCalls = new RecentCalls(4);
  const { audit: log } = auditFromConfig(config.audit, { component: 'worker', write: (line) => lines.push(JSON.parse(line)), log: silentLogger, onRecord: (r) => recentCalls.record(r) });
  const router = new InProcessRouter({ alpha: createTestMcpServer, beta: createTestMcpServer });
  harness = startInProcessApp(config, router, { audit: new WorkerAudit({ config, log, recentCalls }) });
  return { lines, router, harness, recentCalls };
}

describe('WorkerAudit.ledger', () => {
  it('takes a policy denial as the decision only through a host that marked it as its own, never from an edge-direct server, and keeps a server\'s words out', () => {
    const lines: Array<Record<string, any>> = [];
    const recentCalls = new RecentCalls(4);
    const log = new AuditLog({ component: 'worker', write: (line) => lines.push(JSON.parse(line)), onRecord: (r) => recentCalls.record(r) });
    const config = { agents: [{ name: 'alice', servers: ['edge', 'hosted', 'here'] }], servers: { edge: { executor: { type: 'http', url: 'https://mcp.example.com/mcp' } }, hosted: { executor: { type: 'user-computer-profile', 'entity-id': 'laptop' } }, here: { executor: { type: 'local' } } } } as unknown as WorkerConfig;
    const audit = new WorkerAudit({ config, log, recentCalls });
    const denial = { jsonrpc: '2.0', id: 1, error: { code: -32010, message: 'Denied', data: { reason: 'denied-by-policy' } } };
    for (const server of ['edge', 'hosted', 'here']) {
      const ledger = audit.ledger({ agent: 'alice', server, era: 'legacy', route: 'passthrough' });
      ledger.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rm' } });
      ledger.answer(hostAnswer({ ...denial }));
    }
    // The same error unmarked: what a server behind the host wrote.
    const forged = audit.ledger({ agent: 'alice', server: 'hosted', era: 'legacy', route: 'passthrough' });
    forged.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'rm' } });
    forged.answer({ ...denial });
    const ledger = audit.ledger({ agent: 'alice', server: 'edge', era: 'legacy', route: 'passthrough' });
    ledger.request({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'rm' } });
    ledger.answer({ jsonrpc: '2.0', id: 2, error: { code: -32000, message: 'x', data: { reason: 'R'.repeat(100_000) } } });
    expect(lines.map((l) => [l.server, l.level, l.decision, l.reason])).toEqual([
      ['edge', 'info', 'allowed', 'denied-by-policy'],
      ['hosted', 'warn', 'denied-by-policy', 'denied-by-policy'],
      ['here', 'warn', 'denied-by-policy', 'denied-by-policy'],
      ['hosted', 'info', 'allowed', 'denied-by-policy'],
      ['edge', 'info', 'allowed', 'rpc-error'],
    ]);
    expect(recentCalls.list().map((c) => [c.server, c.decision, c.reason])).toEqual([
      ['edge', 'allowed', 'rpc-error'],
      ['hosted', 'allowed', 'denied-by-policy'],
      ['here', 'denied-by-policy', 'denied-by-policy'],
      ['hosted', 'denied-by-policy', 'denied-by-policy'],
    ]);
  });
});

describe('the worker\'s audit log (in process)', () => {
  it('records passthrough calls with their outcome and the agent\'s trace, and sends the trace to the host', async () => {
    const { lines, router, harness } = await start();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token', {}, { traceparent: TRACEPARENT });
    await client.callTool({ name: 'echo', arguments: { text: 'private words' } });
    await client.callTool({ name: 'fail', arguments: {} });
    await client.readResource({ uri: 'test://alpha/readme' });
    await client.getPrompt({ name: 'explode' }).catch(() => {});
    expect(router.opened[0]!.connection.traceparent).toBe(TRACEPARENT);
    expect(lines.map((l) => [l.level, l.method, l.tool ?? l.uri ?? l.prompt, l.decision, l.outcome, l.reason])).toEqual([
      ['info', 'tools/call', 'echo', 'allowed', 'ok', undefined],
      ['info', 'tools/call', 'fail', 'allowed', 'error', 'tool-error'],
      ['info', 'resources/read', 'test://alpha/readme', 'allowed', 'ok', undefined],
      // The test server's own error claims a policy denial: the worker's line says it passed the call on.
      ['info', 'prompts/get', 'explode', 'allowed', 'error', 'denied-by-policy'],
    ]);
    for (const line of lines) {
      expect(line).toMatchObject({ msg: 'audit', component: 'worker', agent: 'alice', server: 'alpha', host: 'laptop', era: 'legacy', route: 'passthrough', traceId: TRACE, parentSpanId: '00f067aa0ba902b7' });
      expect(typeof line.durationMs).toBe('number');
    }
    expect(JSON.stringify(lines)).not.toContain('private words');
  });

  it('refuses a request whose id is in flight in the session, so the server never runs it unrecorded, and audits both', async () => {
    const { lines, router, harness } = await start();
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    const post = (body: unknown) => harness.fetch(`${BASE}/servers/alpha/mcp`, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', authorization: 'Bearer alice-token', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify(body),
    });
    const call = (id: number, text: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
    const batch = await (await post([call(7, 'first'), call(7, 'second')])).text();
    expect(batch).toContain('"reason":"invalid-request"');
    expect(batch).toContain('"code":-32600');
    expect(batch).not.toContain('alpha: second');
    await until(() => lines.length === 2);
    // The id is free again once answered.
    expect(await (await post(call(7, 'third'))).text()).toContain('alpha: third');
    expect(lines.map((l) => [l.level, l.tool, l.decision, l.outcome, l.reason, l.session])).toEqual([
      ['warn', 'echo', 'refused', 'error', 'invalid-request', sessionId],
      ['info', 'echo', 'allowed', 'ok', undefined, sessionId],
      ['info', 'echo', 'allowed', 'ok', undefined, sessionId],
    ]);
    expect(router.opened).toHaveLength(1);
  });

  it('on /mcp too, records a request the session refused for an id in flight, under the server its name leads to', async () => {
    const { lines, harness } = await start();
    const client = await harness.client('/mcp', 'alice-token');
    await client.listTools();
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    const call = (id: number, text: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'alpha__echo', arguments: { text } } });
    const batch = await (await harness.fetch(`${BASE}/mcp`, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', authorization: 'Bearer alice-token', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify([call(9, 'first'), call(9, 'second')]),
    })).text();
    expect(batch).toContain('"code":-32600');
    await until(() => lines.filter((l) => l.event === 'call').length === 2);
    expect(lines.filter((l) => l.event === 'call').map((l) => [l.route, l.server, l.tool, l.decision, l.reason]).sort()).toEqual([
      ['aggregate', 'alpha', 'echo', 'allowed', undefined],
      ['aggregate', 'alpha', 'echo', 'refused', 'invalid-request'],
    ]);
  });

  it('keeps arguments only when the config says so', async () => {
    const { lines, harness } = await start({ includeArguments: true });
    const client = await harness.client('/servers/alpha/mcp', 'alice-token');
    await client.callTool({ name: 'echo', arguments: { text: 'kept' } });
    expect(lines[0]!.arguments).toEqual({ text: 'kept' });
  });

  it('records aggregate calls under the upstream\'s own names, and a refused unavailable server', async () => {
    const { lines, router, harness } = await start();
    router.failures.set('beta', new WireError('host-offline', 'Host "laptop" is offline'));
    const client = await harness.client('/mcp', 'alice-token');
    await client.callTool({ name: 'alpha__echo', arguments: { text: 'x' } });
    await client.callTool({ name: 'beta__unavailable', arguments: {} });
    const byEvent = (event: string) => lines.filter((l) => l.event === event);
    expect(byEvent('open')).toEqual([expect.objectContaining({ level: 'warn', agent: 'alice', server: 'beta', host: 'laptop', route: 'aggregate', method: 'initialize', decision: 'refused', reason: 'host-offline' })]);
    expect(byEvent('call').map((l) => [l.route, l.server, l.tool, l.decision, l.reason])).toEqual([
      ['aggregate', 'alpha', 'echo', 'allowed', undefined],
      ['aggregate', 'beta', 'unavailable', 'refused', 'host-offline'],
    ]);
    // The open a host refuses names its endpoint as the worker's own refusals do (review s25: it named none).
    router.failures.set('beta', new WireError('host-offline', 'Host "laptop" is offline'));
    await expect(harness.client('/servers/beta/mcp', 'alice-token')).rejects.toThrow();
    expect(byEvent('open').map((l) => [l.server, l.route, l.era, l.method, l.reason])).toEqual([['beta', 'aggregate', 'legacy', 'initialize', 'host-offline'], ['beta', 'passthrough', 'legacy', 'initialize', 'host-offline']]);
  });

  it('records a legacy /mcp call naming none of the agent\'s servers once, as refused on no server', async () => {
    const { lines, harness } = await start();
    const client = await harness.client('/mcp', 'bob-token', {}, { traceparent: TRACEPARENT });
    await client.listResources();
    await expect(client.callTool({ name: 'nosuch', arguments: {} })).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('Unknown tool'), data: { reason: 'server-not-found' } });
    await expect(client.callTool({ name: 'beta__echo', arguments: {} })).rejects.toThrow(/Unknown tool/);
    await expect(client.getPrompt({ name: 'beta__greet' })).rejects.toThrow(/Unknown prompt/);
    await client.close();
    const alice = await harness.client('/mcp', 'alice-token');
    await alice.listResources();
    await expect(alice.readResource({ uri: 'test://gamma/readme?key=k' })).rejects.toThrow(/Resource not found/);
    expect(lines.filter((l) => l.event === 'call').map((l) => [l.level, l.agent, l.server, l.host, l.route, l.era, l.method, l.tool ?? l.prompt ?? l.uri, l.decision, l.outcome, l.reason])).toEqual([
      ['warn', 'bob', null, null, 'aggregate', 'legacy', 'tools/call', 'nosuch', 'refused', 'error', 'server-not-found'],
      ['warn', 'bob', null, null, 'aggregate', 'legacy', 'tools/call', 'beta__echo', 'refused', 'error', 'server-not-found'],
      ['warn', 'bob', null, null, 'aggregate', 'legacy', 'prompts/get', 'beta__greet', 'refused', 'error', 'server-not-found'],
      ['warn', 'alice', null, null, 'aggregate', 'legacy', 'resources/read', 'test://gamma/readme?[redacted]', 'refused', 'error', 'server-not-found'],
    ]);
    expect(lines[0]!.traceId).toBe(TRACE);
  });

  it('records a server the agent may not use, and a wrong or missing token without the token', async () => {
    const { lines, harness } = await start();
    const refused = await harness.fetch('/servers/beta/mcp', { method: 'POST', headers: { authorization: 'Bearer bob-token', 'content-type': 'application/json' }, body: '{}' });
    expect(refused.status).toBe(404);
    expect(await harness.fetch('/mcp', { method: 'POST', headers: { authorization: 'Bearer not-a-real-token' } }).then((r) => r.status)).toBe(401);
    expect(await harness.fetch('/mcp', { method: 'POST' }).then((r) => r.status)).toBe(401);
    // Another scheme, or a token without one, is a credential refused too (review s25: they read as none).
    for (const authorization of ['Basic YWxpY2U6aHVudGVyMg==', 'alice-token', 'Token alice-token']) {
      expect(await harness.fetch('/mcp', { method: 'POST', headers: { authorization } }).then((r) => r.status)).toBe(401);
    }
    expect(lines.map((l) => [l.level, l.event, l.agent, l.server, l.decision, l.reason, l.fingerprint])).toEqual([
      ['warn', 'open', 'bob', 'beta', 'refused', 'server-not-found', undefined],
      ['warn', 'credential', null, null, 'refused', 'unauthorized', expect.stringMatching(/^sha256:[0-9a-f]{12}$/)],
      ['info', 'credential', null, null, 'refused', 'no-credential', 'none: no bearer token'],
      ...Array.from({ length: 3 }, () => ['warn', 'credential', null, null, 'refused', 'unauthorized', 'none: not a bearer token']),
    ]);
    for (const secret of ['not-a-real-token', 'YWxpY2U6aHVudGVyMg', 'alice-token']) expect(JSON.stringify(lines)).not.toContain(secret);
  });

  it('records a wrong token on /healthz as on the MCP endpoints, and nothing of a probe without one (review s22)', async () => {
    const { lines, harness } = await start();
    expect(await harness.fetch('/healthz').then((r) => r.status)).toBe(200);
    const guessed = await harness.fetch('/healthz', { headers: { authorization: 'Bearer not-a-real-token' } });
    expect(guessed.status).toBe(401);
    const alice = await harness.fetch('/healthz', { headers: { authorization: 'Bearer alice-token' } });
    expect([alice.status, alice.headers.get('cache-control'), alice.headers.get('vary')]).toEqual([200, 'no-store', 'Authorization']);
    expect(lines.map((l) => [l.level, l.event, l.route, l.reason, l.fingerprint])).toEqual([
      ['warn', 'credential', undefined, 'unauthorized', expect.stringMatching(/^sha256:[0-9a-f]{12}$/)],
    ]);
  });

  it('records refused modern (2026-07-28) requests with the tool they were for, under the agent\'s trace', async () => {
    const { lines, router, harness } = await start();
    router.failures.set('alpha', new WireError('trust-profile-stale', 'Trust profile changed'));
    const post = (server: string, token: string) => harness.fetch(`/servers/${server}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo', traceparent: TRACEPARENT },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'private' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
    expect((await post('alpha', 'alice-token')).status).toBe(409);
    expect((await post('beta', 'bob-token')).status).toBe(404);
    expect(router.opened).toEqual([]);
    expect(lines.map((l) => [l.level, l.event, l.era, l.agent, l.server, l.tool, l.decision, l.reason, l.traceId])).toEqual([
      ['warn', 'call', 'modern', 'alice', 'alpha', 'echo', 'refused', 'trust-profile-stale', TRACE],
      ['warn', 'call', 'modern', 'bob', 'beta', 'echo', 'refused', 'server-not-found', TRACE],
    ]);
    expect(JSON.stringify(lines)).not.toContain('private');
  });

  it('records modern /mcp calls naming none of the agent\'s servers once, a refused unavailable server, and each call\'s route', async () => {
    const { lines, router, harness } = await start();
    const post = (path: string, token: string, method: string, params: Record<string, unknown>) => harness.fetch(path, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method,
        ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : typeof params.uri === 'string' ? { 'mcp-name': params.uri } : {}), traceparent: TRACEPARENT,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    }).then((r) => r.json() as Promise<Record<string, any>>);
    expect((await post('/mcp', 'bob-token', 'tools/call', { name: 'nosuch', arguments: {} })).error.code).toBe(-32602);
    expect((await post('/mcp', 'bob-token', 'tools/call', { name: 'beta__echo', arguments: {} })).error.code).toBe(-32602);
    expect((await post('/mcp', 'bob-token', 'prompts/get', { name: 'beta__greet' })).error.code).toBe(-32602);
    expect((await post('/mcp', 'alice-token', 'resources/read', { uri: 'test://gamma/readme' })).error.code).toBe(-32602);
    expect((await post('/mcp', 'alice-token', 'tools/call', { name: 'alpha__echo', arguments: { text: 'x' } })).result.content).toEqual([{ type: 'text', text: 'alpha: x' }]);
    expect((await post('/servers/alpha/mcp', 'alice-token', 'tools/call', { name: 'echo', arguments: { text: 'x' } })).result.content).toEqual([{ type: 'text', text: 'alpha: x' }]);
    router.failures.set('beta', new WireError('host-offline', 'Host "laptop" is offline'));
    expect((await post('/mcp', 'alice-token', 'tools/call', { name: 'beta__unavailable', arguments: {} })).result.isError).toBe(true);
    expect(lines.filter((l) => l.event === 'call').map((l) => [l.level, l.agent, l.server, l.route, l.era, l.method, l.tool ?? l.prompt ?? l.uri, l.decision, l.outcome, l.reason])).toEqual([
      ['warn', 'bob', null, 'aggregate', 'modern', 'tools/call', 'nosuch', 'refused', 'error', 'server-not-found'],
      ['warn', 'bob', null, 'aggregate', 'modern', 'tools/call', 'beta__echo', 'refused', 'error', 'server-not-found'],
      ['warn', 'bob', null, 'aggregate', 'modern', 'prompts/get', 'beta__greet', 'refused', 'error', 'server-not-found'],
      ['warn', 'alice', null, 'aggregate', 'modern', 'resources/read', 'test://gamma/readme', 'refused', 'error', 'server-not-found'],
      ['info', 'alice', 'alpha', 'aggregate', 'modern', 'tools/call', 'echo', 'allowed', 'ok', undefined],
      ['info', 'alice', 'alpha', 'passthrough', 'modern', 'tools/call', 'echo', 'allowed', 'ok', undefined],
      ['warn', 'alice', 'beta', 'aggregate', 'modern', 'tools/call', 'unavailable', 'refused', 'error', 'host-offline'],
    ]);
    expect(lines.filter((l) => l.event === 'open').map((l) => [l.server, l.route, l.method, l.reason])).toEqual([['beta', 'aggregate', 'tools/list', 'host-offline']]);
    expect(lines[0]!.traceId).toBe(TRACE);
  });

  it('shows the recent calls on /healthz, bounded, an agent only its own, never arguments', async () => {
    const { harness, recentCalls } = await start();
    const alice = await harness.client('/servers/alpha/mcp', 'alice-token');
    for (let i = 0; i < 5; i++) await alice.callTool({ name: 'echo', arguments: { text: `secret-${i}` } });
    const bob = await harness.client('/servers/alpha/mcp', 'bob-token');
    await bob.callTool({ name: 'fail', arguments: {} });
    expect(recentCalls.size).toBe(4);
    const view = await harness.fetch('/healthz', { headers: { authorization: 'Bearer bob-token' } }).then((r) => r.json() as Promise<{ recentCalls: Array<Record<string, unknown>> }>);
    expect(view.recentCalls).toEqual([expect.objectContaining({ agent: 'bob', server: 'alpha', host: 'laptop', method: 'tools/call', name: 'fail', decision: 'allowed', outcome: 'error', reason: 'tool-error' })]);
    const all = recentCalls.list();
    expect(all.map((c) => c.agent)).toEqual(['bob', 'alice', 'alice', 'alice']);
    expect(JSON.stringify(all)).not.toContain('secret-');
  });
});
