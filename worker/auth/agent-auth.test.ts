import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AgentEntry } from '../config/worker-config.ts';
import { agentAuth, authenticateAgent, bearerTokenOf, sha256Hex, type AgentVariables } from './agent-auth.ts';

async function agent(name: string, token: string): Promise<AgentEntry> {
  return { name, 'token-sha256': await sha256Hex(token), servers: [] };
}

describe('agent authentication', () => {
  // Hashing and the constant-time compare are tested with their one copy, shared/credentials.test.ts.
  it('reads only well-formed bearer headers', () => {
    expect(bearerTokenOf('Bearer t0k')).toBe('t0k');
    expect(bearerTokenOf('bearer   t0k ')).toBe('t0k');
    expect(bearerTokenOf('Basic dXNlcg==')).toBeNull();
    expect(bearerTokenOf('Bearer a b')).toBeNull();
    expect(bearerTokenOf(undefined)).toBeNull();
  });

  it('resolves a token to its agent and nothing else', async () => {
    const agents = [await agent('alice', 'alice-token'), await agent('bob', 'bob-token')];
    expect((await authenticateAgent('Bearer bob-token', agents))?.name).toBe('bob');
    expect(await authenticateAgent('Bearer carol-token', agents)).toBeNull();
    expect(await authenticateAgent(undefined, agents)).toBeNull();
  });

  it('answers 401 with reason unauthorized and WWW-Authenticate when the token is missing or wrong', async () => {
    const app = new Hono<{ Variables: AgentVariables }>();
    app.get('/mcp', agentAuth([await agent('alice', 'alice-token')]), (c) => c.text(c.get('agent').name));

    const missing = await app.request('/mcp');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="switchyard"');
    expect(await missing.json()).toEqual({ error: { reason: 'unauthorized', message: 'Missing bearer token: send "Authorization: Bearer <token>"' } });

    // A header that is there but is no Bearer token is not called missing: the client sent one, wrongly.
    for (const authorization of ['Basic YWxpY2U6eA==', 'Bearer a b', 'Bearer', 'alice-token']) {
      const malformed = await app.request('/mcp', { headers: { authorization } });
      expect([authorization, malformed.status, ((await malformed.json()) as { error: { message: string } }).error.message]).toEqual([
        authorization,
        401,
        'Malformed Authorization header: it is not "Bearer <token>" (one token, no spaces in it)',
      ]);
    }

    const wrong = await app.request('/mcp', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(((await wrong.json()) as { error: { reason: string } }).error.reason).toBe('unauthorized');

    const ok = await app.request('/mcp', { headers: { authorization: 'Bearer alice-token' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('alice');
  });

  it('keeps telling agents apart and refusing wrong tokens once tokens are cached as verified', async () => {
    const app = new Hono<{ Variables: AgentVariables }>();
    app.get('/mcp', agentAuth([await agent('alice', 'alice-token'), await agent('bob', 'bob-token')]), (c) => c.text(c.get('agent').name));
    const as = async (token: string) => {
      const response = await app.request('/mcp', { headers: { authorization: `Bearer ${token}` } });
      return response.status === 200 ? response.text() : response.status;
    };
    for (let round = 0; round < 3; round++) {
      expect(await as('alice-token')).toBe('alice');
      expect(await as('bob-token')).toBe('bob');
      expect(await as('alice-token-')).toBe(401);
      expect(await as('alice-toke')).toBe(401);
    }
  });
});
