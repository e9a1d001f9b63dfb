/**
 * The built-in authorization server and the resource side, in process (`app.request`, no
 * socket): discovery, the MCP SDK client's own OAuth flow (`auth()`), consent over HTTP, tokens
 * used on both agent endpoints, refresh rotation and reuse detection, revocation, and each refusal
 * the issue lists, with its error code and message.
 */
import { auth, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { BASE, testConfig } from '../../../test/support/in-process-app.ts';
import { InProcessRouter } from '../../../test/support/in-process-router.ts';
import { consentOverHttp, hiddenField, MemoryOAuthProvider } from '../../../test/support/oauth.ts';
import { createTestMcpServer } from '../../../test/support/test-mcp-server.ts';
import { createApp } from '../../app.ts';
import { sha256Hex } from '../agent-auth.ts';
import { InMemorySessionTable } from '../../sessions/session-table.ts';
import { decodeBase64Url, encodeBase64Url as base64url } from '../../../shared/base64url.ts';
import { sha256 } from '../../../shared/credentials.ts';
import { ServerKey } from './server-key.ts';
import { FileOAuthStore } from './store/file-oauth-store.ts';
import { REFRESH_REUSE_GRACE_MS } from './grants.ts';

const decodeHex = (hex: string) => Uint8Array.from(hex.match(/../g)!, (byte) => parseInt(byte, 16));

const REDIRECT = 'http://127.0.0.1:33418/callback';
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** `store` and `tokens`: a worker restarted over the same OAuth state, with the admin's or alice's token changed in its config; `builtIn`: its `oauth.built-in` section. */
async function setup(options: { metadataFetch?: (url: string, init: RequestInit) => Promise<Response>; now?: () => number; publicUrl?: string; store?: FileOAuthStore; tokens?: { admin?: string; alice?: string }; builtIn?: Record<string, unknown>; keys?: string[] } = {}) {
  const router = new InProcessRouter({ alpha: createTestMcpServer, beta: createTestMcpServer });
  const configured = await testConfig([{ name: 'alice', servers: ['alpha'] }, { name: 'bob', servers: ['beta'] }], ['alpha', 'beta'], {
    'admin-token-sha256': await sha256Hex(options.tokens?.admin ?? 'admin-token'),
    oauth: { 'built-in': options.builtIn ?? {} },
    ...(options.publicUrl !== undefined ? { 'public-url': options.publicUrl } : {}),
  });
  const aliceSha = await sha256Hex(options.tokens?.alice ?? 'alice-token');
  const config = { ...configured, agents: configured.agents.map((a) => (a.name === 'alice' ? { ...a, 'token-sha256': aliceSha } : a)) };
  const sessions = new InMemorySessionTable({ idleMs: 60_000 });
  const store = options.store ?? FileOAuthStore.inMemory(options.now ? { now: options.now } : {});
  const app = createApp({ config, router, sessions, retryAfterMs: 0, oauth: { store, ...(options.now ? { now: options.now } : {}), ...(options.metadataFetch ? { metadataDocuments: { fetch: options.metadataFetch } } : {}), ...(options.keys ? { keys: options.keys } : {}) } });
  const fetchFn = async (url: string | URL, init?: RequestInit) => app.request(String(url), init);
  cleanups.push(async () => {
    await sessions.closeAll();
    sessions.dispose();
  });
  return { app, fetchFn, store };
}

/** Runs the SDK client's flow to the end: discovery, registration, consent, code exchange. */
async function login(fetchFn: (url: string | URL, init?: RequestInit) => Promise<Response>, path: string, token: string, agent?: string, options: { grantTypes?: string[] } = {}) {
  let location: URL | null = null;
  const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
    ({ location } = await consentOverHttp(fetchFn, url, token, agent !== undefined ? { agent } : {}));
  }, options);
  expect(await auth(provider, { serverUrl: `${BASE}${path}`, fetchFn })).toBe('REDIRECT');
  const back = location as URL | null;
  expect(back, 'the consent redirected back').not.toBeNull();
  expect(back!.searchParams.get('iss')).toBe(BASE);
  expect(back!.searchParams.get('state')).toBe('test-state-123');
  const code = back!.searchParams.get('code')!;
  expect(await auth(provider, { serverUrl: `${BASE}${path}`, fetchFn, authorizationCode: code })).toBe('AUTHORIZED');
  return { provider, code, tokens: provider.savedTokens! };
}

async function mcpClient(fetchFn: (url: string | URL, init?: RequestInit) => Promise<Response>, path: string, accessToken: string) {
  const transport = new StreamableHTTPClientTransport(new URL(path, BASE), { fetch: fetchFn, requestInit: { headers: { authorization: `Bearer ${accessToken}` } } });
  const client = new Client({ name: 'oauth-test', version: '1' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return client;
}

const post = (fetchFn: (url: string, init?: RequestInit) => Promise<Response>, path: string, fields: Record<string, string>) =>
  fetchFn(`${BASE}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

describe('discovery', () => {
  it('answers a 401 on every agent route with resource_metadata and scope, and serves both metadata documents', async () => {
    const { fetchFn } = await setup();
    for (const path of ['/mcp', '/servers/alpha/mcp']) {
      const res = await fetchFn(`${BASE}${path}`, { method: 'POST', headers: MCP_HEADERS, body: INIT });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource${path}", scope="mcp"`);
      const prm = (await (await fetchFn(`${BASE}/.well-known/oauth-protected-resource${path}`)).json()) as Record<string, unknown>;
      expect(prm).toMatchObject({ resource: `${BASE}${path}`, authorization_servers: [BASE], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
    }
    expect(await (await fetchFn(`${BASE}/.well-known/oauth-protected-resource`)).json()).toMatchObject({ resource: BASE });
    const as = (await (await fetchFn(`${BASE}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      revocation_endpoint: `${BASE}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
  });

  it('says why a presented token was refused in the body and the challenge', async () => {
    const { fetchFn } = await setup();
    const res = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer sya_nope' }, body: INIT });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_token", error_description="the token is expired, revoked or unknown"/);
    expect(((await res.json()) as { error: { reason: string } }).error.reason).toBe('unauthorized');
  });
});

describe('the SDK client flow', () => {
  it('registers, signs in with an agent token, gets tokens and calls a tool as that agent; static tokens still work', async () => {
    const { fetchFn } = await setup();
    const { tokens } = await login(fetchFn, '/mcp', 'alice-token');
    expect(tokens.access_token).toMatch(/^sya_/);
    expect(tokens.refresh_token).toMatch(/^syr_/);
    expect(tokens.expires_in).toBe(3600);
    const client = await mcpClient(fetchFn, '/mcp', tokens.access_token);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('alpha__echo');
    expect(tools.some((t) => t.startsWith('beta__'))).toBe(false);
    expect(await client.callTool({ name: 'alpha__echo', arguments: { text: 'hi' } })).toMatchObject({ content: [{ type: 'text', text: 'alpha: hi' }] });
    const staticClient = await mcpClient(fetchFn, '/servers/alpha/mcp', 'alice-token');
    expect((await staticClient.listTools()).tools.map((t) => t.name)).toContain('echo');
  });

  it('lets the admin approve a client for any agent, which then acts as that agent only', async () => {
    const { fetchFn } = await setup();
    const { tokens } = await login(fetchFn, '/mcp', 'admin-token', 'bob');
    const client = await mcpClient(fetchFn, '/mcp', tokens.access_token);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('beta__echo');
    expect(tools.some((t) => t.startsWith('alpha__'))).toBe(false);
  });

  it('refuses an agent approving a client for another agent', async () => {
    const { fetchFn } = await setup();
    const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
      const { response } = await consentOverHttp(fetchFn, url, 'alice-token', { agent: 'bob' });
      expect(response.status).toBe(403);
      expect(await response.text()).toContain('You may not approve this app for agent &#34;bob&#34;');
    });
    expect(await auth(provider, { serverUrl: `${BASE}/mcp`, fetchFn })).toBe('REDIRECT');
  });

  it('refreshes with rotation, and a reused refresh token revokes the whole grant', async () => {
    let clock = Date.now();
    const { fetchFn } = await setup({ now: () => clock });
    const { provider, tokens } = await login(fetchFn, '/mcp', 'alice-token');
    const asMeta = { issuer: BASE, authorization_endpoint: `${BASE}/oauth/authorize`, token_endpoint: `${BASE}/oauth/token`, response_types_supported: ['code'] };
    // A refresh may not add to the scope granted (RFC 6749 §6), and is told so before its token is used up (review s25).
    const widened = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id, scope: 'mcp admin' });
    expect([widened.status, await widened.json()]).toEqual([400, { error: 'invalid_scope', error_description: 'The scope "admin" was not granted ("mcp"): refresh without scope, or sign in again for more' }]);
    expect((await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id, scope: 'mcp' })).status).toBe(200);
    const refreshed = await refreshAuthorization(BASE, { metadata: asMeta, clientInformation: provider.clientInfo!, refreshToken: tokens.refresh_token!, resource: new URL(`${BASE}/mcp`), fetchFn });
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await (await mcpClient(fetchFn, '/mcp', refreshed.access_token)).listTools()).tools.length).toBeGreaterThan(0);

    // Past the grace a client's own requests refreshing together get.
    clock += REFRESH_REUSE_GRACE_MS + 1;
    const reuse = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id });
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toEqual({ error: 'invalid_grant', error_description: 'The refresh token was already used: the grant is revoked (sign in again)' });
    const after = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${refreshed.access_token}` }, body: INIT });
    expect(after.status).toBe(401);
  });

  it('refreshes every one of a client\'s requests that refresh with the same token at once, and revokes on a reuse past the grace', async () => {
    let clock = Date.now();
    const { fetchFn } = await setup({ now: () => clock });
    const { provider, tokens } = await login(fetchFn, '/mcp', 'alice-token');
    const refresh = async (token: string) => {
      const res = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: provider.clientInfo!.client_id });
      return { status: res.status, body: (await res.json()) as { access_token?: string; refresh_token?: string; error_description?: string } };
    };
    // The MCP SDK's client refreshes from each request that met a 401 (its GET stream and a POST), with the one token it holds.
    const together = await Promise.all([refresh(tokens.refresh_token!), refresh(tokens.refresh_token!), refresh(tokens.refresh_token!)]);
    expect(together.map((r) => r.status)).toEqual([200, 200, 200]);
    clock += 5_000;
    const late = await refresh(tokens.refresh_token!);
    expect(late.status).toBe(200);
    // One next refresh token for all of them: whoever else held the token would share the client's chain, not start a second.
    expect(new Set([...together, late].map((r) => r.body.refresh_token)).size).toBe(1);
    for (const { body } of [...together, late]) expect((await (await mcpClient(fetchFn, '/mcp', body.access_token!)).listTools()).tools.length).toBeGreaterThan(0);

    clock += REFRESH_REUSE_GRACE_MS;
    expect(await refresh(tokens.refresh_token!)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'The refresh token was already used: the grant is revoked (sign in again)' } });
    const after = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${late.body.access_token}` }, body: INIT });
    expect(after.status).toBe(401);
    expect((await refresh(late.body.refresh_token!)).status).toBe(400);
  });

  it('issues no refresh token to a client that registered only the authorization_code grant, and refuses it the refresh_token grant (RFC 7591 §2)', async () => {
    const { fetchFn } = await setup();
    const { provider, tokens } = await login(fetchFn, '/mcp', 'alice-token', undefined, { grantTypes: ['authorization_code'] });
    expect((provider.clientInfo as { grant_types?: string[] }).grant_types).toEqual(['authorization_code']);
    expect([tokens.access_token, 'refresh_token' in tokens]).toEqual([expect.stringMatching(/^sya_/), false]);
    const client = await mcpClient(fetchFn, '/mcp', tokens.access_token);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('alpha__echo');
    const refresh = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'syr_anything', client_id: provider.clientInfo!.client_id });
    expect([refresh.status, await refresh.json()]).toEqual([400, { error: 'unauthorized_client', error_description: expect.stringMatching(/^This client did not register the refresh_token grant: /) }]);
    // A client of both grants, registered the same way, still gets and uses one.
    const both = await login(fetchFn, '/mcp', 'alice-token');
    expect(both.tokens.refresh_token).toMatch(/^syr_/);
  });

  it('ends the access tokens of a client sealed under a key that was dropped, at once, as its refresh and sign-in (review s25: they worked out their hour)', async () => {
    const [oldKey, newKey] = [base64url(crypto.getRandomValues(new Uint8Array(32))), base64url(crypto.getRandomValues(new Uint8Array(32)))];
    const first = await setup({ keys: [oldKey] });
    const { tokens } = await login(first.fetchFn, '/mcp', 'alice-token');
    const call = (fetchFn: typeof first.fetchFn) => fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${tokens.access_token}` }, body: INIT });
    // Rotating keeps the client while its key is listed; dropping the key ends what it holds.
    expect((await call((await setup({ store: first.store, keys: [newKey, oldKey] })).fetchFn)).status).toBe(200);
    const dropped = await call((await setup({ store: first.store, keys: [newKey] })).fetchFn);
    expect(dropped.status).toBe(401);
    expect(dropped.headers.get('www-authenticate')).toContain('error_description="the app it was issued to is sealed under a key this worker no longer holds: sign in again"');
  });

  it('ends what a token approved once that token is changed in the config: a leaked token, rotated, leaves no OAuth access behind', async () => {
    const first = await setup();
    const byAlice = await login(first.fetchFn, '/mcp', 'alice-token');
    const byAdmin = await login(first.fetchFn, '/mcp', 'admin-token', 'bob');
    const call = (fetchFn: typeof first.fetchFn, token: string) => fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: INIT });
    const refresh = (fetchFn: typeof first.fetchFn, login: typeof byAlice) =>
      post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: login.tokens.refresh_token!, client_id: login.provider.clientInfo!.client_id });
    // The same config, restarted: both grants hold.
    const same = await setup({ store: first.store });
    expect((await call(same.fetchFn, byAlice.tokens.access_token)).status).toBe(200);
    expect((await call(same.fetchFn, byAdmin.tokens.access_token)).status).toBe(200);
    // Alice's token rotated: what she approved ends (access and refresh); the admin's approval for bob holds.
    const rotated = await setup({ store: first.store, tokens: { alice: 'alice-token-2' } });
    const refused = await call(rotated.fetchFn, byAlice.tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error_description="the agent token or admin token that approved this app was changed or removed since: sign in again"');
    expect(await (await refresh(rotated.fetchFn, byAlice)).json()).toEqual({ error: 'invalid_grant', error_description: 'The agent token or admin token that approved this app was changed or removed since: sign in again' });
    expect((await call(rotated.fetchFn, byAdmin.tokens.access_token)).status).toBe(200);
    // The admin token rotated: what the admin approved ends too.
    const adminRotated = await setup({ store: first.store, tokens: { admin: 'admin-token-2' } });
    expect((await call(adminRotated.fetchFn, byAdmin.tokens.access_token)).status).toBe(401);
    expect((await refresh(adminRotated.fetchFn, byAdmin)).status).toBe(400);
    // Ended for good: the old tokens back in the config bring neither grant back.
    const restored = await setup({ store: first.store });
    expect((await refresh(restored.fetchFn, byAlice)).status).toBe(400);
    expect((await refresh(restored.fetchFn, byAdmin)).status).toBe(400);
  });

  it('revocation ends access at once', async () => {
    const { fetchFn } = await setup();
    const { provider, tokens } = await login(fetchFn, '/servers/alpha/mcp', 'alice-token');
    const ok = await fetchFn(`${BASE}/servers/alpha/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${tokens.access_token}` }, body: INIT });
    expect(ok.status).toBe(200);
    const revoked = await post(fetchFn, '/oauth/revoke', { token: tokens.access_token, client_id: provider.clientInfo!.client_id });
    expect(revoked.status).toBe(200);
    const after = await fetchFn(`${BASE}/servers/alpha/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${tokens.access_token}` }, body: INIT });
    expect(after.status).toBe(401);
    const refresh = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id });
    expect(((await refresh.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('revocation ends the sessions its grant opened on both endpoints, GET stream included, and no session opened otherwise', async () => {
    const { fetchFn } = await setup();
    // Approved for the whole worker (its base URL), so one token opens both endpoints.
    const { provider, tokens } = await login(fetchFn, '', 'alice-token');
    const passthrough = await openSession(fetchFn, '/servers/alpha/mcp', tokens.access_token);
    const aggregate = await openSession(fetchFn, '/mcp', tokens.access_token);
    const byStaticToken = await openSession(fetchFn, '/servers/alpha/mcp', 'alice-token');
    const stream = await fetchFn(`${BASE}/servers/alpha/mcp`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${tokens.access_token}`, 'mcp-session-id': passthrough, 'mcp-protocol-version': '2025-06-18' } });
    expect(stream.status).toBe(200);
    // Before: the agent's other credential reaches the session too (a session is its agent's).
    expect((await ping(fetchFn, '/servers/alpha/mcp', passthrough, 'alice-token')).status).toBe(200);

    expect((await post(fetchFn, '/oauth/revoke', { token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id })).status).toBe(200);
    for (const [path, session] of [['/servers/alpha/mcp', passthrough], ['/mcp', aggregate]] as const) {
      const ended = await ping(fetchFn, path, session, 'alice-token');
      expect([ended.status, ((await ended.json()) as { error: unknown }).error]).toEqual([404, {
        code: -32600,
        message: 'Session ended: its OAuth grant was revoked by the app; initialize a new session',
        data: { reason: 'invalid-request', endedBecause: 'grant-revoked' },
      }]);
    }
    // The stream the revoked grant opened has ended.
    await stream.text();
    expect((await ping(fetchFn, '/servers/alpha/mcp', byStaticToken, 'alice-token')).status).toBe(200);
  });

  it('a reused refresh token ends the sessions of its grant, opened with any of its access tokens', async () => {
    let clock = Date.now();
    const { fetchFn } = await setup({ now: () => clock });
    const { provider, tokens } = await login(fetchFn, '/mcp', 'alice-token');
    const first = await openSession(fetchFn, '/mcp', tokens.access_token);
    const refreshed = (await (await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id })).json()) as { access_token: string };
    const second = await openSession(fetchFn, '/mcp', refreshed.access_token);
    // A refreshed token of the same grant carries on the session the first one opened.
    expect((await ping(fetchFn, '/mcp', first, refreshed.access_token)).status).toBe(200);
    clock += REFRESH_REUSE_GRACE_MS + 1;
    expect((await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: provider.clientInfo!.client_id })).status).toBe(400);
    for (const session of [first, second]) {
      const ended = await ping(fetchFn, '/mcp', session, 'alice-token');
      expect([ended.status, ((await ended.json()) as { error: { data: unknown } }).error.data]).toEqual([404, { reason: 'invalid-request', endedBecause: 'grant-revoked' }]);
    }
  });
});

/** Opens a legacy session on `path` with `token` (its `initialize` and `initialized`); its id. */
async function openSession(fetchFn: (url: string | URL, init?: RequestInit) => Promise<Response>, path: string, token: string): Promise<string> {
  const opened = await fetchFn(`${BASE}${path}`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: INIT });
  expect(opened.status).toBe(200);
  await opened.text();
  const session = opened.headers.get('mcp-session-id')!;
  const initialized = await fetchFn(`${BASE}${path}`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  expect(initialized.status).toBe(202);
  return session;
}

const ping = (fetchFn: (url: string | URL, init?: RequestInit) => Promise<Response>, path: string, session: string, token: string) =>
  fetchFn(`${BASE}${path}`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });

/** A registered public client and an approved code for it, ready to be exchanged by hand. */
async function approvedCode(fetchFn: (url: string | URL, init?: RequestInit) => Promise<Response>, resource = `${BASE}/mcp`, sendRedirectUri = true) {
  const reg = await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Hand client', token_endpoint_auth_method: 'none' }) });
  expect(reg.status).toBe(201);
  const { client_id } = (await reg.json()) as { client_id: string };
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const url = new URL(`${BASE}/oauth/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 's1', resource })) url.searchParams.set(k, v);
  if (!sendRedirectUri) url.searchParams.delete('redirect_uri');
  const { location } = await consentOverHttp(fetchFn, url, 'alice-token');
  return { clientId: client_id, verifier, code: location!.searchParams.get('code')!, url };
}

describe('refusals', () => {
  it('refuses a wrong PKCE verifier, which uses the code up, and tells the right one sent next that no token came of it (QA s30)', async () => {
    const { fetchFn } = await setup();
    const { clientId, code, verifier } = await approvedCode(fetchFn);
    const res = await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: 'x'.repeat(43) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_grant', error_description: 'PKCE verification failed: the code_verifier does not match the code_challenge' });
    const retried = await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(await retried.json()).toEqual({ error: 'invalid_grant', error_description: 'The authorization code was used up by a request with a wrong code_verifier, and no token was issued from it: sign in again' });
  });

  it('keeps the code through a request that is merely wrong (client, redirect URI, resource), so the right one still redeems it', async () => {
    const { fetchFn } = await setup();
    const { clientId, code, verifier } = await approvedCode(fetchFn);
    const fields = { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier };
    const other = (await (await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) })).json()) as { client_id: string };
    expect(await (await post(fetchFn, '/oauth/token', { ...fields, client_id: other.client_id })).json()).toMatchObject({ error: 'invalid_grant', error_description: 'The authorization code was issued to another client' });
    expect(await (await post(fetchFn, '/oauth/token', { ...fields, redirect_uri: `${REDIRECT}/` })).json()).toMatchObject({ error: 'invalid_grant' });
    expect(await (await post(fetchFn, '/oauth/token', { ...fields, resource: `${BASE}/servers/alpha/mcp` })).json()).toMatchObject({ error: 'invalid_target' });
    expect(await (await post(fetchFn, '/oauth/token', { ...fields, redirect_uri: '' })).json()).toMatchObject({ error: 'invalid_grant' });
    // A verifier no challenge could come from, or none, is a malformed request (review s25: it used the code up and revoked the grant).
    const malformed = 'invalid_request: Malformed code_verifier: RFC 7636 wants 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_" and "~"';
    for (const codeVerifier of ['abc', 'x'.repeat(129), `${'x'.repeat(42)}!`]) {
      const refused = (await (await post(fetchFn, '/oauth/token', { ...fields, code_verifier: codeVerifier })).json()) as { error: string; error_description: string };
      expect(`${refused.error}: ${refused.error_description}`).toBe(malformed);
    }
    expect(await (await post(fetchFn, '/oauth/token', { ...fields, code_verifier: '' })).json()).toMatchObject({ error: 'invalid_request', error_description: 'Missing code_verifier: PKCE is required' });
    expect(await (await post(fetchFn, '/oauth/token', { ...fields, code: '' })).json()).toMatchObject({ error: 'invalid_request', error_description: 'Missing code' });
    expect((await post(fetchFn, '/oauth/token', fields)).status).toBe(200);
  });

  it('redeems without redirect_uri a code whose authorization request had none, and asks for it when it had one (RFC 6749 §4.1.3)', async () => {
    const { fetchFn } = await setup();
    const without = await approvedCode(fetchFn, `${BASE}/mcp`, false);
    expect((await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code: without.code, client_id: without.clientId, code_verifier: without.verifier })).status).toBe(200);
    const withIt = await approvedCode(fetchFn);
    const fields = { grant_type: 'authorization_code', code: withIt.code, client_id: withIt.clientId, code_verifier: withIt.verifier };
    expect(await (await post(fetchFn, '/oauth/token', fields)).json()).toEqual({ error: 'invalid_request', error_description: 'Missing redirect_uri: the authorization request sent one, and this request must repeat it' });
    expect((await post(fetchFn, '/oauth/token', { ...fields, redirect_uri: REDIRECT })).status).toBe(200);
  });

  it('refuses a replayed code and revokes what the first redemption issued', async () => {
    const { fetchFn } = await setup();
    const { clientId, code, verifier } = await approvedCode(fetchFn);
    const fields = { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier };
    const first = await post(fetchFn, '/oauth/token', fields);
    expect(first.status).toBe(200);
    const { access_token } = (await first.json()) as { access_token: string };
    const replay = await post(fetchFn, '/oauth/token', fields);
    expect(await replay.json()).toEqual({ error: 'invalid_grant', error_description: 'The authorization code was already used: every token issued from it is revoked' });
    const use = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${access_token}` }, body: INIT });
    expect(use.status).toBe(401);
  });

  it('revokes what a code issued when it is redeemed twice at once, as a replay after the first does', async () => {
    const { fetchFn } = await setup();
    const { clientId, code, verifier } = await approvedCode(fetchFn);
    const fields = { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier };
    const answers = await Promise.all([1, 2, 3, 4].map(async () => {
      const res = await post(fetchFn, '/oauth/token', fields);
      return { status: res.status, body: (await res.json()) as { access_token?: string; error?: string } };
    }));
    // At most one redemption gets tokens (often none: the grant is gone before it issues), and none of them work.
    expect(answers.filter((a) => a.status !== 200).map((a) => a.body.error)).toEqual(Array(answers.filter((a) => a.status !== 200).length).fill('invalid_grant'));
    expect(answers.filter((a) => a.status === 200).length).toBeLessThanOrEqual(1);
    for (const { body } of answers.filter((a) => a.body.access_token !== undefined)) {
      const use = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${body.access_token}` }, body: INIT });
      expect(use.status).toBe(401);
    }
  });

  it('refuses a foreign redirect URI on a page, without redirecting to it', async () => {
    const { fetchFn } = await setup();
    const { url } = await approvedCode(fetchFn);
    url.searchParams.set('redirect_uri', 'https://evil.example/callback');
    const res = await fetchFn(url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    const html = await res.text();
    expect(html).toContain('invalid_request');
    expect(html).toContain('is not registered for this client: nothing was sent to it');
    url.searchParams.set('redirect_uri', `${REDIRECT}/`);
    expect((await fetchFn(url, { redirect: 'manual' })).status).toBe(400);
  });

  it('refuses a redirect_uri or client_id sent twice on a page, though one of them is registered (review s19, RFC 6749 §3.1)', async () => {
    const { fetchFn } = await setup();
    const { url } = await approvedCode(fetchFn);
    for (const name of ['redirect_uri', 'client_id']) {
      const twice = new URL(url);
      twice.searchParams.append(name, name === 'redirect_uri' ? 'https://evil.example/callback' : 'another');
      const res = await fetchFn(twice, { redirect: 'manual' });
      expect([res.status, res.headers.get('location')]).toEqual([400, null]);
      expect(await res.text()).toContain(`Parameter ${name} was sent more than once: nothing was sent to any redirect_uri`);
    }
  });

  it('redirects to no client before a person acts: a bad request from a client anyone may register shows its error on a page (no open redirector)', async () => {
    const { fetchFn } = await setup();
    const registered = (await (await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['https://phish.example/login'], token_endpoint_auth_method: 'none' }) })).json()) as { client_id: string };
    const challenge = base64url(new Uint8Array(32));
    for (const [query, code] of [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ response_type: 'code' }, 'invalid_request'],
      [{ response_type: 'code', code_challenge: challenge, code_challenge_method: 'plain' }, 'invalid_request'],
      [{ response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', resource: 'https://other.example/' }, 'invalid_target'],
    ] as const) {
      const url = new URL(`${BASE}/oauth/authorize`);
      for (const [name, value] of Object.entries({ client_id: registered.client_id, state: 'x', ...query })) url.searchParams.set(name, value);
      const res = await fetchFn(url, { redirect: 'manual' });
      expect([code, res.status, res.headers.get('location')]).toEqual([code, 400, null]);
      expect(await res.text()).toContain(code);
    }
  });

  it('takes a native app\'s loopback redirect on the port it listens on this time, though it registered none (RFC 8252 §7.3)', async () => {
    const { fetchFn } = await setup();
    const registered = (await (await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none' }) })).json()) as { client_id: string };
    const ask = (redirectUri: string) => {
      const url = new URL(`${BASE}/oauth/authorize`);
      const query = { client_id: registered.client_id, redirect_uri: redirectUri, response_type: 'code', code_challenge: base64url(new Uint8Array(32)), code_challenge_method: 'S256' };
      for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
      return fetchFn(url, { redirect: 'manual' });
    };
    expect((await ask('http://127.0.0.1:50123/callback')).status).toBe(200);
    expect(await (await ask('http://127.0.0.1:50123/other')).text()).toContain('is not registered for this client');
  });

  it('refuses a token for another resource: at the authorization server, and on another endpoint', async () => {
    const { fetchFn } = await setup();
    const { url } = await approvedCode(fetchFn);
    url.searchParams.set('resource', 'https://other.example/mcp');
    const res = await fetchFn(url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('invalid_target');

    const { clientId, code, verifier } = await approvedCode(fetchFn, `${BASE}/servers/alpha/mcp`);
    const tokens = (await (await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier })).json()) as { access_token: string };
    const here = await fetchFn(`${BASE}/servers/alpha/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${tokens.access_token}` }, body: INIT });
    expect(here.status).toBe(200);
    const elsewhere = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${tokens.access_token}` }, body: INIT });
    expect(elsewhere.status).toBe(401);
    expect(((await elsewhere.json()) as { error: { message: string } }).error.message).toBe(`Invalid bearer token: the token was issued for another resource ("${BASE}/servers/alpha/mcp")`);
  });

  it('treats a resource naming a server the config does not have as any other until someone signs in, then approves it for nobody: a stranger learns no server names', async () => {
    const { fetchFn } = await setup();
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    // Before sign-in, and in the metadata, an unknown server reads as a known one (the MCP routes answer 401 for both too).
    expect((await fetchFn(authorizeUrl(client_id, { resource: `${BASE}/servers/nope/mcp` }))).status).toBe(200);
    for (const name of ['nope', 'beta']) expect((await fetchFn(`${BASE}/.well-known/oauth-protected-resource/servers/${name}/mcp`)).status).toBe(200);
    // An agent is told what it would be told of a server it may not use; the admin, who sees the config, that no agent may.
    const alice = await consentOverHttp(fetchFn, authorizeUrl(client_id, { resource: `${BASE}/servers/nope/mcp` }), 'alice-token');
    expect([alice.response.status, alice.location]).toEqual([403, null]);
    expect(await pageError(alice.response)).toBe(`access_denied: Agent "alice" may not use server "nope", which this app asked for (${BASE}/servers/nope/mcp): approve it for an agent whose servers include "nope", or have the app ask for ${BASE}/mcp`);
    const admin = await consentOverHttp(fetchFn, authorizeUrl(client_id, { resource: `${BASE}/servers/nope/mcp` }), 'admin-token');
    expect(await pageError(admin.response)).toBe(`access_denied: No agent of this worker may use server "nope", which this app asked for (${BASE}/servers/nope/mcp): approve it for an agent whose servers include "nope", or have the app ask for ${BASE}/mcp`);
  });

  it('approves a server\'s endpoint only for an agent that may use that server: offers no other, and refuses one at sign-in and at approval, with no code', async () => {
    const { fetchFn } = await setup();
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    const url = authorizeUrl(client_id, { resource: `${BASE}/servers/alpha/mcp`, state: 's1' });
    const bob = await consentOverHttp(fetchFn, url, 'bob-token');
    expect([bob.response.status, bob.location]).toEqual([403, null]);
    expect(await pageError(bob.response)).toBe(`access_denied: Agent "bob" may not use server "alpha", which this app asked for (${BASE}/servers/alpha/mcp): approve it for an agent whose servers include "alpha", or have the app ask for ${BASE}/mcp`);

    // The admin is offered alice only; a form sent for bob anyway is refused and stays answerable.
    const page = await fetchFn(url);
    const html = await page.text();
    const csrf = hiddenField(html, 'csrf');
    const send = (fields: Record<string, string>) => fetchFn(`${BASE}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.headers.get('set-cookie')!.split(';')[0]!, origin: BASE },
      body: new URLSearchParams({ csrf, ...fields }).toString(),
    });
    const approve = await (await send({ consent: hiddenField(html, 'consent'), step: 'sign-in', token: 'admin-token' })).text();
    expect([...approve.matchAll(/<option value="([^"]+)"/g)].map((m) => m[1])).toEqual(['alice']);
    const forBob = await send({ consent: hiddenField(approve, 'consent'), step: 'approve', agent: 'bob' });
    expect([forBob.status, forBob.headers.get('location')]).toEqual([403, null]);
    expect(await pageError(forBob)).toMatch(/^access_denied: Agent "bob" may not use server "alpha"/);
    const forAlice = await send({ consent: hiddenField(approve, 'consent'), step: 'approve', agent: 'alice' });
    expect(new URL(forAlice.headers.get('location')!).searchParams.get('code')).toMatch(/.+/);
  });

  it('refuses a Client ID Metadata Document URL pointing at loopback without fetching it', async () => {
    const fetched: string[] = [];
    const { fetchFn } = await setup({ metadataFetch: async (url) => (fetched.push(url), new Response('{}')) });
    for (const clientId of ['https://127.0.0.1/client.json', 'https://localhost/client.json', 'https://[::1]/c.json', 'http://app.example.com/client.json']) {
      const url = new URL(`${BASE}/oauth/authorize`);
      url.searchParams.set('client_id', clientId);
      url.searchParams.set('redirect_uri', REDIRECT);
      const res = await fetchFn(url, { redirect: 'manual' });
      expect(res.status, clientId).toBe(400);
      expect(await res.text()).toMatch(/invalid_client<\/code>: <span id="error-message">Client metadata document refused: /);
    }
    expect(fetched).toEqual([]);
  });

  it('accepts a client by its metadata document and refuses one whose client_id differs', async () => {
    const docUrl = 'https://app.example.com/oauth/client.json';
    const doc = { client_id: docUrl, client_name: 'Example app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };
    const { fetchFn } = await setup({
      metadataFetch: async (url) => Response.json(url === docUrl ? doc : { ...doc, client_id: docUrl }, { headers: { 'cache-control': 'max-age=600' } }),
    });
    let location: URL | null = null;
    const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
      ({ location } = await consentOverHttp(fetchFn, url, 'alice-token'));
    }, { clientMetadataUrl: docUrl });
    expect(await auth(provider, { serverUrl: `${BASE}/mcp`, fetchFn })).toBe('REDIRECT');
    expect(provider.clientInfo!.client_id).toBe(docUrl);
    const code = (location as URL | null)!.searchParams.get('code')!;
    expect(await auth(provider, { serverUrl: `${BASE}/mcp`, fetchFn, authorizationCode: code })).toBe('AUTHORIZED');

    const other = new URL(`${BASE}/oauth/authorize`);
    other.searchParams.set('client_id', 'https://app.example.com/other.json');
    other.searchParams.set('redirect_uri', REDIRECT);
    expect(await (await fetchFn(other)).text()).toContain('names client_id');
  });

  it('keeps an approved metadata-document client signing in and refreshing whatever junk a stranger sends under its host, and while its host is down', async () => {
    const docUrl = 'https://app.example.com/oauth/client.json';
    const doc = { client_id: docUrl, client_name: 'Example app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };
    let hostUp = true;
    const metadataFetch = async (url: string) => (hostUp && url === docUrl ? Response.json(doc) : new Response('not found', { status: 404 }));
    const first = await setup({ metadataFetch });
    let location: URL | null = null;
    const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
      ({ location } = await consentOverHttp(first.fetchFn, url, 'alice-token'));
    }, { clientMetadataUrl: docUrl });
    expect(await auth(provider, { serverUrl: `${BASE}/mcp`, fetchFn: first.fetchFn })).toBe('REDIRECT');
    expect(await auth(provider, { serverUrl: `${BASE}/mcp`, fetchFn: first.fetchFn, authorizationCode: (location as URL | null)!.searchParams.get('code')! })).toBe('AUTHORIZED');

    // Restarted (nothing cached), a stranger spends app.example.com's failed-fetch budget with junk.
    const { fetchFn } = await setup({ metadataFetch, store: first.store });
    const ask = (clientId: string) => fetchFn(authorizeUrl(clientId), { redirect: 'manual' });
    for (let i = 0; i < 10; i++) await (await ask(`https://app.example.com/junk-${i}`)).body?.cancel();
    expect(await pageError(await ask('https://app.example.com/junk-10'))).toMatch(/^temporarily_unavailable: Too many client metadata documents from "app.example.com" failed/);
    expect((await ask(docUrl)).status).toBe(200);
    // The token endpoint takes the client by its URL: refresh works with its host down.
    hostUp = false;
    const refreshed = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: provider.savedTokens!.refresh_token!, client_id: docUrl });
    expect([refreshed.status, Object.keys((await refreshed.json()) as object)]).toEqual([200, ['access_token', 'token_type', 'expires_in', 'refresh_token', 'scope']]);
  });

  it('refuses a forged consent post: wrong CSRF value, foreign Origin', async () => {
    const { fetchFn } = await setup();
    const { url } = await approvedCode(fetchFn);
    const page = await fetchFn(url);
    const html = await page.text();
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    const consent = /name="consent" value="([^"]+)"/.exec(html)![1]!;
    const send = (headers: Record<string, string>, csrf: string) =>
      fetchFn(`${BASE}/oauth/authorize`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams({ consent, csrf, step: 'sign-in', token: 'alice-token' }).toString() });
    expect((await send({ cookie }, 'forged')).status).toBe(403);
    const real = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
    expect((await send({}, real)).status).toBe(403);
    expect((await send({ cookie, origin: 'http://localhost:9999' }, real)).status).toBe(403);
    expect((await send({ cookie, origin: BASE }, real)).status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
  });
});

describe('hostile bodies', () => {
  it('refuses an oversized token or registration body while it streams in', async () => {
    const { fetchFn } = await setup();
    const big = 'x'.repeat(20_000);
    const token = await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code: big });
    expect(token.status).toBe(413);
    expect(await token.json()).toEqual({ error: 'invalid_request', error_description: 'The body is larger than 16384 bytes' });
    const reg = await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: big }) });
    expect(reg.status).toBe(413);
  });

  it('answers malformed Basic client credentials with 401 invalid_client, saying what is wrong', async () => {
    const { fetchFn } = await setup();
    for (const [credentials, problem] of [
      ['%zz:secret', 'Malformed Basic credentials: bad percent-encoding'],
      ['no-colon', 'Malformed Basic credentials: no ":" between client id and secret'],
    ] as const) {
      for (const path of ['/oauth/token', '/oauth/revoke']) {
        const res = await fetchFn(`${BASE}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(credentials)}` },
          body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', token: 'x' }).toString(),
        });
        expect([path, res.status, await res.json()]).toEqual([path, 401, { error: 'invalid_client', error_description: problem }]);
      }
    }
  });

  it('refuses a registration with a redirect URI that is neither https nor loopback, naming it', async () => {
    const { fetchFn } = await setup();
    const reg = await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://evil.example/cb'] }) });
    expect(reg.status).toBe(400);
    expect(await reg.json()).toEqual({ error: 'invalid_redirect_uri', error_description: 'redirect_uris.0: "http://evil.example/cb" is http: on a host other than loopback: use https' });
  });
});

/** A state file in memory, counting its writes (what `FileOAuthStore` persists on every change). */
function memoryStateFile(initial: string | null = null) {
  const file = { text: initial, writes: 0, read: async () => file.text, write: async (text: string) => void ((file.writes += 1), (file.text = text)) };
  return file;
}

const register = (fetchFn: (url: string | URL, init?: RequestInit) => Promise<Response>, metadata: Record<string, unknown> = { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) =>
  fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) });

function authorizeUrl(clientId: string, extra: Record<string, string> = {}): URL {
  const url = new URL(`${BASE}/oauth/authorize`);
  for (const [k, v] of Object.entries({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', code_challenge: base64url(new Uint8Array(32)), code_challenge_method: 'S256', ...extra })) url.searchParams.set(k, v);
  return url;
}

/** The message of a consent error page: `code: message`. */
async function pageError(res: Response): Promise<string> {
  const html = await res.text();
  const m = /<code id="error-code">([^<]+)<\/code>: <span id="error-message">([^<]*)<\/span>/.exec(html);
  return m === null ? html.slice(0, 200) : `${m[1]}: ${m[2]!.replace(/&#34;/g, '"').replace(/&#39;/g, "'")}`;
}

describe('what strangers can do', () => {
  it('registers a client and opens its sign-in page without writing anything to the state', async () => {
    const file = memoryStateFile();
    const store = await FileOAuthStore.open(file);
    const { fetchFn } = await setup({ store });
    // The first request that needs the server key makes it: the one write a stranger can cause, once.
    const first = (await (await register(fetchFn)).json()) as { client_id: string };
    expect(file.writes).toBe(1);
    expect(Object.keys((JSON.parse(file.text!) as { records: object }).records)).toEqual(['key:hmac-sha256']);
    const before = file.text;
    expect((await register(fetchFn, { redirect_uris: [REDIRECT], client_name: 'Confidential' })).status).toBe(201);
    expect((await fetchFn(authorizeUrl(first.client_id))).status).toBe(200);
    expect([file.writes, file.text]).toEqual([1, before]);
  });

  it('leaves a legitimate sign-in working after a stranger registered 1000 clients and opened 1000 sign-in pages', async () => {
    const file = memoryStateFile();
    const { fetchFn } = await setup({ store: await FileOAuthStore.open(file) });
    const statuses = new Set<number>();
    for (let i = 0; i < 1000; i++) {
      const reg = await register(fetchFn, { redirect_uris: [`https://stranger.example/${i}`], client_name: `Junk ${i}`, token_endpoint_auth_method: 'none' });
      statuses.add(reg.status);
      const { client_id } = (await reg.json()) as { client_id: string };
      const page = await fetchFn(authorizeUrl(client_id, { redirect_uri: `https://stranger.example/${i}` }));
      statuses.add(page.status);
      await page.body?.cancel();
    }
    expect([...statuses]).toEqual([201, 200]);
    expect(file.writes).toBe(1);
    const { tokens } = await login(fetchFn, '/mcp', 'alice-token');
    expect(tokens.access_token).toMatch(/^sya_/);
  });

  it('refuses a client_id that was altered, with invalid_client saying so, at the consent page and the token endpoint', async () => {
    const { fetchFn } = await setup();
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    const payload = client_id.split('.')[1]!;
    const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload.replace(/-/g, '+').replace(/_/g, '/')), (ch) => ch.charCodeAt(0)))) as { r: string[] };
    claims.r = ['https://evil.example/cb'];
    const forged = client_id.replace(payload, base64url(new TextEncoder().encode(JSON.stringify(claims))));
    const message = 'Invalid client_id: it was altered, or not issued by this server (or under a key it no longer holds): register the client again';
    for (const clientId of [forged, `${client_id.slice(0, -1)}${client_id.endsWith('A') ? 'B' : 'A'}`, `${client_id}.x`]) {
      expect(await pageError(await fetchFn(authorizeUrl(clientId, { redirect_uri: 'https://evil.example/cb' })))).toBe(`invalid_client: ${message}`);
      const token = await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code: 'x', client_id: clientId, code_verifier: 'x'.repeat(43) });
      expect([token.status, await token.json()]).toEqual([401, { error: 'invalid_client', error_description: message }]);
    }
  });

  it('refuses a sign-in form that was altered or has expired, and takes one answer per form, with invalid_request saying why', async () => {
    let now = Date.now();
    const { fetchFn } = await setup({ now: () => now });
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    const page = await fetchFn(authorizeUrl(client_id, { state: 's' }));
    const html = await page.text();
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    const consent = hiddenField(html, 'consent');
    const csrf = hiddenField(html, 'csrf');
    const send = (fields: Record<string, string>) =>
      fetchFn(`${BASE}/oauth/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: BASE }, body: new URLSearchParams({ csrf, ...fields }).toString() });
    const [body, mac] = consent.split('.') as [string, string];
    const altered = `${body.slice(0, 10)}${body[10] === 'A' ? 'B' : 'A'}${body.slice(11)}.${mac}`;
    expect(await pageError(await send({ consent: altered, step: 'sign-in', token: 'alice-token' }))).toBe('invalid_request: This authorization form is not valid on this server (it was changed, or made before an update): start again from the app');
    expect(await pageError(await send({ consent, step: 'approve', agent: 'alice' }))).toBe('access_denied: Sign in first');
    const signedIn = await send({ consent, step: 'sign-in', token: 'alice-token' });
    const approval = hiddenField(await signedIn.text(), 'consent');
    // A choice the signed-in agent may not make is refused without using the form up.
    expect(await pageError(await send({ consent: approval, step: 'approve', agent: 'bob' }))).toBe('access_denied: You may not approve this app for agent "bob"');
    const approved = await send({ consent: approval, step: 'approve', agent: 'alice' });
    expect(approved.status).toBe(303);
    expect(new URL(approved.headers.get('location')!).searchParams.get('code')).toMatch(/^syc_/);
    expect(await pageError(await send({ consent: approval, step: 'approve', agent: 'alice' }))).toBe('invalid_request: This authorization form was already used, or its sign-in has expired: start again from the app');
    now += 10 * 60_000;
    expect(await pageError(await send({ consent, step: 'sign-in', token: 'alice-token' }))).toBe('invalid_request: This authorization form has expired: start again from the app');
  });

  it('approves only after a token sign-in: a copy of the OAuth state (its key, grants, sign-in records) forges no approval', async () => {
    const file = memoryStateFile();
    const { fetchFn } = await setup({ store: await FileOAuthStore.open(file) });
    // The admin approved an app once (its token's trace is in a grant), and alice is signed in on a form she has not answered yet.
    const { client_id: app } = (await (await register(fetchFn)).json()) as { client_id: string };
    expect((await consentOverHttp(fetchFn, authorizeUrl(app), 'admin-token', { agent: 'alice' })).location?.searchParams.get('code')).toMatch(/^syc_/);
    const { client_id: pending } = (await (await register(fetchFn)).json()) as { client_id: string };
    const alicePage = await fetchFn(authorizeUrl(pending));
    const aliceHtml = await alicePage.text();
    const aliceSignIn = await fetchFn(`${BASE}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alicePage.headers.get('set-cookie')!.split(';')[0]!, origin: BASE },
      body: new URLSearchParams({ consent: hiddenField(aliceHtml, 'consent'), csrf: hiddenField(aliceHtml, 'csrf'), step: 'sign-in', token: 'alice-token' }).toString(),
    });
    expect(aliceSignIn.status).toBe(200);

    // A stranger with a copy of the state file: the key and every record, but no token.
    const records = (JSON.parse(file.text!) as { records: Record<string, { value: Record<string, unknown> }> }).records;
    const copy = FileOAuthStore.inMemory();
    await copy.put('key', 'hmac-sha256', records['key:hmac-sha256']!.value as never, null);
    const stolenKey = new ServerKey(copy);
    const hashes = Object.entries(records).flatMap(([id, r]) => (id.startsWith('grant:') ? [r.value['approverTokenSha256'] as string] : []));
    const signInIds = Object.keys(records).flatMap((id) => (id.startsWith('consent:') ? [id.slice('consent:'.length)] : []));
    expect(signInIds).toHaveLength(1);

    const { client_id: mine } = (await (await register(fetchFn)).json()) as { client_id: string };
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const page = await fetchFn(authorizeUrl(mine, { code_challenge: base64url(await sha256(verifier)) }));
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    const html = await page.text();
    const payload = JSON.parse(new TextDecoder().decode(decodeBase64Url(hiddenField(html, 'consent').split('.')[0]!))) as { n: string };
    const notValid = 'invalid_request: This authorization form is not valid on this server (it was changed, or made before an update): start again from the app';
    const noSignIn = 'invalid_request: This authorization form was already used, or its sign-in has expired: start again from the app';
    const forgeries: Array<[unknown, string]> = [
      // "Signed in as the admin" by the MAC of the admin's token hash (what a form used to carry): no such form any more.
      [{ ...payload, a: { g: null, h: await stolenKey.mac('approver', `${payload.n}:${hashes[0]}`) } }, notValid],
      [{ ...payload, a: { g: null, h: await stolenKey.mac('approver', hashes[0]!) } }, notValid],
      // The id of alice's pending sign-in record, as the state names it: a form that reaches the
      // sign-in lookup, and finds none, since the state keeps only the hash of the id.
      [{ ...payload, a: { s: signInIds[0]!.slice(0, 43) } }, noSignIn],
      [{ ...payload, a: { s: base64url(decodeHex(signInIds[0]!)).slice(0, 43) } }, noSignIn],
    ];
    for (const [forged, refusal] of forgeries) {
      const answer = await fetchFn(`${BASE}/oauth/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: BASE },
        body: new URLSearchParams({ consent: await stolenKey.seal('consent', forged), csrf: hiddenField(html, 'csrf'), step: 'approve', agent: 'bob' }).toString(),
      });
      expect([answer.status, answer.headers.get('location')]).toEqual([400, null]);
      expect(await pageError(answer)).toBe(refusal);
    }
  });

  it('refuses an approval once the token signed in with was changed in the config, the sign-in being the server\'s record', async () => {
    const store = FileOAuthStore.inMemory();
    const before = await setup({ store });
    const { client_id } = (await (await register(before.fetchFn)).json()) as { client_id: string };
    const page = await before.fetchFn(authorizeUrl(client_id));
    const html = await page.text();
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    const send = (fetchFn: typeof before.fetchFn, fields: Record<string, string>) =>
      fetchFn(`${BASE}/oauth/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: BASE }, body: new URLSearchParams({ csrf: hiddenField(html, 'csrf'), ...fields }).toString() });
    const approval = hiddenField(await (await send(before.fetchFn, { consent: hiddenField(html, 'consent'), step: 'sign-in', token: 'alice-token' })).text(), 'consent');
    const rotated = await setup({ store, tokens: { alice: 'alice-token-2' } });
    expect(await pageError(await send(rotated.fetchFn, { consent: approval, step: 'approve', agent: 'alice' }))).toBe('access_denied: The token you signed in with was changed or removed since: sign in again');
  });

  it('ends a sign-in form after five wrong tokens, as before', async () => {
    const { fetchFn } = await setup();
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    const page = await fetchFn(authorizeUrl(client_id));
    const html = await page.text();
    const fields = { consent: hiddenField(html, 'consent'), csrf: hiddenField(html, 'csrf'), step: 'sign-in' };
    const send = (token: string) =>
      fetchFn(`${BASE}/oauth/authorize`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.headers.get('set-cookie')!.split(';')[0]!, origin: BASE }, body: new URLSearchParams({ ...fields, token }).toString() });
    for (let i = 0; i < 4; i++) expect((await send('wrong')).status).toBe(401);
    expect(await pageError(await send('wrong'))).toBe('access_denied: Too many wrong tokens (5): start again from the app');
    expect(await pageError(await send('alice-token'))).toBe('access_denied: Too many wrong tokens (5): start again from the app');
  });

  it('says what was too long in a registration: the redirect URIs, one of them, or the name', async () => {
    const { fetchFn } = await setup();
    const long = `https://app.example/${'a'.repeat(600)}`;
    for (const [metadata, error] of [
      [{ redirect_uris: Array.from({ length: 9 }, (_, i) => `https://app.example/${i}`) }, { error: 'invalid_redirect_uri', error_description: 'redirect_uris: at most 8 redirect URIs' }],
      [{ redirect_uris: [REDIRECT, long] }, { error: 'invalid_redirect_uri', error_description: `redirect_uris.1: too long: ${long.length} bytes once encoded, at most 512` }],
      [{ redirect_uris: Array.from({ length: 3 }, (_, i) => `https://app.example/${i}${'b'.repeat(400)}`) }, { error: 'invalid_redirect_uri', error_description: 'redirect_uris: too long together: 1263 bytes once encoded, at most 1024: register fewer or shorter redirect URIs' }],
      [{ redirect_uris: [REDIRECT], client_name: 'n'.repeat(101) }, { error: 'invalid_client_metadata', error_description: 'client_name: too long: at most 100 characters' }],
      // Counted in encoded bytes, so the field named is the one that is too long.
      [{ redirect_uris: [`https://app.example/${'\u00e9'.repeat(490)}`, `https://app.example/${'\u00fc'.repeat(490)}`] }, { error: 'invalid_redirect_uri', error_description: 'redirect_uris.0: too long: 1000 bytes once encoded, at most 512' }],
      [{ redirect_uris: [REDIRECT], client_name: '\u0001'.repeat(51) }, { error: 'invalid_client_metadata', error_description: 'client_name: too long once encoded: at most 300 bytes (a control character counts 6, a non-ASCII one 2 to 4)' }],
    ] as const) {
      const res = await register(fetchFn, metadata);
      expect([res.status, await res.json()]).toEqual([400, error]);
    }
    const longest = await register(fetchFn, { redirect_uris: Array.from({ length: 8 }, (_, i) => `https://app.example/${i}${'c'.repeat(105)}`), client_name: '\u00e9'.repeat(100) });
    expect(longest.status).toBe(201);
    expect(((await longest.json()) as { client_id: string }).client_id.length).toBeLessThanOrEqual(2048);
  });

  it('refuses a state longer than 2048 characters on the page, since the request travels in the form', async () => {
    const { fetchFn } = await setup();
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    expect(await pageError(await fetchFn(authorizeUrl(client_id, { state: 's'.repeat(2049) })))).toBe('invalid_request: The state is longer than 2048 characters');
  });

  it('refuses a state that is not printable ASCII when the page opens, not after the person typed a token, and carries the largest legal request through', async () => {
    const { fetchFn } = await setup();
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    for (const state of ['\u0001'.repeat(2048), 'caf\u00e9', 'a\nb']) {
      const res = await fetchFn(authorizeUrl(client_id, { state }), { redirect: 'manual' });
      expect([res.status, await pageError(res)]).toEqual([400, 'invalid_request: The state may hold only printable ASCII characters (RFC 6749 Appendix A.5)']);
    }
    // The longest registered redirect URI and a state JSON escapes all of: sign-in and approval still fit the form's POST.
    const longRedirect = `https://app.example/${'r'.repeat(492)}`;
    const long = ((await (await register(fetchFn, { redirect_uris: [longRedirect], client_name: '\u0001'.repeat(50), token_endpoint_auth_method: 'none' })).json()) as { client_id: string }).client_id;
    const { location } = await consentOverHttp(fetchFn, authorizeUrl(long, { redirect_uri: longRedirect, state: '"\\'.repeat(1024) }), 'alice-token');
    expect(location?.searchParams.get('state')).toBe('"\\'.repeat(1024));
  });

  it('answers an oversized consent POST with the error page, not JSON', async () => {
    const { fetchFn } = await setup();
    const res = await post(fetchFn, '/oauth/authorize', { consent: 'x'.repeat(20_000) });
    expect([res.status, res.headers.get('content-type'), await pageError(res)]).toEqual([413, 'text/html; charset=utf-8', 'invalid_request: The body is larger than 16384 bytes: start again from the app']);
  });
});

describe('registered clients', () => {
  it('authenticates a confidential client by the secret derived from its client_id, with Basic or in the body, and refuses another secret', async () => {
    const { fetchFn } = await setup();
    const reg = (await (await register(fetchFn, { redirect_uris: [REDIRECT], client_name: 'Confidential app', token_endpoint_auth_method: 'client_secret_post' })).json()) as { client_id: string; client_secret: string };
    expect(reg.client_secret).toMatch(/^sycs_[A-Za-z0-9_-]{43}$/);
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    const { location } = await consentOverHttp(fetchFn, authorizeUrl(reg.client_id, { code_challenge: challenge }), 'alice-token');
    const fields = { grant_type: 'authorization_code', code: location!.searchParams.get('code')!, client_id: reg.client_id, redirect_uri: REDIRECT, code_verifier: verifier };
    const wrong = await post(fetchFn, '/oauth/token', { ...fields, client_secret: `sycs_${'A'.repeat(43)}` });
    expect([wrong.status, await wrong.json()]).toEqual([401, { error: 'invalid_client', error_description: 'Invalid client secret' }]);
    expect(await (await post(fetchFn, '/oauth/token', fields)).json()).toEqual({ error: 'invalid_client', error_description: 'Missing client secret (client_secret_post)' });
    const ok = await post(fetchFn, '/oauth/token', { ...fields, client_secret: reg.client_secret });
    expect(ok.status).toBe(200);
  });

  it('keeps a client registered as a record before client ids were sealed working: sign-in, tokens with its secret, refresh', async () => {
    const store = FileOAuthStore.inMemory();
    const clientId = 'sy-client-abcdefghijklmnopqrstuvwxyz0123';
    const secret = 'sycs_an-old-secret-of-a-client-registered-before';
    await store.put('client', clientId, { clientId, clientName: 'Old app', redirectUris: [REDIRECT], authMethod: 'client_secret_post', secretSha256: await sha256Hex(secret), source: 'registration' }, Date.now() + 86_400_000);
    const { fetchFn } = await setup({ store });
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    const page = await fetchFn(authorizeUrl(clientId, { code_challenge: challenge }));
    expect(await page.text()).toContain('Old app');
    const { location } = await consentOverHttp(fetchFn, authorizeUrl(clientId, { code_challenge: challenge }), 'alice-token');
    const fields = { grant_type: 'authorization_code', code: location!.searchParams.get('code')!, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier };
    expect((await post(fetchFn, '/oauth/token', { ...fields, client_secret: 'sycs_wrong' })).status).toBe(401);
    const tokens = (await (await post(fetchFn, '/oauth/token', { ...fields, client_secret: secret })).json()) as { refresh_token: string };
    const refreshed = await post(fetchFn, '/oauth/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId, client_secret: secret });
    expect(refreshed.status).toBe(200);
  });

  it("shows a registered client's sealed id by the characters that tell it apart (its MAC's end) on the sign-in page, beside its name", async () => {
    const { fetchFn } = await setup();
    const ids = await Promise.all(['Sealed app', 'Sealed app'].map(async (client_name) => ((await (await register(fetchFn, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name })).json()) as { client_id: string }).client_id));
    const shown = await Promise.all(ids.map(async (clientId) => /<dt>Client ID<\/dt><dd><code>([^<]*)<\/code>/.exec(await (await fetchFn(authorizeUrl(clientId))).text())?.[1]));
    // Two clients registered alike start alike: what the page shows of them differs.
    expect(ids[0]!.slice(0, 32)).toBe(ids[1]!.slice(0, 32));
    expect(shown).toEqual(ids.map((id) => `sy-client.\u2026${id.slice(-16)}`));
  });

  it('refuses a client that never got a token a day after it registered, and keeps one that did', async () => {
    let now = Date.now();
    const { fetchFn } = await setup({ now: () => now });
    const idle = ((await (await register(fetchFn)).json()) as { client_id: string }).client_id;
    const { clientId: active, code, verifier } = await approvedCode(fetchFn);
    expect((await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code, client_id: active, redirect_uri: REDIRECT, code_verifier: verifier })).status).toBe(200);
    now += 3_600_001;
    const ask = (clientId: string) => fetchFn(`${BASE}/oauth/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(REDIRECT)}`);
    // An hour on, both are still known: their requests go on to the next check (they sent no response_type).
    expect(await pageError(await ask(idle))).toBe('unsupported_response_type: Only response_type=code is supported');
    now += 23 * 3_600_000;
    expect(await pageError(await ask(idle))).toBe('invalid_client: Client registration expired: it got no token within 24 hours of registering: remove this server from the app and add it again, so that the app registers again');
    // The token endpoint waits as long again as a form and a code live: a sign-in begun in time may end there.
    now += 11 * 60_000;
    const token = await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code: 'x', client_id: idle, code_verifier: 'x'.repeat(43) });
    expect([token.status, ((await token.json()) as { error: string }).error]).toEqual([401, 'invalid_client']);
    expect(await pageError(await ask(active))).toBe('unsupported_response_type: Only response_type=code is supported');
  });
});

describe('a registered client near the end of its unused lifetime', () => {
  it('redeems a code approved on a form opened just before its 24 hours ran out', async () => {
    let now = Date.now();
    const { fetchFn } = await setup({ now: () => now });
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
    now += 24 * 3_600_000 - 60_000;
    const page = await fetchFn(authorizeUrl(client_id, { code_challenge: base64url(await sha256(verifier)) }));
    const html = await page.text();
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    const send = (fields: Record<string, string>) =>
      fetchFn(`${BASE}/oauth/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: BASE }, body: new URLSearchParams({ csrf: hiddenField(html, 'csrf'), ...fields }).toString() });
    const approval = hiddenField(await (await send({ consent: hiddenField(html, 'consent'), step: 'sign-in', token: 'alice-token' })).text(), 'consent');
    now += 8 * 60_000;
    const approved = await send({ consent: approval, step: 'approve', agent: 'alice' });
    expect(approved.status).toBe(303);
    now += 50_000;
    const code = new URL(approved.headers.get('location')!).searchParams.get('code')!;
    const tokens = await post(fetchFn, '/oauth/token', { grant_type: 'authorization_code', code, client_id, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(tokens.status).toBe(200);
  });
});

describe('behind a proxy (public-url)', () => {
  it('names the public URL as issuer and resource, and lets its origin post the consent form', async () => {
    const PUBLIC = 'https://yard.example.com';
    const { fetchFn } = await setup({ publicUrl: PUBLIC });
    const res = await fetchFn(`${BASE}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: INIT });
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource/mcp", scope="mcp"`);
    expect(await (await fetchFn(`${BASE}/.well-known/oauth-authorization-server`)).json()).toMatchObject({ issuer: PUBLIC, token_endpoint: `${PUBLIC}/oauth/token` });
    const reg = await fetchFn(`${BASE}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
    const { client_id } = (await reg.json()) as { client_id: string };
    const url = new URL(`${BASE}/oauth/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: 'a'.repeat(43), code_challenge_method: 'S256', resource: `${PUBLIC}/mcp` })) url.searchParams.set(k, v);
    const page = await fetchFn(url);
    const html = await page.text();
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    const fields = { consent: /name="consent" value="([^"]+)"/.exec(html)![1]!, csrf: /name="csrf" value="([^"]+)"/.exec(html)![1]!, step: 'sign-in', token: 'alice-token' };
    const signedIn = await fetchFn(`${BASE}/oauth/authorize`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: PUBLIC }, body: new URLSearchParams(fields).toString() });
    expect(signedIn.status).toBe(200);
    expect(await signedIn.text()).toContain('Signed in as agent alice');
  });

  it('sets the CSRF cookie Secure and __Secure- behind an https public URL, though the request came in over http, and reads it back by that name', async () => {
    const PUBLIC = 'https://yard.example.com';
    const { fetchFn } = await setup({ publicUrl: PUBLIC });
    const { client_id } = (await (await register(fetchFn)).json()) as { client_id: string };
    const page = await fetchFn(authorizeUrl(client_id, { resource: `${PUBLIC}/mcp` }));
    const setCookie = page.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^__Secure-sy_oauth_csrf=[A-Za-z0-9_-]{43}; Path=\/oauth; HttpOnly; SameSite=Strict; Max-Age=600; Secure$/);
    const html = await page.text();
    const signIn = (cookie: string) => fetchFn(`${BASE}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: PUBLIC },
      body: new URLSearchParams({ consent: hiddenField(html, 'consent'), csrf: hiddenField(html, 'csrf'), step: 'sign-in', token: 'alice-token' }).toString(),
    });
    const value = setCookie.split(';')[0]!.split('=')[1]!;
    // The unprefixed name is what anyone on plain http could set: it does not count here.
    expect((await signIn(`sy_oauth_csrf=${value}`)).status).toBe(403);
    expect((await signIn(`__Secure-sy_oauth_csrf=${value}`)).status).toBe(200);
  });
});

describe('dynamic client registration off', () => {
  it('answers a registration with 404 invalid_request saying it is off and what to do instead, and advertises no registration endpoint', async () => {
    const { fetchFn } = await setup({ builtIn: { 'dynamic-client-registration': false } });
    const res = await register(fetchFn);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: 'invalid_request',
      error_description: 'Dynamic client registration is off on this worker: give the app a Client ID Metadata Document (its https URL as client_id), or ask its admin to set "dynamic-client-registration": true under oauth.built-in in the worker config',
    });
    expect(await (await fetchFn(`${BASE}/.well-known/oauth-authorization-server`)).json()).not.toHaveProperty('registration_endpoint');
    const neither = await setup({ builtIn: { 'dynamic-client-registration': false, 'client-id-metadata-documents': false } });
    expect(((await (await register(neither.fetchFn)).json()) as { error_description: string }).error_description).toBe('Dynamic client registration is off on this worker: ask its admin to set "dynamic-client-registration": true under oauth.built-in in the worker config');
  });
});
