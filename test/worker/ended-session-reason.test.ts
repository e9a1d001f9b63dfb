/**
 * A `/servers/<name>/mcp` agent whose session the worker ended is told why on its next request
 * (review deploy.md finding 5), against the real stack: a trust profile changed on its host, its
 * server moved in the worker config. The answer stays the spec's 404, so clients initialize again.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { pid: fixtureServer('pid-server.mjs') },
    agents: [
      { name: 'bob', servers: ['pid'] },
      { name: 'dana', servers: ['pid'], trust: { ref: 'tools' } },
    ],
    profiles: { tools: { description: 'every tool' } },
  });
  original = readFileSync(stack.worker.configFile, 'utf8');
});
/** The worker config as the stack wrote it, before a test edits it. */
let original: string;

afterAll(async () => {
  await stack?.stop();
});

async function post(token: string, body: unknown, session?: string): Promise<{ status: number; session: string | null; json: any }> {
  const response = await fetch(`${stack.url}/servers/pid/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...(session !== undefined ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {}),
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const data = /^data: (.+)$/m.exec(text)?.[1] ?? text;
  return { status: response.status, session: response.headers.get('mcp-session-id'), json: data === '' ? null : JSON.parse(data) };
}

const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

async function open(token: string): Promise<string> {
  const init = await post(token, initialize);
  expect(init.status).toBe(200);
  await post(token, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session!);
  return init.session!;
}

const ping = (token: string, session: string) => post(token, { jsonrpc: '2.0', id: 1, method: 'ping' }, session);

describe('an ended session\'s 404', () => {
  it('says the trust profile changed on its host, and a new session is then refused for that reason', async () => {
    const dana = await open(stack.tokens.dana!);
    const bob = await open(stack.tokens.bob!);
    expect((await ping(stack.tokens.dana!, dana)).status).toBe(200);
    writeFileSync(join(stack.dir, 'sidecar', 'trust-profiles', 'tools.json'), JSON.stringify({ 'restricted-mcp-tool-call-schemas': [{ properties: { toolName: { const: 'pid' } }, required: ['toolName'] }] }));
    await expect.poll(() => stack.sidecar.err.filter(msg('Sidecar config reloaded')).length, { timeout: 15_000 }).toBe(1);
    await expect.poll(async () => (await ping(stack.tokens.dana!, dana)).status, { timeout: 15_000 }).toBe(404);
    const ended = await ping(stack.tokens.dana!, dana);
    expect(ended.json.error).toMatchObject({ code: -32600, data: { reason: 'invalid-request', endedBecause: 'trust-profile-stale' } });
    expect(ended.json.error.message).toMatch(/^Session ended: Trust profile "tools" has changed on this host .*; initialize a new session$/);
    // Another agent holding the id learns nothing of it.
    expect((await ping(stack.tokens.bob!, dana)).json.error.message).toBe('Session not found: it expired or was closed; initialize a new session');
    expect((await post(stack.tokens.dana!, initialize)).json.error.data.reason).toBe('trust-profile-stale');
    expect((await ping(stack.tokens.bob!, bob)).status).toBe(200);
  });

  it('says the worker config changed when the agent\'s server was moved', async () => {
    const bob = await open(stack.tokens.bob!);
    const file = stack.worker.configFile;
    const config = JSON.parse(readFileSync(file, 'utf8')) as { servers: Record<string, { executor: unknown }> };
    config.servers.pid!.executor = config.servers.offline!.executor;
    writeFileSync(file, JSON.stringify(config));
    await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(1);
    const ended = await ping(stack.tokens.bob!, bob);
    expect(ended.status).toBe(404);
    expect(ended.json.error).toEqual({
      code: -32600,
      message: 'Session ended: the worker config changed: server "pid" changed; initialize a new session',
      data: { reason: 'invalid-request', endedBecause: 'config-changed' },
    });
  });

  it('says the worker config changed when the agent may no longer use the server, not that the server is unknown (review s24)', async () => {
    const file = stack.worker.configFile;
    writeFileSync(file, original);
    await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(2);
    const bob = await open(stack.tokens.bob!);
    const config = JSON.parse(original) as { agents: Array<{ name: string; servers: string[] }> };
    config.agents.find((a) => a.name === 'bob')!.servers = [];
    writeFileSync(file, JSON.stringify(config));
    await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(3);
    const ended = await ping(stack.tokens.bob!, bob);
    expect(ended.status).toBe(404);
    expect(ended.json.error).toEqual({
      code: -32600,
      message: 'Session ended: the worker config changed: server "pid" no longer allowed; initialize a new session',
      data: { reason: 'invalid-request', endedBecause: 'config-changed' },
    });
    // Another agent naming that session id learns nothing of it, and a new session is refused as any unknown server is.
    expect((await ping(stack.tokens.dana!, bob)).json.error.message).toBe('Session not found: it expired or was closed; initialize a new session');
    expect((await post(stack.tokens.bob!, initialize)).json.error.data.reason).toBe('server-not-found');
  });
});
