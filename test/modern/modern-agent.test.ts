/**
 * A modern (2026-07-28) agent through the real stack: the worker under Deno, the sidecar CLI, and
 * real stdio servers (server-everything, a pid fixture), all legacy, bridged by the host's legacy
 * instance per agent and server. The agent speaks raw HTTP (`modern-client.ts`); a legacy SDK
 * client uses the same agent and server at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernMeta, modernPost, MODERN } from './modern-client.ts';

let stack: Stack;
const url = (server: string) => `${stack.url}/servers/${server}/mcp`;
const alice = (method: string, params?: Record<string, unknown>, call?: Parameters<typeof modernPost>[4]) =>
  modernPost(url('everything'), stack.tokens.alice!, method, params, call);
const textOf = (answer: { response: Record<string, any> }): string => answer.response.result?.content?.[0]?.text;

beforeAll(async () => {
  stack = await startStack({
    servers: { everything: everythingServer(), pids: fixtureServer('pid-server.mjs'), broken: { command: '/nonexistent/mcp-server' } },
    agents: [{ name: 'bob', servers: ['everything', 'pids'] }],
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('a modern agent on /servers/:name/mcp', () => {
  it('discovers the server: modern versions, its capabilities, caching hints and serverInfo in _meta', async () => {
    const answer = await alice('server/discover');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    const result = answer.response.result;
    expect(result).toMatchObject({ resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: expect.any(Object) }, cacheScope: expect.stringMatching(/^(public|private)$/) });
    expect(Number.isInteger(result.ttlMs) && result.ttlMs >= 0).toBe(true);
    expect(result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: expect.any(String), version: expect.any(String) });
  });

  it('lists and calls tools statelessly, every result complete, never a session id', async () => {
    const list = await alice('tools/list');
    expect(list.headers.get('mcp-session-id')).toBeNull();
    expect(list.response.result).toMatchObject({ resultType: 'complete', ttlMs: expect.any(Number), cacheScope: expect.any(String) });
    const names = (list.response.result.tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'trigger-long-running-operation']));
    const call = await alice('tools/call', { name: 'echo', arguments: { message: 'modern hello' } });
    expect(call.status).toBe(200);
    expect(call.headers.get('mcp-session-id')).toBeNull();
    expect(call.response.result.resultType).toBe('complete');
    expect(textOf(call)).toBe('Echo: modern hello');
  });

  it('streams progress on the request\'s own SSE response, then the result', async () => {
    const answer = await alice('tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } }, { meta: { progressToken: 'progress-1' } });
    expect(answer.sse).toBe(true);
    const progress = answer.messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.map((m) => [m.params.progressToken, m.params.progress])).toEqual([['progress-1', 1], ['progress-1', 2], ['progress-1', 3]]);
    expect(answer.response.result.resultType).toBe('complete');
    expect(textOf(answer)).toContain('Long running operation completed');
  });

  it('answers a missing resource with -32602 naming the uri', async () => {
    const uri = 'test://nonexistent-resource-for-conformance-testing';
    const answer = await alice('resources/read', { uri });
    expect(answer.response.error).toMatchObject({ code: -32602, data: { uri } });
    expect(answer.response.result).toBeUndefined();
  });

  it('refuses a header mismatch (400, -32020) and an unsupported version (400, -32022) with the request id', async () => {
    const mismatch = await alice('tools/list', {}, { id: 302, headers: { 'mcp-method': 'prompts/list' } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.response).toMatchObject({ id: 302, error: { code: -32020, data: { reason: 'invalid-request' } } });
    const version = await alice('server/discover', {}, { id: 301, headers: { 'mcp-protocol-version': 'v999.0.0' }, meta: { 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' } });
    expect(version.status).toBe(400);
    expect(version.response).toMatchObject({ id: 301, error: { code: -32022, data: { supported: [MODERN], requested: 'v999.0.0' } } });
  });

  it('answers initialize with modern _meta 404, -32601', async () => {
    const answer = await alice('initialize', {}, { id: 'init-1' });
    expect(answer.status).toBe(404);
    expect(answer.response).toMatchObject({ id: 'init-1', error: { code: -32601 } });
  });

  it('gives two concurrent calls of one agent each its own answer', async () => {
    const calls = await Promise.all(['first', 'second', 'third'].map((message) => alice('tools/call', { name: 'echo', arguments: { message } })));
    expect(calls.map(textOf)).toEqual(['Echo: first', 'Echo: second', 'Echo: third']);
  });

  it('runs one server instance per agent and never shares it between agents', async () => {
    const pidOf = async (agent: 'alice' | 'bob') => textOf(await modernPost(url('pids'), stack.tokens[agent]!, 'tools/call', { name: 'pid', arguments: {} }));
    const [a1, b1] = await Promise.all([pidOf('alice'), pidOf('bob')]);
    const [a2, b2] = await Promise.all([pidOf('alice'), pidOf('bob')]);
    expect(a1).toMatch(/^\d+$/);
    expect(b1).toMatch(/^\d+$/);
    expect(a1).not.toBe(b1);
    expect([a2, b2]).toEqual([a1, b1]);
  });

  it('closes the request\'s channel when the agent closes its stream, and the instance keeps serving', async () => {
    const channels = async () => (await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')!.channels;
    const abort = new AbortController();
    const response = await fetch(url('everything'), {
      method: 'POST',
      signal: abort.signal,
      headers: { authorization: `Bearer ${stack.tokens.alice}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'trigger-long-running-operation' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'long-1', method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 60 }, _meta: { ...modernMeta(), progressToken: 'long' } } }),
    });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('notifications/progress');
    expect(await channels()).toBeGreaterThanOrEqual(1);
    abort.abort();
    await reader.cancel().catch(() => {});
    const deadline = Date.now() + 10_000;
    while ((await channels()) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(await channels()).toBe(0);
    expect(textOf(await alice('tools/call', { name: 'echo', arguments: { message: 'after abort' } }))).toBe('Echo: after abort');
  });

  it('answers a modern GET without a session 405, and a server the agent may not use 404 with the id', async () => {
    const get = await fetch(url('everything'), { headers: { authorization: `Bearer ${stack.tokens.alice}`, 'mcp-protocol-version': MODERN } });
    expect(get.status).toBe(405);
    const refused = await modernPost(url('offline'), stack.tokens.bob!, 'tools/list', {}, { id: 'no-1' });
    expect(refused.status).toBe(404);
    expect(refused.response).toMatchObject({ id: 'no-1', error: { data: { reason: 'server-not-found' } } });
    // Not -32002: MCP's "resource not found" of earlier versions, which 2026-07-28 forbids emitting.
    expect(refused.response.error.code).toBe(-31002);
  });

  it('marks a server failing on /healthz when the host answers that its launch failed, as a refused open would (review s33)', async () => {
    const state = async (token: string) => {
      const response = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${token}` } });
      return ((await response.json()) as { servers: Array<{ name: string; state: string; failure?: { reason: string } }> }).servers.find((s) => s.name === 'broken');
    };
    expect(await state(stack.tokens.alice!)).toMatchObject({ state: 'available' });
    const answer = await modernPost(url('broken'), stack.tokens.alice!, 'tools/list');
    expect(answer.response.error?.data?.reason).toBe('launch-failed');
    expect(await state(stack.tokens.alice!)).toMatchObject({ state: 'failing', failure: { reason: 'launch-failed' } });
  });

  it('serves a legacy SDK client on the same agent and server at the same time', async () => {
    const legacy = await connectClient(url('everything'), stack.tokens.alice!);
    try {
      const [legacyCall, modernCall] = await Promise.all([
        legacy.callTool({ name: 'echo', arguments: { message: 'legacy side' } }),
        alice('tools/call', { name: 'echo', arguments: { message: 'modern side' } }),
      ]);
      expect((legacyCall.content as Array<{ text: string }>)[0]!.text).toBe('Echo: legacy side');
      expect(textOf(modernCall)).toBe('Echo: modern side');
      expect((legacy.transport as { sessionId?: string }).sessionId).toEqual(expect.any(String));
    } finally {
      await closeClient(legacy);
    }
  });
});
