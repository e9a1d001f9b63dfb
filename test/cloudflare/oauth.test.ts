/**
 * The built-in OAuth server on Workers, its state in the `OAuthState` Durable Object: the SDK's
 * own OAuth client runs the whole flow against the bundle under workerd (discovery, dynamic
 * registration, the consent signed in with the agent's token, the code exchange), each step served
 * by whichever isolate or object the request reaches, then calls host A's server with the access
 * token it got; a refresh rotates the token, and a replayed code revokes everything issued from it.
 */
import { auth, refreshAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, closeClient } from '../support/clients.ts';
import { consentOverHttp, MemoryOAuthProvider } from '../support/oauth.ts';
import { fixtureServer } from '../support/paths.ts';
import { startWorkerdStack, type WorkerdStack } from '../support/workerd-stack.ts';

const REDIRECT = 'http://127.0.0.1:33418/callback';
let stack: WorkerdStack;

beforeAll(async () => {
  stack = await startWorkerdStack({
    servers: { a: { 'pid-a': fixtureServer('pid-server.mjs') }, b: { 'pid-b': fixtureServer('pid-server.mjs') } },
    worker: { oauth: { 'built-in': {} } },
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

describe('the built-in OAuth server on workerd', () => {
  it('logs an SDK client in through every step and serves it with the access token, its state shared by every isolate', async () => {
    const serverUrl = `${stack.url}/servers/pid-a/mcp`;
    let location: URL | null = null;
    const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
      ({ location } = await consentOverHttp(fetch, url, stack.tokens.alice!));
    });
    expect(await auth(provider, { serverUrl })).toBe('REDIRECT');
    const code = (location as URL | null)?.searchParams.get('code');
    expect(code).toBeTruthy();
    expect(await auth(provider, { serverUrl, authorizationCode: code! })).toBe('AUTHORIZED');
    const tokens = provider.savedTokens!;

    const client = await connectClient(serverUrl, tokens.access_token);
    try {
      const pid = Number(((await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> }).content[0]!.text);
      expect(stack.serverPids('a')).toContain(pid);
    } finally {
      await closeClient(client);
    }

    // Refresh tokens rotate; a second use within the grace (one client's requests refreshing together) gets the same next access and refresh tokens.
    const metadata = await (await fetch(`${stack.url}/.well-known/oauth-authorization-server`)).json();
    const refresh = { metadata, clientInformation: provider.clientInformation()!, refreshToken: tokens.refresh_token!, resource: new URL(serverUrl) };
    const rotated = await refreshAuthorization(stack.url, refresh);
    const again = await refreshAuthorization(stack.url, refresh);
    expect([rotated.access_token === again.access_token, rotated.access_token === tokens.access_token]).toEqual([true, false]);
    expect([rotated.refresh_token === again.refresh_token, rotated.refresh_token === tokens.refresh_token]).toEqual([true, false]);
    // The code, used up in the shared state, is refused when presented again, and its grant with every token from it revoked.
    const replay = await fetch(`${stack.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, client_id: provider.clientInformation()!.client_id, redirect_uri: REDIRECT, code_verifier: provider.codeVerifier() }),
    });
    expect([replay.status, await replay.json()]).toEqual([400, { error: 'invalid_grant', error_description: 'The authorization code was already used: every token issued from it is revoked' }]);
    await expect(connectClient(serverUrl, again.access_token)).rejects.toThrow();
    await expect(refreshAuthorization(stack.url, { ...refresh, refreshToken: again.refresh_token! })).rejects.toThrow();
  }, 120_000);
});

describe('a session opened with an access token on workerd', () => {
  let quick: WorkerdStack;
  beforeAll(async () => {
    // Sweeps every 30 s, the most: a session ended at once was ended by the revocation, not by a sweep asking after its grant.
    quick = await startWorkerdStack({ servers: { a: { 'pid-a': fixtureServer('pid-server.mjs') }, b: {} }, worker: { oauth: { 'built-in': {} }, 'session-idle-seconds': 600 } });
  }, 120_000);
  afterAll(async () => {
    await quick?.stop();
  });

  it('ends at once when the edge revokes its grant, as on Deno and Node, though it lives in a Durable Object of its own', async () => {
    const serverUrl = `${quick.url}/servers/pid-a/mcp`;
    let location: URL | null = null;
    const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
      ({ location } = await consentOverHttp(fetch, url, quick.tokens.alice!));
    });
    expect(await auth(provider, { serverUrl })).toBe('REDIRECT');
    expect(await auth(provider, { serverUrl, authorizationCode: (location as URL | null)!.searchParams.get('code')! })).toBe('AUTHORIZED');
    const tokens = provider.savedTokens!;
    const post = (token: string, body: unknown, session?: string) => fetch(serverUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...(session !== undefined ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {}) },
      body: JSON.stringify(body),
    });
    const opened = await post(tokens.access_token, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(opened.status).toBe(200);
    await opened.text();
    const session = opened.headers.get('mcp-session-id')!;
    expect((await post(tokens.access_token, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);

    const revoked = await fetch(`${quick.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tokens.refresh_token!, client_id: provider.clientInformation()!.client_id }) });
    expect(revoked.status).toBe(200);
    // The agent's static token reaches its session, and is told why it ended: already, as the revocation was answered.
    const answer = await post(quick.tokens.alice!, { jsonrpc: '2.0', id: 1, method: 'ping' }, session);
    expect(answer.status).toBe(404);
    expect((JSON.parse(await answer.text()) as { error: { data: { endedBecause?: string } } }).error.data.endedBecause).toBe('grant-revoked');
  }, 120_000);
});
