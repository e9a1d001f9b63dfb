/**
 * The modern front door through the whole worker app (auth, Host/Origin, the passthrough route),
 * with a fake host behind the router: each open hands the test the host's end of an in-memory
 * channel, so it can answer, notify or hang up as a sidecar would.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createInMemoryChannelPair, type ChannelTransport } from '../../shared/channel-transport.ts';
import type { McpConnection } from '../../shared/connection-request.ts';
import { WireError } from '../../shared/errors.ts';
import { BASE, testConfig } from '../../test/support/in-process-app.ts';
import { createApp } from '../app.ts';
import type { ChannelOpenOptions, ChannelRouter } from '../routing/channel-router.ts';
import { createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import type { ChannelOpenHandler } from '../../shared/link/link-types.ts';
import { InMemorySessionTable } from '../sessions/session-table.ts';
import { AgentRequestCounters } from '../sessions/request-limits.ts';
import { advanceBy, advanceUntilSettled, useFakeClock } from '../../test/support/fake-clock.ts';
import { ABORT_WATCH_MS } from './modern-relay.ts';
import { HELD_ANSWER_MIN_CHARS } from '../sessions/answer-stream.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

interface HostEnd {
  connection: McpConnection;
  channel: ChannelTransport;
  host: ChannelTransport;
  received: Promise<JSONRPCMessage>;
}

class FakeHost implements ChannelRouter {
  readonly opens: HostEnd[] = [];
  failure: WireError | undefined;
  #waiters: Array<(end: HostEnd) => void> = [];

  async open(_descriptor: unknown, connection: McpConnection): Promise<ChannelTransport> {
    if (this.failure !== undefined) throw this.failure;
    const [channel, host] = createInMemoryChannelPair();
    const received = new Promise<JSONRPCMessage>((resolve) => {
      host.onmessage = resolve;
    });
    await host.start();
    const end = { connection, channel, host, received };
    this.opens.push(end);
    this.#waiters.shift()?.(end);
    return channel;
  }

  /** The next channel opened (or the one already opened and not yet taken). */
  next(index: number): Promise<HostEnd> {
    const end = this.opens[index];
    return end !== undefined ? Promise.resolve(end) : new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/** A host behind a real link: the router opens on the worker's end of an in-memory link, as the registry does. */
class LinkedHost implements ChannelRouter {
  readonly worker: LinkEndpoint;
  readonly host: LinkEndpoint;
  /** Frame types the worker's end sent, in order. */
  readonly sent: string[] = [];

  constructor(onOpen: ChannelOpenHandler) {
    const [workerSocket, hostSocket] = createFrameSocketPair();
    this.worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'laptop', liveness: false });
    this.host = new LinkEndpoint(hostSocket, { role: 'sidecar', onOpen, liveness: false });
    this.worker.onFrame = (direction, text) => direction === 'out' && this.sent.push(JSON.parse(text).type);
  }

  open(_descriptor: unknown, connection: McpConnection, _trust: unknown, options: ChannelOpenOptions = {}): Promise<ChannelTransport> {
    return this.worker.openChannel({ type: 'mcp', connection }, options);
  }
}

let sessions: InMemorySessionTable | undefined;
afterEach(() => sessions?.dispose());

async function start<H extends ChannelRouter = FakeHost>(extra: Record<string, unknown> = {}, router?: H, requestCounters?: AgentRequestCounters) {
  const config = await testConfig([{ name: 'alice', servers: ['everything'] }, { name: 'bob', servers: [] }], ['everything'], extra);
  const host = router ?? (new FakeHost() as unknown as H);
  sessions = new InMemorySessionTable({ idleMs: 60_000 });
  // Counters of its own: a slot one test leaves held (a cancelled request's grace) is not the next one's.
  const app = createApp({ config, router: host, sessions, requestCounters: requestCounters ?? new AgentRequestCounters() });
  const post = (body: unknown, headers: Record<string, string> = {}, init: RequestInit = {}) =>
    app.request(`${BASE}/servers/everything/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', ...headers },
      body: JSON.stringify(body),
      ...init,
    });
  return { app, host, post };
}

const toolsList = (id: number | string = 1) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: META } });

describe('modern requests on /servers/:name/mcp', () => {
  it('opens one modern channel per request, relays the answer as JSON, closes the channel, and sets no session', async () => {
    const { host, post } = await start();
    const answered = post(toolsList(5), { 'mcp-method': 'tools/list' });
    const end = await host.next(0);
    expect(end.connection).toMatchObject({ 'server-name': 'everything', agent: 'alice', era: 'modern', session: expect.stringMatching(/^modern-/) });
    expect(await end.received).toEqual(toolsList(5));
    await end.host.send({ jsonrpc: '2.0', id: 5, result: { resultType: 'complete', tools: [], ttlMs: 0, cacheScope: 'private' } });
    const response = await answered;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 5, result: { resultType: 'complete', tools: [], ttlMs: 0, cacheScope: 'private' } });
    expect(end.channel.closed).toBe(true);
    expect(sessions!.size).toBe(0);
  });

  it('gives each request its own channel and session id', async () => {
    const { host, post } = await start();
    const first = post(toolsList(1), { 'mcp-method': 'tools/list' });
    const second = post(toolsList(2), { 'mcp-method': 'tools/list' });
    const [a, b] = [await host.next(0), await host.next(1)];
    expect(a.connection.session).not.toBe(b.connection.session);
    for (const end of [b, a]) {
      const request = (await end.received) as { id: number };
      await end.host.send({ jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', tools: [{ name: `t${request.id}`, inputSchema: { type: 'object' } }] } });
    }
    expect(((await (await first).json()) as { result: { tools: Array<{ name: string }> } }).result.tools[0]!.name).toBe('t1');
    expect(((await (await second).json()) as { result: { tools: Array<{ name: string }> } }).result.tools[0]!.name).toBe('t2');
  });

  it('switches to SSE when a notification comes before the response, and ends the stream with it', async () => {
    const { host, post } = await start();
    const call = { jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { ...META, progressToken: 'p' } } };
    const answered = post(call, { 'mcp-method': 'tools/call', 'mcp-name': 'slow' });
    const end = await host.next(0);
    await end.received;
    await end.host.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1, total: 2 } });
    const response = await answered;
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('mcp-session-id')).toBeNull();
    await end.host.send({ jsonrpc: '2.0', id: 99, method: 'elicitation/create', params: {} } as JSONRPCMessage);
    await end.host.send({ jsonrpc: '2.0', id: 'c1', result: { resultType: 'complete', content: [] } });
    const events = (await response.text()).split('\n\n').filter(Boolean).map((e) => JSON.parse(e.replace(/^event: message\ndata: /, '')));
    expect(events).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1, total: 2 } },
      { jsonrpc: '2.0', id: 'c1', result: { resultType: 'complete', content: [] } },
    ]);
    expect(end.channel.closed).toBe(true);
  });

  it('closes the channel when the agent aborts before the answer', async () => {
    const { host, post } = await start();
    const abort = new AbortController();
    const answered = post(toolsList(3), { 'mcp-method': 'tools/list' }, { signal: abort.signal });
    const end = await host.next(0);
    await end.received;
    const hostClosed = new Promise<void>((resolve) => {
      end.host.onclose = resolve;
    });
    abort.abort();
    await hostClosed;
    expect(end.channel.closed).toBe(true);
    await Promise.resolve(answered).catch(() => {});
  });

  it('answers a channel that closes with a failure with its reason and the request id', async () => {
    const { host, post } = await start();
    const answered = post(toolsList(4), { 'mcp-method': 'tools/list' });
    const end = await host.next(0);
    await end.received;
    await end.host.close({ reason: 'server-exited', message: 'The server exited: code 1' });
    const response = await answered;
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ id: 4, error: { code: -32009, data: { reason: 'server-exited' } } });
  });

  it('keeps 400 for a capability error the host returns', async () => {
    const { host, post } = await start();
    const answered = post({ jsonrpc: '2.0', id: 401, method: 'tools/call', params: { name: 'x', _meta: META } }, { 'mcp-method': 'tools/call', 'mcp-name': 'x' });
    const end = await host.next(0);
    await end.received;
    await end.host.send({ jsonrpc: '2.0', id: 401, error: { code: -32021, message: 'Missing', data: { requiredCapabilities: { sampling: {} } } } });
    expect((await answered).status).toBe(400);
  });

  it('refuses before any open: header mismatch, unsupported version, removed methods, bad meta', async () => {
    const { host, post } = await start();
    const mismatch = await post(toolsList(302), { 'mcp-method': 'prompts/list' });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.json()).toMatchObject({ id: 302, error: { code: -32020, data: { reason: 'invalid-request' } } });
    const version = await post({ jsonrpc: '2.0', id: 301, method: 'server/discover', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' } } }, { 'mcp-protocol-version': 'v999.0.0', 'mcp-method': 'server/discover' });
    expect(version.status).toBe(400);
    expect(await version.json()).toMatchObject({ id: 301, error: { code: -32022, data: { supported: ['2026-07-28'], requested: 'v999.0.0' } } });
    const init = await post({ jsonrpc: '2.0', id: 6, method: 'initialize', params: { _meta: META } }, { 'mcp-method': 'initialize' });
    expect(init.status).toBe(404);
    expect(await init.json()).toMatchObject({ id: 6, error: { code: -32601 } });
    const noMeta = await post({ jsonrpc: '2.0', id: 101, method: 'server/discover', params: {} }, { 'mcp-method': 'server/discover' });
    expect(noMeta.status).toBe(400);
    expect(await noMeta.json()).toMatchObject({ id: 101, error: { code: -32602 } });
    expect(host.opens).toHaveLength(0);
  });

  it('answers a notification 202, a modern GET without a session 405, and keeps legacy GET and POST answers', async () => {
    const { app, post } = await start();
    expect((await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: {} })).status).toBe(202);
    const auth = { authorization: 'Bearer alice-token' };
    const get = await app.request(`${BASE}/servers/everything/mcp`, { method: 'GET', headers: { ...auth, 'mcp-protocol-version': '2026-07-28' } });
    expect(get.status).toBe(405);
    const legacyGet = await app.request(`${BASE}/servers/everything/mcp`, { method: 'GET', headers: auth });
    expect(await legacyGet.json()).toMatchObject({ error: { message: 'Bad Request: Mcp-Session-Id header is required' } });
    const legacyPost = await post(toolsList(1), { 'mcp-protocol-version': '2025-11-25' });
    expect(await legacyPost.json()).toMatchObject({ error: { message: 'Bad Request: Mcp-Session-Id header is required' } });
  });

  it('applies auth, and answers a server the agent may not use like an unknown one, with the id', async () => {
    const { app, host } = await start();
    const headers = { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    const noToken = await app.request(`${BASE}/servers/everything/mcp`, { method: 'POST', headers, body: JSON.stringify(toolsList(1)) });
    expect(noToken.status).toBe(401);
    const bob = await app.request(`${BASE}/servers/everything/mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer bob-token' }, body: JSON.stringify(toolsList(8)) });
    expect(bob.status).toBe(404);
    expect(await bob.json()).toMatchObject({ id: 8, error: { data: { reason: 'server-not-found' } } });
    expect(host.opens).toHaveLength(0);
  });

  it('answers a refused open with its reason and the request id', async () => {
    const { host, post } = await start();
    host.failure = new WireError('host-offline', 'Host laptop is offline');
    const response = await post(toolsList(9), { 'mcp-method': 'tools/list' });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ id: 9, error: { data: { reason: 'host-offline' } } });
  });

  it('over a host\'s link, sends the request right behind the open, once: the host has it before it acks', async () => {
    const received: JSONRPCMessage[] = [];
    let framesAtOpen = -1;
    const linked = new LinkedHost(async (_request, channel) => {
      framesAtOpen = linked.host.stats.framesIn;
      channel.onmessage = (message) => {
        received.push(message);
        void channel.send({ jsonrpc: '2.0', id: 3, result: { resultType: 'complete', tools: [], ttlMs: 0, cacheScope: 'private' } }).then(() => channel.close());
      };
      await channel.start();
    });
    const { post } = await start({}, linked);
    const response = await post(toolsList(3), { 'mcp-method': 'tools/list' });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: 3, result: { tools: [] } });
    expect(framesAtOpen).toBe(1);
    expect(received).toEqual([toolsList(3)]);
    expect(linked.sent.slice(0, 2)).toEqual(['channel-open', 'channel-message']);
    expect(linked.sent.filter((type) => type === 'channel-message')).toHaveLength(1);
    linked.worker.close();
  });

  it('over a host\'s link, answers a refused open with its reason and the request id, exactly as an open refused without the request', async () => {
    const seen: JSONRPCMessage[] = [];
    const linked = new LinkedHost(async (_request, channel) => {
      channel.onmessage = (message) => seen.push(message);
      throw new WireError('trust-profile-stale', 'Trust profile "workspace" changed on this host: open the session again');
    });
    const { post } = await start({}, linked);
    const response = await post(toolsList(4), { 'mcp-method': 'tools/list' });
    const { host: fake, post: fakePost } = await start();
    fake.failure = new WireError('trust-profile-stale', 'Trust profile "workspace" changed on this host: open the session again');
    const unpipelined = await fakePost(toolsList(4), { 'mcp-method': 'tools/list' });
    expect(response.status).toBe(unpipelined.status);
    expect(await response.json()).toEqual(await unpipelined.json());
    expect(seen).toEqual([]);
    expect(linked.host.stats.channels).toBe(0);
    linked.worker.close();
  });

  it("refuses a request past the agent's max-requests-per-agent with limit-reached, opening nothing, until an answer is read", async () => {
    const { host, post } = await start({ 'max-requests-per-agent': 2 });
    const call = (id: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { ...META, progressToken: id } } });
    // One after the other: two requests posted at once may open their channels in either order.
    const streamed = post(call('a'), { 'mcp-method': 'tools/call', 'mcp-name': 'slow' });
    const a = await host.next(0);
    const held = post(toolsList(2), { 'mcp-method': 'tools/list' });
    const b = await host.next(1);
    await a.received;
    await a.host.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'a', progress: 1 } });
    const stream = await streamed;
    expect(stream.headers.get('content-type')).toBe('text/event-stream');

    const refused = await post(toolsList(3), { 'mcp-method': 'tools/list' });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32012, message: 'Agent "alice" already has 2 requests in flight: wait for their answers before sending more, or raise max-requests-per-agent in the worker config', data: { reason: 'limit-reached', agent: 'alice', limit: 2 } },
    });
    expect(host.opens).toHaveLength(2);

    // A streamed answer is in flight until the agent has read it to the end.
    await a.host.send({ jsonrpc: '2.0', id: 'a', result: { resultType: 'complete', content: [] } });
    expect((await post(toolsList(4), { 'mcp-method': 'tools/list' })).status).toBe(429);
    await stream.text();
    const next = post(toolsList(5), { 'mcp-method': 'tools/list' });
    const c = await host.next(2);
    expect(await c.received).toEqual(toolsList(5));
    await b.host.send({ jsonrpc: '2.0', id: 2, result: { resultType: 'complete', tools: [] } });
    await c.host.send({ jsonrpc: '2.0', id: 5, result: { resultType: 'complete', tools: [] } });
    expect([(await held).status, (await next).status]).toEqual([200, 200]);
  });

  it("ends the SSE answer when the agent aborts mid-stream, and keeps its slot for the grace a cancelled call gets, whether or not the body is ever read", async () => {
    useFakeClock();
    try {
      const counters = new AgentRequestCounters({ cancelGraceMs: 5_000 });
      const { host, post } = await start<FakeHost>({ 'max-requests-per-agent': 1 }, undefined, counters);
      const alice = counters.of({ name: 'alice' });
      const abort = new AbortController();
      const call = { jsonrpc: '2.0', id: 'p', method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { ...META, progressToken: 'p' } } };
      const streamed = post(call, { 'mcp-method': 'tools/call', 'mcp-name': 'slow' }, { signal: abort.signal });
      const a = await host.next(0);
      await a.received;
      await a.host.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } });
      const stream = await streamed;
      expect(stream.headers.get('content-type')).toBe('text/event-stream');
      // The agent's abort is watched once an answer has taken ABORT_WATCH_MS.
      await advanceBy(ABORT_WATCH_MS);
      const hostClosed = new Promise<void>((resolve) => {
        a.host.onclose = resolve;
      });
      abort.abort();
      await advanceUntilSettled(hostClosed, { stepMs: 1 });

      // Nobody has read or cancelled the body: the slot is still taken, the server may still be at work.
      expect(alice.inFlight).toBe(1);
      expect((await post(toolsList(2), { 'mcp-method': 'tools/list' })).status).toBe(429);
      await advanceBy(4_000);
      expect(alice.inFlight).toBe(1);
      await advanceBy(1_000);
      expect(alice.inFlight).toBe(0);
      const next = post(toolsList(3), { 'mcp-method': 'tools/list' });
      const b = await advanceUntilSettled(host.next(1), { stepMs: 1 });
      await b.received;
      await b.host.send({ jsonrpc: '2.0', id: 3, result: { resultType: 'complete', tools: [] } });
      expect((await next).status).toBe(200);
      // And the body has ended, with what it held.
      expect(await stream.text()).toContain('notifications/progress');
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps the slot of a modern call whose SSE body the agent cancels before the answer for the grace, and closes its channel", async () => {
    useFakeClock();
    try {
      const counters = new AgentRequestCounters({ cancelGraceMs: 5_000 });
      const { host, post } = await start<FakeHost>({ 'max-requests-per-agent': 1 }, undefined, counters);
      const alice = counters.of({ name: 'alice' });
      const call = { jsonrpc: '2.0', id: 'q', method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { ...META, progressToken: 'q' } } };
      const streamed = post(call, { 'mcp-method': 'tools/call', 'mcp-name': 'slow' });
      const a = await host.next(0);
      await a.received;
      await a.host.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'q', progress: 1 } });
      const stream = await streamed;
      const hostClosed = new Promise<void>((resolve) => {
        a.host.onclose = resolve;
      });
      await stream.body!.cancel();
      await advanceUntilSettled(hostClosed, { stepMs: 1 });
      expect(alice.inFlight).toBe(1);
      await advanceBy(5_000);
      expect(alice.inFlight).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
  it("keeps a slow reader's large answers past its unread budget, refuses its new requests while past it, and drops a large answer only past the hard bound", async () => {
    // Budget 64 KiB, hard bound 4 × that: answers 2 to 4 find alice past her budget and still reach her.
    const counters = new AgentRequestCounters({ maxUnreadBytes: HELD_ANSWER_MIN_CHARS });
    const { host, post } = await start<FakeHost>({ 'max-requests-per-agent': 10 }, undefined, counters);
    const alice = counters.of({ name: 'alice' });
    const bigResult = (id: number) => ({ jsonrpc: '2.0' as const, id, result: { resultType: 'complete', content: [{ type: 'text', text: 'x'.repeat(HELD_ANSWER_MIN_CHARS + 1) }] } });
    const pending: Array<Promise<Response> | Response> = [];
    const ends = [];
    // One after the other: requests posted at once may open their channels in either order.
    for (let id = 1; id <= 5; id++) {
      pending.push(post(toolsList(id), { 'mcp-method': 'tools/list' }));
      const end = await host.next(id - 1);
      await end.received;
      ends.push(end);
    }
    const answers: Response[] = [];
    for (let id = 1; id <= 5; id++) {
      await ends[id - 1]!.host.send(bigResult(id));
      answers.push(await pending[id - 1]!);
    }
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 429]);
    expect(await answers[4]!.json()).toEqual({ jsonrpc: '2.0', id: 5, error: { code: -32012, message: `Answer dropped: agent "alice" holds more than ${4 * HELD_ANSWER_MIN_CHARS} bytes of answers it has not read; read them before sending more requests`, data: { reason: 'limit-reached', agent: 'alice', limit: 4 * HELD_ANSWER_MIN_CHARS } } });
    expect(alice.inFlight).toBe(4);

    // Past her budget, a new request is refused before anything opens; nothing of her answers is lost.
    const refused = await post(toolsList(6), { 'mcp-method': 'tools/list' });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ jsonrpc: '2.0', id: 6, error: { code: -32012, message: `Agent "alice" holds more than ${HELD_ANSWER_MIN_CHARS} bytes of answers it has not read: read them before sending more requests`, data: { reason: 'limit-reached', agent: 'alice', limit: HELD_ANSWER_MIN_CHARS } } });
    expect(host.opens).toHaveLength(5);
    for (let id = 1; id <= 3; id++) expect(await answers[id - 1]!.json()).toEqual(bigResult(id));
    await answers[3]!.body!.cancel();
    expect([alice.inFlight, alice.unreadBytes]).toEqual([0, 0]);

    // Read, she is taken again.
    const again = post(toolsList(7), { 'mcp-method': 'tools/list' });
    const end = await host.next(5);
    expect(await end.received).toEqual(toolsList(7));
    await end.host.send({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', tools: [] } });
    expect((await again).status).toBe(200);
  });

  it('caps a modern body at 128 levels like a legacy one', async () => {
    const { host, post } = await start();
    let deep: unknown = 0;
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const response = await post({ jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'x', arguments: { deep }, _meta: META } }, { 'mcp-method': 'tools/call', 'mcp-name': 'x' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: 12, error: { code: -32600, data: { reason: 'invalid-request' } } });
    expect(host.opens).toHaveLength(0);
  });
});
