/**
 * An external OpenID issuer's JWT access tokens on the agent routes: verified against its keys
 * (served here by an in-process fetch; test/oauth fetches them over HTTP), audience = this resource, the
 * agent named by the configured claim. Static tokens keep working beside it.
 */
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BASE, testConfig } from '../../../test/support/in-process-app.ts';
import { InProcessRouter } from '../../../test/support/in-process-router.ts';
import { createTestMcpServer } from '../../../test/support/test-mcp-server.ts';
import { createApp } from '../../app.ts';
import { InMemorySessionTable } from '../../sessions/session-table.ts';

const ISSUER = 'https://login.example.com/tenant';
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

let keys: Awaited<ReturnType<typeof generateKeyPair>>;
let stranger: Awaited<ReturnType<typeof generateKeyPair>>;
let issuerFetch: (url: string) => Promise<Response>;
beforeAll(async () => {
  keys = await generateKeyPair('ES256');
  stranger = await generateKeyPair('ES256');
  const jwks = { keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256' }] };
  const documents: Record<string, unknown> = {
    [`${ISSUER}/.well-known/openid-configuration`]: { issuer: ISSUER, jwks_uri: `${ISSUER}/keys` },
    [`${ISSUER}/keys`]: jwks,
  };
  issuerFetch = async (url) => (url in documents ? Response.json(documents[url]) : new Response(null, { status: 404 }));
});

const sessions: InMemorySessionTable[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) {
    await s.closeAll();
    s.dispose();
  }
});

async function setup(fetch: (url: string) => Promise<Response> = (url) => issuerFetch(url)) {
  const config = await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha'], { oauth: { 'external-issuer': { issuer: ISSUER, 'agent-claim': 'switchyard_agent' } } });
  const table = new InMemorySessionTable({ idleMs: 60_000 });
  sessions.push(table);
  const app = createApp({ config, router: new InProcessRouter({ alpha: createTestMcpServer }), sessions: table, oauth: { externalIssuer: { fetch } } });
  const call = (path: string, token: string) => app.request(`${BASE}${path}`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: INIT });
  return { app, call };
}

/** `exp: null` leaves the claim out. */
function token(claims: Record<string, unknown>, options: { key?: CryptoKey; aud?: string; iss?: string; exp?: string | null } = {}) {
  const jwt = new SignJWT({ switchyard_agent: 'alice', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(options.iss ?? ISSUER)
    .setAudience(options.aud ?? `${BASE}/servers/alpha/mcp`)
    .setIssuedAt();
  if (options.exp !== null) jwt.setExpirationTime(options.exp ?? '5m');
  return jwt.sign(options.key ?? keys.privateKey);
}

describe('external issuer', () => {
  it('points clients at the issuer and accepts its token for this resource as the named agent', async () => {
    const { app, call } = await setup();
    const prm = (await (await app.request(`${BASE}/.well-known/oauth-protected-resource/servers/alpha/mcp`)).json()) as Record<string, unknown>;
    expect(prm.authorization_servers).toEqual([ISSUER]);
    expect((await app.request(`${BASE}/.well-known/oauth-authorization-server`)).status).toBe(404);
    expect((await call('/servers/alpha/mcp', await token({}))).status).toBe(200);
    expect((await call('/servers/alpha/mcp', await token({}, { aud: BASE }))).status).toBe(200);
  });

  it('refuses a token for another resource, another issuer, a foreign key, an expired one, one that never expires and an unknown agent, saying why', async () => {
    const { call } = await setup();
    const cases: Array<[string, string]> = [
      [await token({}, { aud: 'https://other.example/mcp' }), 'the token was issued for another resource (aud)'],
      [await token({}, { aud: `${BASE}/mcp` }), 'the token was issued for another resource (aud)'],
      [await token({}, { iss: 'https://evil.example' }), 'the token\'s "iss" claim is not accepted'],
      [await token({}, { key: stranger.privateKey }), 'the token\'s signature does not verify against the issuer\'s keys'],
      [await token({}, { exp: '-1m' }), 'the token has expired'],
      [await token({}, { exp: null }), 'the token has no "exp" claim, and an access token must expire'],
      [await token({ switchyard_agent: 'mallory' }), 'the token\'s "switchyard_agent" claim names no agent of this worker'],
    ];
    for (const [jwt, why] of cases) {
      const res = await call('/servers/alpha/mcp', jwt);
      expect(res.status, why).toBe(401);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe(`Invalid bearer token: ${why}`);
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
  });

  it('takes no keys from a discovered jwks_uri on plain http, nor from a discovery document redirected to one (review s19)', async () => {
    const fetched: string[] = [];
    const plain = async (url: string) => {
      fetched.push(url);
      if (url === `${ISSUER}/.well-known/openid-configuration`) return Response.json({ issuer: ISSUER, jwks_uri: 'http://169.254.169.254/keys' });
      return issuerFetch(url);
    };
    const { call } = await setup(plain);
    expect((await call('/servers/alpha/mcp', await token({}))).status).not.toBe(200);
    // A redirect through a plain http hop, even one that leads back to https, is not followed there.
    const redirected = async (url: string) => {
      fetched.push(url);
      if (url === `${ISSUER}/.well-known/openid-configuration`) return new Response(null, { status: 302, headers: { location: 'http://login.example.com/hop' } });
      if (url === 'http://login.example.com/hop') return new Response(null, { status: 302, headers: { location: `${ISSUER}/.well-known/openid-configuration?again` } });
      return issuerFetch(url);
    };
    const second = await setup(redirected);
    expect((await second.call('/servers/alpha/mcp', await token({}))).status).not.toBe(200);
    expect(fetched.filter((url) => !url.endsWith('/openid-configuration'))).toEqual([]);
    // An https redirect is followed, and the keys it names are used.
    const moved = async (url: string) => (url === `${ISSUER}/.well-known/openid-configuration` ? new Response(null, { status: 301, headers: { location: `${ISSUER}/v2/.well-known/openid-configuration` } }) : issuerFetch(url.replace('/v2', '')));
    const third = await setup(moved);
    expect((await third.call('/servers/alpha/mcp', await token({}))).status).toBe(200);
  });

  it('answers an unsigned token whose header carries bytes no header may hold with a 401 whose challenge stays short printable ASCII', async () => {
    const { call } = await setup();
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const crit of [['€'], ['x\r\nSet-Cookie: a=b'], ['bé'], ['"\\'.repeat(300)]]) {
      const res = await call('/servers/alpha/mcp', `${b64({ alg: 'RS256', crit })}.${b64({ sub: 'x' })}.c2ln`);
      expect([crit, res.status]).toEqual([crit, 401]);
      const challenge = res.headers.get('www-authenticate')!;
      expect(challenge).toMatch(/^[\x20-\x7e]*$/);
      expect(challenge.length).toBeLessThan(600);
    }
  });
});
