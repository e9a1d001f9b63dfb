/**
 * `/mcp` for a modern (2026-07-28) agent, through the real stack (the worker under Deno, the
 * sidecar CLI, server-everything from npm, the modern echo fixture, and `offline`, bound to a
 * host with no sidecar): discover and the lists merged across the agent's servers with
 * namespaced names and the strictest caching hints, calls routed by name with the server's own
 * name, MRTR through the aggregate with its state bound to its server, and legacy sessions on
 * the same URL unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { openListen } from './listen-client.ts';
import { modernPost, MODERN, type ModernAnswer } from './modern-client.ts';

let stack: Stack;
const aggregate = (agent: string, method: string, params?: Record<string, unknown>, call?: Parameters<typeof modernPost>[4]) =>
  modernPost(`${stack.url}/mcp`, stack.tokens[agent]!, method, params, call);
const textOf = (answer: ModernAnswer): string => (answer.response.result?.content as Array<{ text: string }> | undefined)?.map((c) => c.text).join('\n') ?? '';
const ELICIT = { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } };

beforeAll(async () => {
  stack = await startStack({
    servers: { everything: everythingServer(), modern: fixtureServer('modern-echo-server.mjs') },
    agents: [{ name: 'bob', servers: ['modern'] }, { name: 'carol', servers: ['modern', 'everything'] }],
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('the modern aggregate on /mcp', () => {
  it("discovers every server at once: their features, Switchyard's serverInfo, the unavailable one named with its reason", async () => {
    const answer = await aggregate('alice', 'server/discover', {}, { id: 'd-1' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    const result = answer.response.result;
    expect(result).toMatchObject({
      resultType: 'complete',
      supportedVersions: [MODERN],
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true } },
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'switchyard' } },
    });
    expect(result.instructions).toContain('Available: everything, modern');
    expect(result.instructions).toMatch(/offline: host-offline/);
  });

  it('lists tools of every server under namespaced names, with the smallest ttlMs, and private: the list is the agent\'s own', async () => {
    const alice = (await aggregate('alice', 'tools/list')).response.result;
    const names = (alice.tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['everything__echo', 'everything__trigger-elicitation-request', 'modern__echo', 'modern__ask', 'offline__unavailable']));
    expect(alice).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    // The modern fixture alone says 60 s, public: the time stands, but what /mcp lists is bob's
    // servers, which a shared cache must not serve to another agent.
    expect((await aggregate('bob', 'tools/list')).response.result).toMatchObject({ ttlMs: 60000, cacheScope: 'private' });
    expect((await aggregate('carol', 'tools/list')).response.result).toMatchObject({ ttlMs: 0, cacheScope: 'private' });
    const prompts = (await aggregate('alice', 'prompts/list')).response.result;
    expect((prompts.prompts as Array<{ name: string }>).every((p) => p.name.startsWith('everything__'))).toBe(true);
  });

  it("calls a tool by its namespaced name, checked against Mcp-Name and its Mcp-Param-* headers, the server getting its own name", async () => {
    expect(textOf(await aggregate('alice', 'tools/call', { name: 'everything__echo', arguments: { message: 'via /mcp' } }))).toBe('Echo: via /mcp');
    expect(textOf(await aggregate('alice', 'tools/call', { name: 'modern__echo', arguments: { message: 'modern via /mcp' } }))).toBe('Echo: modern via /mcp');
    const mismatch = await aggregate('alice', 'tools/call', { name: 'everything__echo', arguments: { message: 'x' } }, { headers: { 'mcp-name': 'echo' } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.response.error.code).toBe(-32020);
    const headers = await aggregate('alice', 'tools/call', { name: 'modern__regional', arguments: { region: 'us' } }, { headers: { 'Mcp-Param-Region': 'eu' } });
    expect(headers.status).toBe(400);
    expect(headers.response.error).toMatchObject({ code: -32020, message: expect.stringContaining('Mcp-Param-region') });
    expect(textOf(await aggregate('alice', 'tools/call', { name: 'modern__regional', arguments: { region: 'us' } }, { headers: { 'Mcp-Param-Region': 'us' } }))).toBe('Region us, count undefined');
    const prompt = await aggregate('alice', 'prompts/get', { name: 'everything__simple-prompt', arguments: {} });
    expect(prompt.response.result).toMatchObject({ resultType: 'complete', messages: [expect.objectContaining({ role: 'user' })] });
    const placeholder = await aggregate('alice', 'tools/call', { name: 'offline__unavailable', arguments: {} });
    expect(placeholder.response.result).toMatchObject({ resultType: 'complete', isError: true, structuredContent: { server: 'offline', reason: 'host-offline' } });
    const unknown = await aggregate('bob', 'tools/call', { name: 'everything__echo', arguments: { message: 'x' } });
    expect(unknown.response.error).toMatchObject({ code: -32602, message: expect.stringContaining('Unknown tool') });
  });

  it('reads a resource from the server that lists it', async () => {
    const resources = (await aggregate('alice', 'resources/list')).response.result.resources as Array<{ uri: string }>;
    const uri = resources[0]!.uri;
    const read = await aggregate('alice', 'resources/read', { uri });
    expect(read.response.result).toMatchObject({ resultType: 'complete', contents: [{ uri }] });
  });

  it('carries MRTR through the aggregate: the retry reaches the same server, and a state carried to another server is refused', async () => {
    const call = (name: string, extra: Record<string, unknown> = {}) => aggregate('alice', 'tools/call', { name, arguments: {}, ...extra }, ELICIT);
    const legacy = (await call('everything__trigger-elicitation-request')).response.result;
    expect(legacy.resultType).toBe('input_required');
    const [key] = Object.keys(legacy.inputRequests);
    const modern = (await call('modern__ask')).response.result;
    expect(modern.resultType).toBe('input_required');

    const legacyStateElsewhere = await call('modern__ask', { inputResponses: { name: { action: 'accept', content: { name: 'Eve' } } }, requestState: legacy.requestState });
    expect(legacyStateElsewhere.response.error).toMatchObject({ code: -32602, data: { requestState: 'invalid' } });
    const modernStateElsewhere = await call('everything__trigger-elicitation-request', { inputResponses: { [key!]: { action: 'decline' } }, requestState: modern.requestState });
    expect(modernStateElsewhere.response.error).toMatchObject({ code: -32602, data: { requestState: 'invalid' } });

    const done = await call('everything__trigger-elicitation-request', { inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada', check: true } } }, requestState: legacy.requestState });
    expect(textOf(done)).toContain('Name: Ada');
    const second = (await call('modern__ask', { inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } }, requestState: modern.requestState })).response.result;
    const finished = await call('modern__ask', { inputResponses: { colour: { action: 'accept', content: { colour: 'red' } } }, requestState: second.requestState });
    expect(textOf(finished)).toBe('Hello Ada, you like red');
  });

  it("merges every server's listen stream into one: one acknowledgement, then each server's changes, and closing it ends them all", async () => {
    const watched = 'demo://resource/dynamic/text/7';
    const stream = await openListen(`${stack.url}/mcp`, stack.tokens.alice!, 'everywhere', { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: [watched] });
    expect(await stream.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'everywhere' }, notifications: { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: [watched] } },
    });
    try {
      expect(textOf(await aggregate('alice', 'tools/call', { name: 'modern__touch-tools', arguments: {} }))).toBe('Notified 1');
      expect(await stream.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'everywhere' } } });
      await aggregate('alice', 'tools/call', { name: 'everything__gzip-file-as-resource', arguments: { name: 'agg.gz', data: 'data:text/plain,hi', outputType: 'resourceLink' } });
      expect(await stream.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/resources/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'everywhere' } } });
      // The watched URI went to the server that serves it (the only one with resources), which now sends its updates.
      await aggregate('alice', 'tools/call', { name: 'everything__toggle-subscriber-updates', arguments: {} });
      expect(await stream.next()).toEqual({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'everywhere' }, uri: watched } });
    } finally {
      await stream.close();
    }
    const deadline = Date.now() + 10_000;
    const channels = async () => (await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')!.channels;
    while ((await channels()) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(await channels()).toBe(0);
  });

  it('keeps legacy sessions on /mcp exactly as before, beside modern requests', async () => {
    const client = await connectClient(`${stack.url}/mcp`, stack.tokens.alice!);
    try {
      const [legacy, modern] = await Promise.all([
        client.callTool({ name: 'everything__echo', arguments: { message: 'legacy /mcp' } }),
        aggregate('alice', 'tools/call', { name: 'everything__echo', arguments: { message: 'modern /mcp' } }),
      ]);
      expect(legacy.content).toEqual([{ type: 'text', text: 'Echo: legacy /mcp' }]);
      expect(textOf(modern)).toBe('Echo: modern /mcp');
      expect((client.transport as { sessionId?: string }).sessionId).toEqual(expect.any(String));
    } finally {
      await closeClient(client);
    }
  });
});
