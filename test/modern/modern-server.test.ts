/**
 * A modern (2026-07-28) stdio server through the real stack: the worker under Deno, the sidecar
 * CLI, and the modern echo fixture, whose era the host learns by the stdio probe. A modern agent
 * (raw HTTP, `modern-client.ts`) gets the server's own answers, caching hints included; a legacy
 * SDK client gets a session the host opens on the server's behalf, beside the modern agent.
 */
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernMeta, modernPost, MODERN } from './modern-client.ts';
import { waitUntil } from '../support/processes.ts';

let stack: Stack;
const post = (method: string, params?: Record<string, unknown>, call?: Parameters<typeof modernPost>[4]) =>
  modernPost(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!, method, params, call);
const FIXTURE_INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'modern-echo-fixture', version: '1.0.0' } };

beforeAll(async () => {
  stack = await startStack({ servers: { modern: fixtureServer('modern-echo-server.mjs') } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('a modern agent and a modern stdio server', () => {
  it("discovers the server: its own versions, capabilities and caching hints, not the host's defaults", async () => {
    const answer = await post('server/discover', {}, { id: 'discover-1' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.response).toEqual({
      jsonrpc: '2.0',
      id: 'discover-1',
      result: { resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: { listChanged: true } }, ttlMs: 60000, cacheScope: 'public', _meta: FIXTURE_INFO },
    });
  });

  it('lists and calls tools with the results as the server gave them', async () => {
    const list = await post('tools/list');
    expect(list.response.result).toEqual({
      resultType: 'complete',
      tools: expect.arrayContaining([
        { name: 'echo', description: 'Echoes the message back', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } },
        { name: 'wait', description: 'Never answers: waits to be cancelled', inputSchema: { type: 'object' } },
        { name: 'cancelled', description: 'The request ids cancelled so far, as JSON', inputSchema: { type: 'object' } },
      ]),
      ttlMs: 60000,
      cacheScope: 'public',
      _meta: FIXTURE_INFO,
    });
    const call = await post('tools/call', { name: 'echo', arguments: { message: 'modern all the way' } }, { id: 42 });
    expect(call.status).toBe(200);
    expect(call.response).toEqual({ jsonrpc: '2.0', id: 42, result: { resultType: 'complete', content: [{ type: 'text', text: 'Echo: modern all the way' }], _meta: FIXTURE_INFO } });
  });

  it('answers a method the server does not implement 404 with its -32601, as the transport asks', async () => {
    const answer = await post('prompts/list', {}, { id: 'no-prompts' });
    expect(answer.status).toBe(404);
    expect(answer.response).toMatchObject({ id: 'no-prompts', error: { code: -32601 } });
  });

  it("streams the server's progress under the agent's own token, then the result", async () => {
    const answer = await post('tools/call', { name: 'echo', arguments: { message: 'with progress' } }, { meta: { progressToken: 'agent-token' } });
    expect(answer.sse).toBe(true);
    expect(answer.messages.slice(0, -1)).toEqual([{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'agent-token', progress: 1, total: 1 } }]);
    expect(answer.response.result.content).toEqual([{ type: 'text', text: 'Echo: with progress' }]);
  });
});

describe('the channel of each modern request', () => {
  it('is closed by both ends once answered, and neither logs the close that crossed its own as a frame for an unknown channel', async () => {
    for (let i = 0; i < 5; i++) expect((await post('tools/call', { name: 'echo', arguments: { message: `closing ${i}` } })).status).toBe(200);
    // Frames go in order each way on the one link: once this is answered, each end has read the other's closes.
    expect((await post('server/discover')).status).toBe(200);
    const logs = stack.history.map((p) => p.process.stderr()).join('\n');
    expect(logs).toContain('Server instance started for a modern agent'); // the sidecar's log is there to read
    expect(logs).not.toContain('Ignored a frame for an unknown channel');
  });
});

describe("a modern agent and a modern server's InputRequiredResult", () => {
  const ask = (extra: Record<string, unknown> = {}, agent: 'alice' | 'bob' = 'alice') =>
    modernPost(`${stack.url}/servers/modern/mcp`, stack.tokens[agent]!, 'tools/call', { name: 'ask', arguments: {}, ...extra }, { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
  const accept = (content: Record<string, string>) => ({ action: 'accept', content });

  it("gets the server's input requests with its state sealed by the host, and the server its own state back on each retry", async () => {
    const first = (await ask()).response.result;
    expect(first).toMatchObject({ resultType: 'input_required', inputRequests: { name: { method: 'elicitation/create' } } });
    expect(first.requestState).not.toBe('round-1');
    const second = (await ask({ inputResponses: { name: accept({ name: 'Ada' }) }, requestState: first.requestState })).response.result;
    expect(second).toMatchObject({ resultType: 'input_required', inputRequests: { colour: { method: 'elicitation/create' } } });
    const done = await ask({ inputResponses: { colour: accept({ colour: 'teal' }) }, requestState: second.requestState });
    expect(done.response.result.content).toEqual([{ type: 'text', text: 'Hello Ada, you like teal' }]);
  });

  it('refuses a tampered state, and a state carried to another tool, before the server sees it', async () => {
    const { requestState } = (await ask()).response.result;
    const answers = { inputResponses: { name: accept({ name: 'Eve' }) } };
    const tampered = await ask({ ...answers, requestState: `${requestState}-TAMPERED` });
    expect(tampered.response.error).toMatchObject({ code: -32602, data: { reason: 'invalid-request', requestState: 'invalid' } });
    const elsewhere = await modernPost(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!, 'tools/call', { name: 'echo', arguments: { message: 'x' }, ...answers, requestState }, { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
    expect(elsewhere.response.error).toMatchObject({ code: -32602, data: { requestState: 'invalid' } });
  });
});

describe('a legacy SDK client and a modern stdio server', () => {
  it('cancels a call whose agent leaves before any answer, and closes its channel (review s24: under Deno the request\'s abort never came)', async () => {
    const channels = async () => (await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')!.channels;
    const cancelled = async () => JSON.parse((await post('tools/call', { name: 'cancelled', arguments: {} })).response.result.content[0].text) as unknown[];
    const before = { channels: await channels(), cancelled: (await cancelled()).length };
    // A connection of its own, as an agent that goes away closes it.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const request = httpRequest(`${stack.url}/servers/modern/mcp`, {
      agent,
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.alice}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'wait' },
    });
    const ended = new Promise<void>((resolve) => {
      request.on('error', () => resolve());
      request.on('response', (response) => response.on('error', () => resolve()).on('close', () => resolve()).resume());
    });
    request.end(JSON.stringify({ jsonrpc: '2.0', id: 'left-1', method: 'tools/call', params: { name: 'wait', arguments: {}, _meta: modernMeta() } }));
    await waitUntil(async () => (await channels()) > before.channels, 'the call\'s channel to open');
    request.destroy();
    await ended;
    agent.destroy();
    await waitUntil(async () => (await channels()) === before.channels, 'the call\'s channel to close');
    await waitUntil(async () => (await cancelled()).length === before.cancelled + 1, 'the server to be told the call is cancelled');
  });

  it('initializes, lists and calls echo through /servers/:name/mcp, while a modern agent uses the same server', async () => {
    const client = await connectClient(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!);
    try {
      expect(client.getServerVersion()).toEqual({ name: 'modern-echo-fixture', version: '1.0.0' });
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo', 'wait', 'cancelled', 'touch-tools', 'ask', 'regional']);
      const [legacy, modern] = await Promise.all([
        client.callTool({ name: 'echo', arguments: { message: 'from a legacy session' } }),
        post('tools/call', { name: 'echo', arguments: { message: 'from a modern agent' } }),
      ]);
      expect(legacy.content).toEqual([{ type: 'text', text: 'Echo: from a legacy session' }]);
      expect(modern.response.result.content).toEqual([{ type: 'text', text: 'Echo: from a modern agent' }]);
    } finally {
      await closeClient(client);
    }
  });
});

describe("a legacy SDK client and a modern server's change notifications", () => {
  it('hears tools/list_changed through the listen the host keeps open for its session', async () => {
    const client = await connectClient(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!);
    const heard = new Promise<unknown>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => resolve(notification)));
    try {
      const touched = await client.callTool({ name: 'touch-tools', arguments: {} });
      expect(touched.content).toEqual([{ type: 'text', text: 'Notified 1' }]);
      expect(await heard).toEqual({ method: 'notifications/tools/list_changed' });
    } finally {
      await closeClient(client);
    }
  });
});

describe('a legacy SDK client answering a modern server\'s InputRequiredResult', () => {
  it('gets each round\'s input requests as real elicitations over its session, and the final result of the retries', async () => {
    const client = await connectClient(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!, { elicitation: {} });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const message = request.params.message;
      asked.push(message);
      return { action: 'accept', content: message === 'Your name?' ? { name: 'Ada' } : { colour: 'green' } };
    });
    try {
      const result = await client.callTool({ name: 'ask', arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: 'Hello Ada, you like green' }]);
      expect(asked).toEqual(['Your name?', 'Your favourite colour?']);
      // The session goes on: a plain call after the rounds.
      expect((await client.callTool({ name: 'echo', arguments: { message: 'after' } })).content).toEqual([{ type: 'text', text: 'Echo: after' }]);
    } finally {
      await closeClient(client);
    }
  });

  it('gets the server\'s -32021 when it did not declare elicitation at initialize', async () => {
    const client = await connectClient(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!);
    try {
      await expect(client.callTool({ name: 'ask', arguments: {} })).rejects.toMatchObject({ code: -32021 });
    } finally {
      await closeClient(client);
    }
  });
});
