/**
 * Modern (2026-07-28) agents on HTTP MCP servers, through the real stack (worker under Deno, the
 * sidecar CLI), each server reached two ways:
 * - a host's HTTP target (`web`, `web-modern`): the sidecar keeps the agent's instance over HTTP,
 *   legacy (initialized by the host) or modern, as its era probe says;
 * - edge-direct (`direct`, `direct-modern`): the worker sends each request modern first and, to a
 *   legacy server, on a short legacy session of its own.
 * The legacy server is server-everything in its Streamable HTTP mode; the modern one
 * `modern-echo-server.mjs` behind `modern-http-server.mjs`. Legacy SDK clients use the same
 * servers at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { ProcessSet, startEverythingHttp, startModernHttp, waitUntil } from '../support/processes.ts';
import { HOST_A, startStack, type Stack } from '../support/stack.ts';
import { modernPost, MODERN, type ModernAnswer } from './modern-client.ts';

const procs = new ProcessSet();
let stack: Stack;
let modernUrl: string;
let everythingOut: () => string;
const url = (server: string) => `${stack.url}/servers/${server}/mcp`;
const bob = (server: string, method: string, params?: Record<string, unknown>, call?: Parameters<typeof modernPost>[4]) =>
  modernPost(url(server), stack.tokens.bob!, method, params, call);
const textOf = (answer: ModernAnswer): string => answer.response.result?.content?.[0]?.text;
const toolNames = (answer: ModernAnswer): string[] => (answer.response.result.tools as Array<{ name: string }>).map((t) => t.name);

beforeAll(async () => {
  const everything = await startEverythingHttp(procs);
  everythingOut = () => everything.process.stdout();
  const modern = await startModernHttp(procs, fixtureServer('modern-echo-server.mjs').args[0]!);
  modernUrl = modern.url;
  const onA = { type: 'user-computer-profile', 'entity-id': HOST_A, target: { type: 'local' } };
  stack = await startStack({
    servers: { web: { url: everything.url }, 'web-modern': { url: modern.url }, 'web-modern-unprobed': { url: modern.url } },
    worker: {
      servers: {
        web: { executor: onA },
        'web-modern': { executor: onA },
        'web-modern-unprobed': { executor: onA },
        direct: { executor: { type: 'http', url: everything.url } },
        'direct-modern': { executor: { type: 'http', url: modern.url } },
        offline: { executor: { type: 'reverse-http', 'entity-id': 'res-host-b' } },
      },
    },
    agents: [{ name: 'bob', servers: ['web', 'direct', 'web-modern', 'direct-modern', 'web-modern-unprobed'] }],
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
  await procs.stopAll();
});

describe.each(['web', 'direct', 'web-modern', 'direct-modern'])('a modern agent on the HTTP server %s', (server) => {
  const legacy = !server.endsWith('-modern');

  it('discovers it and calls a tool, statelessly, the result modern', async () => {
    const discover = await bob(server, 'server/discover');
    expect(discover.status).toBe(200);
    expect(discover.response.result).toMatchObject({ resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: expect.any(Object) } });
    expect(discover.response.result._meta['io.modelcontextprotocol/serverInfo'].name).toEqual(legacy ? expect.any(String) : 'modern-echo-fixture');
    const call = await bob(server, 'tools/call', { name: 'echo', arguments: { message: `modern on ${server}` } });
    expect(call.status).toBe(200);
    expect(call.headers.get('mcp-session-id')).toBeNull();
    expect(call.response.result.resultType).toBe('complete');
    expect(textOf(call)).toBe(`Echo: modern on ${server}`);
  });

  it('lists tools with caching hints: the host\'s defaults for a legacy server, the modern server\'s own', async () => {
    const list = await bob(server, 'tools/list');
    expect(list.response.result).toMatchObject(legacy ? { resultType: 'complete', ttlMs: 0, cacheScope: 'private' } : { resultType: 'complete', ttlMs: expect.any(Number) });
    expect(toolNames(list)).toContain('echo');
  });

  it('streams progress on the request\'s own SSE response, then the result', async () => {
    const answer = legacy
      ? await bob(server, 'tools/call', { name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 2 } }, { meta: { progressToken: 'p-1' } })
      : await bob(server, 'tools/call', { name: 'echo', arguments: { message: 'with progress' } }, { meta: { progressToken: 'p-1' } });
    expect(answer.sse).toBe(true);
    const progress = answer.messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.every((m) => m.params.progressToken === 'p-1')).toBe(true);
    expect(answer.response.result.resultType).toBe('complete');
  });

  it('gives three concurrent calls each its own answer', async () => {
    const calls = await Promise.all(['one', 'two', 'three'].map((message) => bob(server, 'tools/call', { name: 'echo', arguments: { message } })));
    expect(calls.map(textOf)).toEqual(['Echo: one', 'Echo: two', 'Echo: three']);
  });
});

it.each(['web', 'direct'])('serves a legacy SDK client and a modern agent on the legacy HTTP server %s at the same time', async (server) => {
  const client = await connectClient(url(server), stack.tokens.bob!);
  try {
    const [legacyCall, modernCall] = await Promise.all([
      client.callTool({ name: 'echo', arguments: { message: 'legacy side' } }),
      bob(server, 'tools/call', { name: 'echo', arguments: { message: 'modern side' } }),
    ]);
    expect((legacyCall.content as Array<{ text: string }>)[0]!.text).toBe('Echo: legacy side');
    expect(textOf(modernCall)).toBe('Echo: modern side');
  } finally {
    await closeClient(client);
  }
});

describe('a legacy SDK client on a host\'s modern-only HTTP server', () => {
  it('finds the server modern by its refusal of the agent\'s initialize, when no modern agent has probed it, and goes on the modern way', async () => {
    const posts = async () => ((await (await fetch(modernUrl.replace(/\/mcp$/, '/posts'))).json()) as Array<{ method: string }>).map((post) => post.method);
    const before = (await posts()).length;
    const client = await connectClient(url('web-modern-unprobed'), stack.tokens.bob!);
    try {
      expect(client.getServerVersion()).toEqual({ name: 'modern-echo-fixture', version: '1.0.0' });
      expect((await client.callTool({ name: 'echo', arguments: { message: 'after a refusal' } })).content).toEqual([{ type: 'text', text: 'Echo: after a refusal' }]);
      const methods = (await posts()).slice(before);
      expect(methods.slice(0, 2)).toEqual(['initialize', 'server/discover']);
      expect(methods.filter((method) => method === 'initialize')).toHaveLength(1);
      // Asked once: the answer that explained the refusal is the one the session is opened from.
      expect(methods.filter((method) => method === 'server/discover')).toHaveLength(1);
    } finally {
      await closeClient(client);
    }
  });
});

describe.each(['web-modern', 'direct-modern'])('a legacy SDK client on the modern-only HTTP server %s', (server) => {
  it('is initialized from the server\'s server/discover, lists and calls echo, while a modern agent uses the same server', async () => {
    const client = await connectClient(url(server), stack.tokens.bob!);
    try {
      expect(client.getServerVersion()).toEqual({ name: 'modern-echo-fixture', version: '1.0.0' });
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'touch-tools', 'ask']));
      const [legacyCall, modernCall] = await Promise.all([
        client.callTool({ name: 'echo', arguments: { message: 'legacy side' } }),
        bob(server, 'tools/call', { name: 'echo', arguments: { message: 'modern side' } }),
      ]);
      expect(legacyCall.content).toEqual([{ type: 'text', text: 'Echo: legacy side' }]);
      expect(textOf(modernCall)).toBe('Echo: modern side');
    } finally {
      await closeClient(client);
    }
  });

  it('hears tools/list_changed through the listen kept open for its session', async () => {
    const client = await connectClient(url(server), stack.tokens.bob!);
    const heard = new Promise<unknown>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => resolve(notification)));
    try {
      expect((await client.callTool({ name: 'touch-tools', arguments: {} })).content).toEqual([{ type: 'text', text: expect.stringMatching(/^Notified [1-9]/) }]);
      expect(await heard).toEqual({ method: 'notifications/tools/list_changed' });
    } finally {
      await closeClient(client);
    }
  });

  it('answers the server\'s InputRequiredResult rounds as real elicitations over its session', async () => {
    const client = await connectClient(url(server), stack.tokens.bob!, { elicitation: {} });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: request.params.message === 'Your name?' ? { name: 'Ada' } : { colour: 'green' } };
    });
    try {
      expect((await client.callTool({ name: 'ask', arguments: {} })).content).toEqual([{ type: 'text', text: 'Hello Ada, you like green' }]);
      expect(asked).toEqual(['Your name?', 'Your favourite colour?']);
    } finally {
      await closeClient(client);
    }
  });
});

describe('what differs between a host\'s HTTP target and an edge-direct server', () => {
  it('bridges a legacy server\'s elicitation on a host\'s target into an InputRequiredResult, and the retry gets the real result', async () => {
    const caps = { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } };
    const first = await bob('web', 'tools/call', { name: 'trigger-elicitation-request', arguments: {} }, caps);
    expect(first.response.result).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const [key] = Object.keys(first.response.result.inputRequests);
    const retry = await bob('web', 'tools/call', {
      name: 'trigger-elicitation-request', arguments: {},
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada', check: true } } }, requestState: first.response.result.requestState,
    }, caps);
    expect(retry.response.result.resultType).toBe('complete');
    expect(retry.response.result.content.map((c: { text: string }) => c.text).join('\n')).toContain('Name: Ada');
  });

  it('tells an edge-direct legacy server that its client answers nothing: the tools that would ask are not offered', async () => {
    const viaHost = toolNames(await bob('web', 'tools/list'));
    const direct = toolNames(await bob('direct', 'tools/list'));
    expect(viaHost).toContain('trigger-elicitation-request');
    expect(direct).not.toContain('trigger-elicitation-request');
    const call = await bob('direct', 'tools/call', { name: 'trigger-elicitation-request', arguments: {} }, { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } });
    expect(call.response.result?.resultType === 'input_required').toBe(false);
    expect(call.response.error ?? call.response.result.isError).toBeTruthy();
  });

  it('ends the short legacy session of every edge-direct request: each session the worker opened gets its DELETE', async () => {
    const sessions = (pattern: RegExp) => new Set([...everythingOut().matchAll(pattern)].map((m) => m[1]!));
    const before = sessions(/Session initialized with ID: (\S+)/g);
    const calls = await Promise.all(['a', 'b', 'c'].map((message) => bob('direct', 'tools/call', { name: 'echo', arguments: { message } })));
    expect(calls.map(textOf)).toEqual(['Echo: a', 'Echo: b', 'Echo: c']);
    const opened = [...sessions(/Session initialized with ID: (\S+)/g)].filter((id) => !before.has(id));
    expect(opened).toHaveLength(3);
    await waitUntil(() => opened.every((id) => sessions(/session termination request for session (\S+)/g).has(id)), 'the three sessions to be deleted');
  });

  it('ends an edge-direct legacy call\'s session when the agent closes its stream, while the tool still runs', async () => {
    const sessions = (pattern: RegExp) => new Set([...everythingOut().matchAll(pattern)].map((m) => m[1]!));
    const before = sessions(/Session initialized with ID: (\S+)/g);
    const abort = new AbortController();
    const response = await fetch(url('direct'), {
      method: 'POST', signal: abort.signal,
      headers: { authorization: `Bearer ${stack.tokens.bob}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'trigger-long-running-operation' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'long-1', method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 120 }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, progressToken: 'long' } } }),
    });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('notifications/progress');
    const [opened] = [...sessions(/Session initialized with ID: (\S+)/g)].filter((id) => !before.has(id));
    abort.abort();
    await reader.cancel().catch(() => {});
    await waitUntil(() => sessions(/session termination request for session (\S+)/g).has(opened!), 'the cancelled call\'s session to be deleted');
  });

  it('answers a missing resource on an edge-direct legacy server with -32602 naming the uri', async () => {
    const uri = 'demo://resource/static/document/nope.md';
    const answer = await bob('direct', 'resources/read', { uri });
    expect(answer.response.error).toMatchObject({ code: -32602, data: { uri } });
  });

  it.each(['direct-modern', 'web-modern'])('sends the modern server %s the mirrored headers, Mcp-Param-* included (it checks them), and no Switchyard _meta', async (server) => {
    const answer = await bob(server, 'tools/call', { name: 'regional', arguments: { region: 'eu-west', count: 3 } }, { headers: { 'mcp-param-region': 'eu-west', 'mcp-param-count': '3' } });
    expect(answer.response.result?.resultType).toBe('complete');
    expect(textOf(answer)).toBe('Region eu-west, count 3');
    const posts = (await (await fetch(modernUrl.replace(/\/mcp$/, '/posts'))).json()) as Array<{ method: string; headers: Record<string, string>; meta: string[] }>;
    const regional = posts.filter((p) => p.method === 'tools/call' && p.headers['mcp-name'] === 'regional').at(-1)!;
    expect(regional.headers).toMatchObject({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-param-region': 'eu-west', 'mcp-param-count': '3' });
    expect(regional.meta.filter((key) => key.startsWith('dev.switchyard/'))).toEqual([]);
  });

  it('acknowledges a listen on an edge-direct legacy server with nothing honoured: the worker holds no session to hear changes on', async () => {
    const abort = new AbortController();
    const response = await fetch(url('direct'), {
      method: 'POST', signal: abort.signal,
      headers: { authorization: `Bearer ${stack.tokens.bob}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    const ack = JSON.parse(/data: (.*)/.exec(text)![1]!);
    expect(ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: {}, _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-1' } } });
    abort.abort();
    await reader.cancel().catch(() => {});
  });
});

describe('/mcp with HTTP servers, for a legacy SDK client', () => {
  it('lists every server\'s tools namespaced, the modern-only ones bridged too, and calls each', async () => {
    const client = await connectClient(`${stack.url}/mcp`, stack.tokens.bob!);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['web__echo', 'direct__echo', 'web-modern__echo', 'direct-modern__echo']));
      const calls = await Promise.all(['web', 'direct', 'web-modern', 'direct-modern'].map((server) => client.callTool({ name: `${server}__echo`, arguments: { message: server } })));
      expect(calls.map((call) => (call.content as Array<{ text: string }>)[0]!.text)).toEqual(['Echo: web', 'Echo: direct', 'Echo: web-modern', 'Echo: direct-modern']);
    } finally {
      await closeClient(client);
    }
  });
});

describe('/mcp with HTTP servers, in the modern era', () => {
  it('lists every server\'s tools namespaced and calls each through its own route', async () => {
    const aggregate = (method: string, params?: Record<string, unknown>) => modernPost(`${stack.url}/mcp`, stack.tokens.bob!, method, params);
    const names = toolNames(await aggregate('tools/list'));
    expect(names).toEqual(expect.arrayContaining(['web__echo', 'direct__echo', 'web-modern__echo', 'direct-modern__echo']));
    const calls = await Promise.all(['web', 'direct', 'web-modern', 'direct-modern'].map((server) => aggregate('tools/call', { name: `${server}__echo`, arguments: { message: server } })));
    expect(calls.map(textOf)).toEqual(['Echo: web', 'Echo: direct', 'Echo: web-modern', 'Echo: direct-modern']);
  });
});
