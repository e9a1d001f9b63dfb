import { afterEach, describe, expect, it } from 'vitest';
import { WireError } from '../shared/errors.ts';
import { ValidationError } from '../shared/validation.ts';
import { createTestMcpServer } from '../test/support/test-mcp-server.ts';
import { InProcessRouter } from '../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../test/support/in-process-app.ts';
import { createApp } from './app.ts';
import { sha256Hex } from './auth/agent-auth.ts';
import { parseWorkerConfig } from './config/worker-config.ts';
import { InMemorySessionTable } from './sessions/session-table.ts';

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const INIT = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

async function setup() {
  const router = new InProcessRouter({ alpha: createTestMcpServer });
  const onLaptop = { type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } };
  const config = await testConfig(
    [{ name: 'alice', servers: ['alpha'] }, { name: 'bob', servers: ['beta', 'docs'] }],
    { alpha: onLaptop, beta: onLaptop, docs: { type: 'http', url: 'http://127.0.0.1:9/mcp' } },
    { 'admin-token-sha256': await sha256Hex('admin-token') },
  );
  harness = startInProcessApp(config, router);
  return harness;
}

describe('worker app', () => {
  it('requires a bearer token on both agent endpoints', async () => {
    const h = await setup();
    for (const path of ['/mcp', '/servers/alpha/mcp']) {
      const none = await h.fetch(`${BASE}${path}`, { method: 'POST', headers: MCP_HEADERS, body: INIT });
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const wrong = await h.fetch(`${BASE}${path}`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer wrong' }, body: INIT });
      expect(wrong.status).toBe(401);
      expect(((await wrong.json()) as { error: { reason: string } }).error.reason).toBe('unauthorized');
    }
  });

  it('rejects a foreign Host or Origin before authentication', async () => {
    const h = await setup();
    const host = await h.fetch(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, host: 'evil.example', authorization: 'Bearer alice-token' }, body: INIT });
    expect(host.status).toBe(403);
    const origin = await h.fetch(`${BASE}/healthz`, { headers: { origin: 'https://evil.example' } });
    expect(origin.status).toBe(403);
    expect(((await origin.json()) as { error: { reason: string } }).error.reason).toBe('invalid-request');
  });

  it('accepts the Host and Origin of public-url without listing them in allowed-hosts', async () => {
    const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], { 'public-url': 'https://switchyard.me.workers.dev' });
    harness = startInProcessApp(config, new InProcessRouter({ alpha: createTestMcpServer }));
    const own = { ...MCP_HEADERS, host: 'switchyard.me.workers.dev', origin: 'https://switchyard.me.workers.dev', authorization: 'Bearer alice-token' };
    const initialize = await harness.fetch('https://switchyard.me.workers.dev/mcp', { method: 'POST', headers: own, body: INIT });
    expect(initialize.status).toBe(200);
    // Only that host: a foreign one is still refused.
    const foreign = await harness.fetch('https://evil.example/mcp', { method: 'POST', headers: { ...own, host: 'evil.example' }, body: INIT });
    expect(foreign.status).toBe(403);
  });

  it('answers /healthz minimally without a token, fully for the admin, and per agent for an agent', async () => {
    const h = await setup();
    expect(await (await h.fetch(`${BASE}/healthz`)).json()).toEqual({ ok: true });
    expect((await h.fetch(`${BASE}/healthz`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    // An app's OAuth access token is told where it belongs, where any other wrong token is told to check it.
    const oauthToken = await h.fetch(`${BASE}/healthz`, { headers: { authorization: `Bearer sya_${'a'.repeat(43)}` } });
    expect([oauthToken.status, ((await oauthToken.json()) as { error: { message: string } }).error.message]).toEqual([
      401,
      "An OAuth access token is for the MCP endpoints: sign in here with the agent's own token or the admin token",
    ]);

    await h.client('/mcp', 'alice-token');
    const admin = (await (await h.fetch(`${BASE}/healthz`, { headers: { authorization: 'Bearer admin-token' } })).json()) as Record<string, unknown>;
    expect(admin).toMatchObject({
      ok: true,
      hosts: [{ 'entity-id': 'laptop', linked: false, since: null, channels: 0, roundTripMs: null }],
      servers: [
        { name: 'alpha', binding: 'host:laptop', state: 'host-offline' },
        { name: 'beta', binding: 'host:laptop', state: 'host-offline' },
        { name: 'docs', binding: 'edge-direct', state: 'available' },
      ],
      sessions: 1,
    });

    const bob = (await (await h.fetch(`${BASE}/healthz`, { headers: { authorization: 'Bearer bob-token' } })).json()) as { servers: Array<{ name: string }>; sessions: number; hosts: unknown[] };
    expect(bob.servers.map((s) => s.name)).toEqual(['beta', 'docs']);
    expect(bob.sessions).toBe(0);
    // A host's channels are every agent's on it: an agent is not told how much others use it (review s22).
    expect(bob.hosts).toEqual([{ 'entity-id': 'laptop', linked: false, since: null, roundTripMs: null }]);
  });

  it('serves a status page and JSON for unknown paths', async () => {
    const h = await setup();
    const page = await h.fetch(`${BASE}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Switchyard worker');
    const missing = await h.fetch(`${BASE}/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { reason: string } }).error.reason).toBe('invalid-request');
  });

  it('maps WireError and ValidationError to JSON bodies and hides unknown errors', async () => {
    const config = parseWorkerConfig({ agents: [], servers: {} }, { runtime: 'edge' });
    const sessions = new InMemorySessionTable({ idleMs: 1000 });
    const app = createApp({ config, router: new InProcessRouter({}), sessions });
    app.get('/wire', () => {
      throw new WireError('host-offline', 'Host "x" is offline');
    });
    app.get('/validation', () => {
      throw new ValidationError('thing', [{ path: 'a', message: 'is wrong' }]);
    });
    app.get('/boom', () => {
      throw new Error('secret internals /home/alice/.ssh');
    });
    const wire = await app.request('http://localhost/wire');
    expect(wire.status).toBe(503);
    expect(await wire.json()).toEqual({ error: { reason: 'host-offline', message: 'Host "x" is offline' } });
    const validation = await app.request('http://localhost/validation');
    expect(validation.status).toBe(400);
    expect(await validation.json()).toEqual({ error: { reason: 'invalid-request', message: 'Invalid thing: a: is wrong', issues: [{ path: 'a', message: 'is wrong' }] } });
    const boom = await app.request('http://localhost/boom');
    expect(boom.status).toBe(500);
    expect(await boom.text()).not.toContain('secret');
    sessions.dispose();
  });
});
