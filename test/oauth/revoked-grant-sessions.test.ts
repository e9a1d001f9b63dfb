/**
 * A revoked OAuth grant leaves no session of it running (QA: `/oauth/revoke` answered 200 and the
 * access token got 401, but the session it opened, its server process and its GET stream went
 * on), against a real worker and sidecar: the app's revocation, and a rotated admin token that
 * had approved the grant, each end every session the grant's tokens opened, on
 * `/servers/<name>/mcp` and `/mcp`, with `endedBecause: "grant-revoked"`; the stream closes.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msg } from '../support/line-log.ts';
import { consentOverHttp, MemoryOAuthProvider } from '../support/oauth.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

const REDIRECT = 'http://127.0.0.1:33418/callback';
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { pid: fixtureServer('pid-server.mjs') }, worker: { oauth: { 'built-in': {} } } });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

/** The SDK client's flow for the whole worker (its base URL), approved on the consent page with `token` for alice. */
async function login(token: string) {
  let location: URL | null = null;
  const provider = new MemoryOAuthProvider(REDIRECT, async (url) => {
    ({ location } = await consentOverHttp(fetch, url, token, { agent: 'alice' }));
  });
  expect(await auth(provider, { serverUrl: stack.url })).toBe('REDIRECT');
  const code = (location as URL | null)?.searchParams.get('code');
  expect(code).toBeTruthy();
  expect(await auth(provider, { serverUrl: stack.url, authorizationCode: code! })).toBe('AUTHORIZED');
  return { clientId: provider.clientInformation()!.client_id, tokens: provider.savedTokens! };
}

const headers = (token: string, session?: string) => ({
  authorization: `Bearer ${token}`,
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  ...(session !== undefined ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {}),
});

async function post(path: string, token: string, body: unknown, session?: string): Promise<{ status: number; session: string | null; json: any }> {
  const response = await fetch(`${stack.url}${path}`, { method: 'POST', headers: headers(token, session), body: JSON.stringify(body) });
  const text = await response.text();
  const data = /^data: (.+)$/m.exec(text)?.[1] ?? text;
  return { status: response.status, session: response.headers.get('mcp-session-id'), json: data === '' ? null : JSON.parse(data) };
}

async function open(path: string, token: string): Promise<string> {
  const init = await post(path, token, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  expect(init.status).toBe(200);
  expect((await post(path, token, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session!)).status).toBe(202);
  return init.session!;
}

const ping = (path: string, token: string, session: string) => post(path, token, { jsonrpc: '2.0', id: 1, method: 'ping' }, session);

describe('a session opened with an OAuth access token', () => {
  it('ends, its GET streams with it, when the app revokes the grant; a session of the agent\'s static token goes on', async () => {
    const { clientId, tokens } = await login(stack.tokens.alice!);
    const passthrough = await open('/servers/pid/mcp', tokens.access_token);
    const aggregate = await open('/mcp', tokens.access_token);
    const byStaticToken = await open('/servers/pid/mcp', stack.tokens.alice!);
    const streams = await Promise.all([['/servers/pid/mcp', passthrough], ['/mcp', aggregate]].map(([path, session]) => fetch(`${stack.url}${path}`, { headers: { ...headers(tokens.access_token, session), accept: 'text/event-stream' } })));
    expect(streams.map((s) => s.status)).toEqual([200, 200]);

    const revoked = await fetch(`${stack.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tokens.refresh_token!, client_id: clientId }) });
    expect(revoked.status).toBe(200);
    expect((await ping('/servers/pid/mcp', tokens.access_token, passthrough)).status).toBe(401);
    // Ended, not merely refused: the agent's own token, which may use its sessions, is told why.
    for (const [path, session] of [['/servers/pid/mcp', passthrough], ['/mcp', aggregate]] as const) {
      const ended = await ping(path, stack.tokens.alice!, session);
      expect([ended.status, ended.json.error]).toEqual([404, {
        code: -32600,
        message: 'Session ended: its OAuth grant was revoked by the app; initialize a new session',
        data: { reason: 'invalid-request', endedBecause: 'grant-revoked' },
      }]);
    }
    // Both GET streams have ended (the `/mcp` one no longer carries the agent's list changes).
    await Promise.all(streams.map((s) => s.text()));
    expect(stack.worker.err.filter(msg('Agent session ended with its OAuth grant', { agent: 'alice' })).length).toBe(2);
    expect((await ping('/servers/pid/mcp', stack.tokens.alice!, byStaticToken)).status).toBe(200);
  });

  it('ends when the admin token that approved its grant is rotated in the config', async () => {
    const { tokens } = await login(stack.tokens.admin!);
    const session = await open('/mcp', tokens.access_token);
    const file = stack.worker.configFile;
    const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    config['admin-token-sha256'] = createHash('sha256').update('a rotated admin token').digest('hex');
    const reloads = stack.worker.err.filter(msg('Worker config reloaded')).length;
    writeFileSync(file, JSON.stringify(config));
    await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(reloads + 1);
    const ended = await ping('/mcp', stack.tokens.alice!, session);
    expect([ended.status, ended.json.error.data]).toEqual([404, { reason: 'invalid-request', endedBecause: 'grant-revoked' }]);
    expect(ended.json.error.message).toBe('Session ended: its OAuth grant ended: the agent token or admin token that approved it was changed or removed; initialize a new session');
  });
});
