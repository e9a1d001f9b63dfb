import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS, hostOriginGuard, isHostAllowed, isOriginAllowed } from './host-origin.ts';

describe('Host and Origin validation', () => {
  it('allows loopback hosts on any port by default', () => {
    for (const host of ['localhost', 'localhost:8787', '127.0.0.1:41234', '[::1]:8787', 'LOCALHOST:1']) {
      expect(isHostAllowed(host, DEFAULT_ALLOWED_HOSTS), host).toBe(true);
    }
  });

  it('refuses foreign, malformed and missing hosts', () => {
    for (const host of ['evil.example', 'localhost.evil.example', '127.0.0.1.nip.io:8787', 'localhost:80:80', '', null, undefined]) {
      expect(isHostAllowed(host, DEFAULT_ALLOWED_HOSTS), String(host)).toBe(false);
    }
  });

  it('pins the port when the pattern has one', () => {
    expect(isHostAllowed('switchyard.example.com:443', ['switchyard.example.com:443'])).toBe(true);
    expect(isHostAllowed('switchyard.example.com:8443', ['switchyard.example.com:443'])).toBe(false);
  });

  it('allows a missing Origin (non-browser clients) and loopback origins', () => {
    expect(isOriginAllowed(undefined, DEFAULT_ALLOWED_ORIGINS)).toBe(true);
    expect(isOriginAllowed('http://localhost:6274', DEFAULT_ALLOWED_ORIGINS)).toBe(true);
    expect(isOriginAllowed('https://127.0.0.1', DEFAULT_ALLOWED_ORIGINS)).toBe(true);
  });

  it('refuses foreign and opaque origins, and honours scheme and port in patterns', () => {
    expect(isOriginAllowed('https://evil.example', DEFAULT_ALLOWED_ORIGINS)).toBe(false);
    expect(isOriginAllowed('null', DEFAULT_ALLOWED_ORIGINS)).toBe(false);
    expect(isOriginAllowed('https://app.example.com', ['https://app.example.com'])).toBe(true);
    expect(isOriginAllowed('http://app.example.com', ['https://app.example.com'])).toBe(false);
    expect(isOriginAllowed('https://app.example.com:8443', ['https://app.example.com:443'])).toBe(false);
  });

  it('answers a foreign Host or Origin with 403 and reason invalid-request', async () => {
    const app = new Hono();
    app.use('*', hostOriginGuard({ allowedHosts: DEFAULT_ALLOWED_HOSTS, allowedOrigins: DEFAULT_ALLOWED_ORIGINS }));
    app.get('/', (c) => c.text('ok'));

    expect((await app.request('http://localhost:8787/')).status).toBe(200);
    const host = await app.request('http://localhost:8787/', { headers: { host: 'evil.example' } });
    expect(host.status).toBe(403);
    expect(await host.json()).toEqual({ error: { reason: 'invalid-request', message: 'Host "evil.example" is not allowed: add it to "allowed-hosts" in the worker config' } });
    const origin = await app.request('http://localhost:8787/', { headers: { origin: 'https://evil.example' } });
    expect(origin.status).toBe(403);
    expect(((await origin.json()) as { error: { message: string } }).error.message).toBe('Origin "https://evil.example" is not allowed: a page on another site may not call this worker; if it is this worker\'s own address or a page you trust, add it to "allowed-origins" in the worker config');
    // The Host last allowed is remembered, never a refused one.
    expect((await app.request('http://localhost:8787/')).status).toBe(200);
    expect((await app.request('http://localhost:8787/', { headers: { host: 'evil.example' } })).status).toBe(403);
    expect((await app.request('http://localhost:8787/', { headers: { host: 'evil.example' } })).status).toBe(403);
  });

  it('gives a page it allows CORS: a preflight answered before any handler, the answer readable, the MCP headers exposed (review s25)', async () => {
    const app = new Hono();
    app.use('*', hostOriginGuard({ allowedHosts: DEFAULT_ALLOWED_HOSTS, allowedOrigins: DEFAULT_ALLOWED_ORIGINS }));
    // Stands for the agent routes, whose authentication would refuse a preflight (it carries no credentials).
    app.all('/mcp', (c) => (c.req.header('authorization') === undefined ? c.text('no token', 401) : c.json({ ok: true }, 200, { 'mcp-session-id': 's1' })));
    const inspector = 'http://localhost:6274';
    const preflight = await app.request('http://localhost:8787/mcp', {
      method: 'OPTIONS',
      headers: { origin: inspector, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-protocol-version, mcp-param-city' },
    });
    expect([preflight.status, preflight.headers.get('access-control-allow-origin'), preflight.headers.get('access-control-allow-methods'), preflight.headers.get('access-control-allow-headers')])
      .toEqual([204, inspector, 'GET,POST,DELETE', 'authorization,content-type,mcp-protocol-version,mcp-param-city']);
    expect(preflight.headers.get('vary')).toBe('Origin, Access-Control-Request-Headers');
    const post = await app.request('http://localhost:8787/mcp', { method: 'POST', headers: { origin: inspector, authorization: 'Bearer t' } });
    expect([post.status, post.headers.get('access-control-allow-origin'), post.headers.get('access-control-expose-headers'), post.headers.get('mcp-session-id')])
      .toEqual([200, inspector, 'Mcp-Session-Id,Mcp-Protocol-Version,WWW-Authenticate,Retry-After', 's1']);
    expect(post.headers.get('vary')).toBe('Origin');
    // A non-browser client gets no CORS headers; a foreign page, no preflight.
    expect((await app.request('http://localhost:8787/mcp', { method: 'POST', headers: { authorization: 'Bearer t' } })).headers.get('access-control-allow-origin')).toBeNull();
    expect((await app.request('http://localhost:8787/mcp', { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })).status).toBe(403);
  });

  it('lets any page read the discovery documents, and nothing else (review s25: a foreign page got 403 on metadata that says "*")', async () => {
    const app = new Hono();
    app.use('*', hostOriginGuard({ allowedHosts: DEFAULT_ALLOWED_HOSTS, allowedOrigins: DEFAULT_ALLOWED_ORIGINS }));
    app.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json({ resource: 'http://localhost:8787/mcp' }));
    app.post('/oauth/token', (c) => c.json({}));
    const page = 'https://claude.ai';
    const metadata = await app.request('http://localhost:8787/.well-known/oauth-protected-resource/mcp', { headers: { origin: page, 'mcp-protocol-version': '2025-06-18' } });
    expect([metadata.status, metadata.headers.get('access-control-allow-origin')]).toEqual([200, page]);
    const preflight = await app.request('http://localhost:8787/.well-known/oauth-protected-resource/mcp', { method: 'OPTIONS', headers: { origin: page, 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' } });
    expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, page]);
    expect((await app.request('http://localhost:8787/oauth/token', { method: 'POST', headers: { origin: page } })).status).toBe(403);
    // The Host check holds there too: a rebinding page names its own host.
    expect((await app.request('http://localhost:8787/.well-known/oauth-protected-resource/mcp', { headers: { host: 'evil.example', origin: page } })).status).toBe(403);
  });

  it('parses its allow-lists once, when built, not per request', async () => {
    const allowedHosts = ['switchyard.example.com'];
    const app = new Hono();
    app.use('*', hostOriginGuard({ allowedHosts, allowedOrigins: [] }));
    app.get('/', (c) => c.text('ok'));
    allowedHosts.push('late.example.com');
    expect((await app.request('http://switchyard.example.com/')).status).toBe(200);
    expect((await app.request('http://late.example.com/')).status).toBe(403);
  });
});
