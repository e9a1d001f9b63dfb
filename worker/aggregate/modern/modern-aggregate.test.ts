/**
 * The modern `/mcp` aggregate through the whole worker app, with a fake host behind the router
 * that acknowledges every listen stream: what an aggregate listen holds of the agent's
 * `max-requests-per-agent`, and what it leaves open when it cannot start.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryChannelPair, type ChannelTransport } from '../../../shared/channel-transport.ts';
import type { McpConnection } from '../../../shared/connection-request.ts';
import { BASE, testConfig } from '../../../test/support/in-process-app.ts';
import { createApp } from '../../app.ts';
import type { ChannelOpenOptions, ChannelRouter } from '../../routing/channel-router.ts';
import { InMemorySessionTable } from '../../sessions/session-table.ts';
import { AgentRequestCounters } from '../../sessions/request-limits.ts';
import { silentWorkerLogger } from '../../log.ts';
import { classifyEra } from '../../modern/era.ts';
import { serveModernAggregate } from './modern-aggregate.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const ACK = 'notifications/subscriptions/acknowledged';

/** Acknowledges each listen, answers each list with `resources`, and keeps every host end it opened. */
class ListeningHost implements ChannelRouter {
  readonly opened: ChannelTransport[] = [];
  /** Opens of server `failOpenOf`, or every open of a request that is not a listen, throw a plain Error (a bug, not a refusal). */
  failOpenOf: string | 'requests' | undefined;
  /** A server whose requests the host never answers (one still starting, or hung). */
  silent: string | undefined;

  async open(_descriptor: unknown, connection: McpConnection, _trust: unknown, options: ChannelOpenOptions = {}): Promise<ChannelTransport> {
    if (connection['server-name'] === this.failOpenOf || (this.failOpenOf === 'requests' && options.first !== undefined)) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      throw new Error('open failed unexpectedly');
    }
    const [channel, host] = createInMemoryChannelPair();
    host.onmessage = (message) => {
      const { id, method, params } = message as { id: string | number; method: string; params: Record<string, any> };
      if (connection['server-name'] === this.silent) return;
      if (method === 'subscriptions/listen') {
        void host.send({ jsonrpc: '2.0', method: ACK, params: { _meta: { 'io.modelcontextprotocol/subscriptionId': id }, notifications: params.notifications } } as JSONRPCMessage);
      } else {
        void host.send({ jsonrpc: '2.0', id, result: { resultType: 'complete', resources: [], resourceTemplates: [] } }).then(() => host.close());
      }
    };
    await host.start();
    this.opened.push(channel);
    return channel;
  }

  get stillOpen(): number {
    return this.opened.filter((c) => !c.closed).length;
  }
}

let sessions: InMemorySessionTable | undefined;
afterEach(() => sessions?.dispose());

async function start(extra: Record<string, unknown> = {}, requestCounters?: AgentRequestCounters) {
  const config = await testConfig([{ name: 'alice', servers: ['a', 'b'] }], ['a', 'b'], extra);
  const host = new ListeningHost();
  sessions = new InMemorySessionTable({ idleMs: 60_000 });
  const app = createApp({ config, router: host, sessions, ...(requestCounters !== undefined ? { requestCounters } : {}) });
  const post = (path: string, id: string | number, notifications: Record<string, unknown> = { toolsListChanged: true }) =>
    app.request(`${BASE}${path}`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: META } }),
    });
  const ask = (method: string, id: number) =>
    app.request(`${BASE}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { _meta: META } }),
    });
  const read = (uri: string, id: number) =>
    app.request(`${BASE}/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': uri },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri, _meta: META } }),
    });
  return { host, post, ask, read };
}

describe('subscriptions/listen on the modern /mcp aggregate', () => {
  it("takes one of the agent's max-requests-per-agent slots until the stream is cancelled, and past the cap answers limit-reached", async () => {
    const { host, post } = await start({ 'max-requests-per-agent': 2 });
    const first = await post('/servers/a/mcp', 1);
    expect(first.headers.get('content-type')).toBe('text/event-stream');
    const across = await post('/mcp', 2);
    expect(across.status).toBe(200);
    expect(across.headers.get('content-type')).toBe('text/event-stream');
    const opened = host.opened.length;

    const refused = await post('/mcp', 3);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32012, message: 'Agent "alice" already has 2 requests in flight: wait for their answers before sending more, or raise max-requests-per-agent in the worker config', data: { reason: 'limit-reached', agent: 'alice', limit: 2 } },
    });
    expect((await post('/servers/b/mcp', 4)).status).toBe(429);
    expect(host.opened).toHaveLength(opened);

    // Cancelling the aggregate stream closes its channels and gives its slot back.
    await across.body!.cancel();
    expect(host.opened.slice(1).every((c) => c.closed)).toBe(true);
    const again = await post('/mcp', 5);
    expect(again.status).toBe(200);
    await again.body!.cancel();
    await first.body!.cancel();
  });

  it("counts what the stream holds unread against the agent's unread budget", async () => {
    const counters = new AgentRequestCounters();
    const { post } = await start({}, counters);
    const alice = counters.of({ name: 'alice' });
    const across = await post('/mcp', 6);
    expect(across.headers.get('content-type')).toBe('text/event-stream');
    // The acknowledgement waits, unread, in the stream.
    expect(alice.unreadBytes).toBeGreaterThan(0);
    const reader = across.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain(ACK);
    expect(alice.unreadBytes).toBe(0);
    await reader.cancel();
  });

  it.each([
    ['an open of another server throws', 'b', {}],
    ['routing the watched URIs throws', 'requests', { resourceSubscriptions: ['x://1'] }],
  ] as const)('closes the listen channels already open and gives the slot back when %s', async (_case, fail, notifications) => {
    // Called directly: the app's opener turns a router's throw into a refusal, so this is a bug's path.
    const config = await testConfig([{ name: 'alice', servers: ['a', 'b'] }], ['a', 'b']);
    const host = new ListeningHost();
    host.failOpenOf = fail;
    const requestCounters = new AgentRequestCounters();
    const deps = { config, open: host.open.bind(host), log: silentWorkerLogger, requestCounters };
    const request = new Request(`${BASE}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications, _meta: META } }),
    });
    const era = await classifyEra(request);
    if (era.kind === 'legacy') throw new Error('not modern');
    await expect(serveModernAggregate(request, era, config.agents[0]!, deps)).rejects.toThrow('open failed unexpectedly');
    expect(host.opened.length).toBeGreaterThan(0);
    expect(host.stillOpen).toBe(0);
    // The routing questions that had not failed yet give theirs back as their opens fail too.
    await expect.poll(() => requestCounters.of({ name: 'alice' }).inFlight).toBe(0);
  });
});

describe('the modern /mcp aggregate at the agent\'s request cap', () => {
  it('answers a list the cap cuts short with limit-reached, not with a healthy server marked unavailable', async () => {
    const { ask } = await start({ 'max-requests-per-agent': 1 });
    const refused = await ask('tools/list', 9);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      id: 9,
      error: { code: -32012, message: 'Agent "alice" already has 1 requests in flight: wait for their answers before sending more, or raise max-requests-per-agent in the worker config', data: { reason: 'limit-reached', agent: 'alice', limit: 1 } },
    });
    // Within the cap the servers are asked as before.
    const { ask: roomy } = await start({ 'max-requests-per-agent': 2 });
    const listed = await roomy('tools/list', 10);
    expect(listed.status).toBe(200);
    expect(await listed.json()).toMatchObject({ id: 10, result: { tools: [] } });
  });
});

describe('the modern /mcp aggregate with a server that does not answer', () => {
  it('answers the merged lists and discover without it, as starting and stale at once, and abandons its questions', async () => {
    const { host, ask } = await start({ 'aggregate-start-wait-seconds': 0.2 });
    host.silent = 'b';
    const listed = (await (await ask('tools/list', 11)).json()) as { result: { tools: Array<{ name: string; description: string }>; ttlMs: number } };
    expect(listed.result.tools.map((t) => t.name)).toEqual(['b__unavailable']);
    expect(listed.result.tools[0]!.description).toContain('Server "b" is unavailable (reason: starting): it did not answer within 0.2 s');
    expect(listed.result.ttlMs).toBe(0);
    const discovered = (await (await ask('server/discover', 12)).json()) as { result: { instructions: string; ttlMs: number } };
    expect(discovered.result.instructions).toContain('Available: a.');
    expect(discovered.result.instructions).toContain('- b: starting: it did not answer within 0.2 s and may still be starting: list again');
    expect(discovered.result.ttlMs).toBe(0);
    // The questions to b were abandoned as an agent leaving abandons them: their channels closed.
    await expect.poll(() => host.stillOpen).toBe(0);
  });

  it('answers a resource read no server that answered within the start wait names, neither held by the one that did not nor guessed to the one that did (review s20)', async () => {
    const { host, read } = await start({ 'aggregate-start-wait-seconds': 0.2 });
    host.silent = 'b';
    const answered = (await (await read('test://nowhere/x', 14)).json()) as { error: { message: string; data: Record<string, unknown> } };
    expect(answered.error).toMatchObject({ message: 'Resource not found', data: { uri: 'test://nowhere/x', reason: 'invalid-request' } });
  });

  it("gives back the slot of a question it stopped waiting for at once: the agent did not leave", async () => {
    // Review isolation-review.md, finding 5: it was held 10 s, as a call the agent cancelled.
    const counters = new AgentRequestCounters();
    const { host, ask } = await start({ 'aggregate-start-wait-seconds': 0.2 }, counters);
    host.silent = 'b';
    const listed = await ask('tools/list', 13);
    expect(listed.status).toBe(200);
    await listed.text();
    await expect.poll(() => host.stillOpen).toBe(0);
    expect(counters.of({ name: 'alice' }).inFlight).toBe(0);
  });
});
