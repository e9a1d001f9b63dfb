/**
 * An external OpenID issuer found the way production finds it: the worker (in this process,
 * the Node adapter on a real socket) reads the issuer's discovery document and then its JWKS over
 * HTTP from a local issuer, verifies a token signed with the issuer's key, and refuses one signed
 * after the issuer rotated to a key it never published.
 */
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeWorker, type NodeWorker } from '../../worker/adapters/node/node-worker.ts';
import { parseWorkerConfig } from '../../worker/config/worker-config.ts';
import { agentEntry } from '../support/configs.ts';
import { modernPost } from '../modern/modern-client.ts';

let issuerServer: Server;
let issuer: string;
let worker: NodeWorker;
let keys: Awaited<ReturnType<typeof generateKeyPair>>;
const requests: string[] = [];

beforeAll(async () => {
  keys = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' };
  issuerServer = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/.well-known/openid-configuration') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/keys` }));
    if (req.url === '/keys') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => issuerServer.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(issuerServer.address() as { port: number }).port}`;
  const config = parseWorkerConfig(
    {
      agents: [agentEntry({ name: 'alice', token: 'alice-static-token', servers: ['docs'] })],
      servers: { docs: { executor: { type: 'http', url: 'http://127.0.0.1:9/mcp' } } },
      oauth: { 'external-issuer': { issuer, 'agent-claim': 'preferred_username' } },
    },
    { runtime: 'edge' },
  );
  worker = await startNodeWorker({ config });
});

afterAll(async () => {
  await worker?.close();
  issuerServer.closeAllConnections();
  await new Promise((resolve) => issuerServer.close(resolve));
});

const sign = (key: CryptoKey, kid: string, aud: string) =>
  new SignJWT({ preferred_username: 'alice' }).setProtectedHeader({ alg: 'RS256', kid }).setIssuer(issuer).setAudience(aud).setExpirationTime('5m').sign(key);

describe('external issuer, discovered over HTTP', () => {
  it('points clients at the issuer and verifies its tokens with the keys its discovery document names', async () => {
    const prm = (await (await fetch(`${worker.url}/.well-known/oauth-protected-resource/mcp`)).json()) as { authorization_servers: string[] };
    expect(prm.authorization_servers).toEqual([issuer]);
    const token = await sign(keys.privateKey, 'rsa-1', `${worker.url}/servers/docs/mcp`);
    // The agent is authenticated: the request gets as far as the (unreachable) server, not a 401.
    const answer = await modernPost(`${worker.url}/servers/docs/mcp`, token, 'tools/list');
    expect(answer.status).not.toBe(401);
    expect(requests).toEqual(expect.arrayContaining(['/.well-known/openid-configuration', '/keys']));
  });

  it('refuses a token signed with a key the issuer never published', async () => {
    const rogue = await generateKeyPair('RS256');
    const answer = await modernPost(`${worker.url}/servers/docs/mcp`, await sign(rogue.privateKey, 'rsa-2', `${worker.url}/servers/docs/mcp`), 'tools/list');
    expect(answer.status).toBe(401);
    expect(answer.response.error.message).toBe('Invalid bearer token: the token\'s signature does not verify against the issuer\'s keys');
  });
});
