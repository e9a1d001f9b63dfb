/**
 * The modern (2026-07-28) `/mcp` aggregate on Cloudflare's runtime: the Workers bundle under
 * workerd, two real sidecar CLIs (hosts A and B) and a modern agent in raw HTTP. Each host runs
 * the pid fixture (its answers are the pid of the process that served them) and the modern echo
 * fixture; each sidecar's log says which processes it spawned, so an answer served by the wrong
 * host cannot pass.
 *
 * On top of the core's own test (`test/modern/modern-aggregate.test.ts`), this shows the edge
 * isolate fanning one request out to both hosts' Durable Objects at once, a question's retry
 * (MRTR) reaching the same host's instance again from a fresh request, and listen streams, one
 * server's (served by its host's object) or the whole aggregate's (served at the edge), carrying
 * each host's changes, letting go of every channel when the agent closes them, and ending when
 * the link behind them goes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureServer } from '../support/paths.ts';
import { waitUntil } from '../support/processes.ts';
import { startWorkerdStack, type HostName, type WorkerdStack } from '../support/workerd-stack.ts';
import { openListen } from '../modern/listen-client.ts';
import { KEEP_ALIVE_MS } from '../../worker/modern/listen-relay.ts';
import { modernPost, MODERN, type ModernAnswer, type ModernCall } from '../modern/modern-client.ts';

let stack: WorkerdStack;
const ELICIT: ModernCall = { meta: { 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } };
const SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';

beforeAll(async () => {
  stack = await startWorkerdStack({
    servers: {
      a: { 'pid-a': fixtureServer('pid-server.mjs'), 'modern-a': fixtureServer('modern-echo-server.mjs') },
      b: { 'pid-b': fixtureServer('pid-server.mjs'), 'modern-b': fixtureServer('modern-echo-server.mjs') },
    },
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

const aggregate = (method: string, params?: Record<string, unknown>, call?: ModernCall) => modernPost(`${stack.url}/mcp`, stack.tokens.alice!, method, params, call);
const textOf = (answer: ModernAnswer): string => (answer.response.result?.content as Array<{ text: string }> | undefined)?.map((c) => c.text).join('\n') ?? '';
const toolsChanged = (id: string) => ({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUBSCRIPTION]: id } } });

/** The pid an answer carries, checked to be a process of `host`'s sidecar and of no other. */
function expectServedBy(host: HostName, answer: ModernAnswer): void {
  expect(answer.status).toBe(200);
  const pid = Number(textOf(answer));
  const other: HostName = host === 'a' ? 'b' : 'a';
  expect(stack.serverPids(host)).toContain(pid);
  expect(stack.serverPids(other)).not.toContain(pid);
}

/** Until no channel is open on either host's link, as each host's object reports it. */
async function untilNoChannels(): Promise<void> {
  await waitUntil(async () => (await stack.health()).hosts.every((h) => h.channels === 0), 'every channel of both hosts to close', KEEP_ALIVE_MS + 10_000);
}

describe('the modern /mcp aggregate on workerd, across two hosts', () => {
  it("discovers every server of both hosts at once, with Switchyard's serverInfo and no session", async () => {
    const answer = await aggregate('server/discover', {}, { id: 'discover' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.response).toMatchObject({
      id: 'discover',
      result: { resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: { listChanged: true } }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'switchyard' } } },
    });
    expect(answer.response.result.instructions).toContain('Available: pid-a, modern-a, pid-b, modern-b.');
  });

  it('merges both hosts\' tool lists under namespaced names, with the stricter caching hints', async () => {
    const result = (await aggregate('tools/list')).response.result;
    const names = (result.tools as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['pid-a__pid', 'pid-a__confirmed-pid', 'modern-a__echo', 'pid-b__pid', 'modern-b__echo', 'modern-b__ask']));
    expect(names.some((n) => n.endsWith('__unavailable'))).toBe(false);
    // The modern fixtures say 60 s, public; the legacy pid fixtures' 0 and private win.
    expect(result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
  });

  it('calls each host\'s tools by their namespaced names, each answered by its own host', async () => {
    const [a, b] = await Promise.all([aggregate('tools/call', { name: 'pid-a__pid', arguments: {} }), aggregate('tools/call', { name: 'pid-b__pid', arguments: {} })]);
    expectServedBy('a', a);
    expectServedBy('b', b);
    // The host keeps one instance per agent and server: the next call, through a fresh request, is the same process.
    expect(textOf(await aggregate('tools/call', { name: 'pid-a__pid', arguments: {} }))).toBe(textOf(a));
    expect(textOf(await aggregate('tools/call', { name: 'modern-b__echo', arguments: { message: 'via the edge' } }))).toBe('Echo: via the edge');
  });

  it('carries a question (MRTR) through the aggregate: the retry reaches the process that asked, and its state is refused on the other host', async () => {
    const asked = await aggregate('tools/call', { name: 'pid-a__confirmed-pid', arguments: {} }, ELICIT);
    const question = asked.response.result;
    expect(question).toMatchObject({ resultType: 'input_required', requestState: expect.any(String) });
    const [key] = Object.keys(question.inputRequests);
    expect(question.inputRequests[key!]).toMatchObject({ method: 'elicitation/create', params: { message: 'Tell this server its pid?' } });
    const accept = { [key!]: { action: 'accept', content: { confirm: true } } };

    const elsewhere = await aggregate('tools/call', { name: 'pid-b__confirmed-pid', arguments: {}, inputResponses: accept, requestState: question.requestState }, ELICIT);
    expect(elsewhere.response.error).toMatchObject({ code: -32602, data: { requestState: 'invalid' } });

    const answered = await aggregate('tools/call', { name: 'pid-a__confirmed-pid', arguments: {}, inputResponses: accept, requestState: question.requestState }, ELICIT);
    expectServedBy('a', answered);
    expect(textOf(answered)).toBe(textOf(await aggregate('tools/call', { name: 'pid-a__pid', arguments: {} })));

    // A modern server's own rounds, on host B: its sealed state finds it again each time.
    const call = (extra: Record<string, unknown> = {}) => aggregate('tools/call', { name: 'modern-b__ask', arguments: {}, ...extra }, ELICIT);
    const first = (await call()).response.result;
    expect(first.resultType).toBe('input_required');
    const second = (await call({ inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } }, requestState: first.requestState })).response.result;
    expect(second.resultType).toBe('input_required');
    expect(textOf(await call({ inputResponses: { colour: { action: 'accept', content: { colour: 'red' } } }, requestState: second.requestState }))).toBe('Hello Ada, you like red');
  });

  it("listens on one server through its host's object and on /mcp at the edge: each host's changes delivered, every channel closed once the agent has gone", async () => {
    const one = await openListen(`${stack.url}/servers/modern-a/mcp`, stack.tokens.alice!, 'one', { toolsListChanged: true });
    const all = await openListen(`${stack.url}/mcp`, stack.tokens.alice!, 'all', { toolsListChanged: true });
    try {
      expect(one.status).toBe(200);
      expect(one.headers.get('content-type')).toContain('text/event-stream');
      expect(await one.next()).toEqual({ jsonrpc: '2.0', method: ACKNOWLEDGED, params: { _meta: { [SUBSCRIPTION]: 'one' }, notifications: { toolsListChanged: true } } });
      expect(await all.next()).toEqual({ jsonrpc: '2.0', method: ACKNOWLEDGED, params: { _meta: { [SUBSCRIPTION]: 'all' }, notifications: { toolsListChanged: true } } });
      // One stream per listen and server, on each host's link, while they are open.
      expect((await stack.health()).hosts.map((h) => h.channels)).toEqual([3, 2]);
      expect(textOf(await aggregate('tools/call', { name: 'modern-a__touch-tools', arguments: {} }))).toBe('Notified 2');
      expect(await one.next()).toEqual(toolsChanged('one'));
      expect(await all.next()).toEqual(toolsChanged('all'));
      expect(textOf(await aggregate('tools/call', { name: 'modern-b__touch-tools', arguments: {} }))).toBe('Notified 1');
      expect(await all.next()).toEqual(toolsChanged('all'));
    } finally {
      await one.close();
      await all.close();
    }
    // Workers notice an agent gone only at the stream's next write: at the latest its keepalive.
    await untilNoChannels();
  }, 60_000);

  it("drops a listen when a host's link goes, /mcp's too, so the agent listens again; again, /mcp's serves the other host", async () => {
    const one = await openListen(`${stack.url}/servers/modern-b/mcp`, stack.tokens.alice!, 'b-only', { toolsListChanged: true });
    const all = await openListen(`${stack.url}/mcp`, stack.tokens.alice!, 'both', { toolsListChanged: true });
    let again: Awaited<ReturnType<typeof openListen>> | undefined;
    try {
      expect((await one.next()).method).toBe(ACKNOWLEDGED);
      expect((await all.next()).method).toBe(ACKNOWLEDGED);
      await stack.stopSidecar('b', 'SIGKILL');
      await stack.waitLinked('b', false);
      await expect(one.next()).rejects.toThrow('The listen stream ended');
      // With no response, as a dropped transport: what tells an agent to listen again (review s23:
      // /mcp's went on without b, and its agent never learnt to listen to b again).
      await expect(all.next()).rejects.toThrow('The listen stream ended');
      again = await openListen(`${stack.url}/mcp`, stack.tokens.alice!, 'again', { toolsListChanged: true });
      expect((await again.next()).method).toBe(ACKNOWLEDGED);
      expect(textOf(await aggregate('tools/call', { name: 'modern-a__touch-tools', arguments: {} }))).toBe('Notified 1');
      expect(await again.next()).toEqual(toolsChanged('again'));
    } finally {
      await one.close();
      await all.close();
      await again?.close();
    }
    stack.startSidecar('b');
    await stack.waitLinked('b');
    await untilNoChannels();
    expectServedBy('b', await aggregate('tools/call', { name: 'pid-b__pid', arguments: {} }));
  }, 60_000);
});
