/**
 * End to end on Cloudflare's runtime: the Workers bundle under workerd, two real sidecar CLIs
 * (hosts A and B) linked to it, real SDK clients and modern raw-HTTP agents calling through it.
 * Each server is the pid fixture, so every answer says which process served it, and each
 * sidecar's log says which processes it spawned: a call served by the wrong host cannot pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { ProcessSet, startEverythingHttp, waitUntil } from '../support/processes.ts';
import { startWorkerdStack, type HostName, type WorkerdStack } from '../support/workerd-stack.ts';
import { modernPost } from '../modern/modern-client.ts';
import { WireError } from '../../shared/errors.ts';
import type { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { LinkClient } from '../../sidecar/link/link-client.ts';
import { silentLogger } from '../../sidecar/log.ts';
import { hostCredential, hostSigner } from '../support/configs.ts';
import { RogueLink, type LinkRefusal } from '../resilience/rogue-link.ts';
import { oneConnection } from '../support/one-connection.ts';

let stack: WorkerdStack;
const procs = new ProcessSet();

beforeAll(async () => {
  const everything = await startEverythingHttp(procs);
  stack = await startWorkerdStack({
    servers: { a: { 'pid-a': fixtureServer('pid-server.mjs') }, b: { 'pid-b': fixtureServer('pid-server.mjs') } },
    edgeDirect: { docs: everything.url },
    agents: [{ name: 'bob', servers: ['pid-b'] }],
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await procs.stopAll();
});

const serverOf: Record<HostName, string> = { a: 'pid-a', b: 'pid-b' };

function pidOf(result: unknown): number {
  const text = (result as { content?: Array<{ text?: string }> }).content?.[0]?.text;
  return Number(text);
}

/** The pid a tool call answered, checked to be a process of `host`'s sidecar and of no other. */
function expectServedBy(host: HostName, pid: number): void {
  const other: HostName = host === 'a' ? 'b' : 'a';
  expect(stack.serverPids(host)).toContain(pid);
  expect(stack.serverPids(other)).not.toContain(pid);
}

async function legacyPid(host: HostName, token = stack.tokens.alice!): Promise<number> {
  const client = await connectClient(`${stack.url}/servers/${serverOf[host]}/mcp`, token);
  try {
    return pidOf(await client.callTool({ name: 'pid' }));
  } finally {
    await closeClient(client);
  }
}

async function modernPid(host: HostName): Promise<number> {
  const answer = await modernPost(`${stack.url}/servers/${serverOf[host]}/mcp`, stack.tokens.alice!, 'tools/call', { name: 'pid', arguments: {} });
  expect(answer.status).toBe(200);
  expect(answer.headers.get('mcp-session-id')).toBeNull();
  return pidOf(answer.response.result);
}

/** A second link as host A, beside its sidecar's, by the real link client; it hosts nothing. */
async function secondLinkOfHostA(options: Pick<ConstructorParameters<typeof LinkClient>[0], 'backoff' | 'onLinked'>): Promise<LinkClient> {
  const host = stack.hostKey('a');
  return new LinkClient({
    worker: stack.url,
    entityId: host.entityId,
    key: { sign: await hostSigner(host) },
    onOpen: async () => {
      throw new WireError('launch-failed', 'This test link hosts nothing');
    },
    log: silentLogger,
    ...options,
  });
}

/** A raw legacy initialize, for the answer's status and `data.reason`. */
async function initialize(path: string, token = stack.tokens.alice!): Promise<{ status: number; body: any }> {
  const response = await fetch(`${stack.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  const text = await response.text();
  const data = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? 'null');
  return { status: response.status, body: JSON.parse(data) };
}

describe('Switchyard on workerd: the real sidecars linked to the Workers bundle', () => {
  it('shows both hosts linked on /healthz, each through its own Durable Object', async () => {
    const health = await stack.health();
    expect(health.hosts).toEqual(expect.arrayContaining([
      expect.objectContaining({ 'entity-id': stack.entityId('a'), linked: true, roundTripMs: expect.any(Number) }),
      expect.objectContaining({ 'entity-id': stack.entityId('b'), linked: true, roundTripMs: expect.any(Number) }),
    ]));
    expect(health.servers.map((s) => s.state)).toEqual(['available', 'available', 'available']);
  });

  it('routes legacy sessions on /servers/:name/mcp to the right host, never the other', async () => {
    expectServedBy('a', await legacyPid('a'));
    expectServedBy('b', await legacyPid('b'));
  });

  it('serves modern (2026-07-28) requests on /servers/:name/mcp statelessly, each to its host', async () => {
    expectServedBy('a', await modernPid('a'));
    expectServedBy('b', await modernPid('b'));
  });

  it('aggregates both hosts on /mcp in one legacy session whose every request finds its Durable Object', async () => {
    const client = await connectClient(`${stack.url}/mcp`, stack.tokens.alice!);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(expect.arrayContaining(['pid-a__pid', 'pid-b__pid', 'docs__echo']));
      const pids = { a: pidOf(await client.callTool({ name: 'pid-a__pid' })), b: pidOf(await client.callTool({ name: 'pid-b__pid' })) };
      expectServedBy('a', pids.a);
      expectServedBy('b', pids.b);
      // The same session keeps its server processes: a second call is the same process.
      expect(pidOf(await client.callTool({ name: 'pid-a__pid' }))).toBe(pids.a);
    } finally {
      await closeClient(client);
    }
  });

  it('proxies an edge-direct HTTP server from the session\'s object, through the same router', async () => {
    const client = await connectClient(`${stack.url}/servers/docs/mcp`, stack.tokens.alice!);
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'at the edge' } })).toMatchObject({ content: [{ type: 'text', text: 'Echo: at the edge' }] });
    } finally {
      await closeClient(client);
    }
  });

  it('keeps a session to the agent that opened it: another agent, or a forged id, gets 404', async () => {
    const client = await connectClient(`${stack.url}/servers/pid-b/mcp`, stack.tokens.alice!);
    try {
      const sessionId = (client.transport as { sessionId?: string }).sessionId!;
      const asBob = await fetch(`${stack.url}/servers/pid-b/mcp`, { headers: { authorization: `Bearer ${stack.tokens.bob}`, 'mcp-session-id': sessionId, accept: 'text/event-stream' } });
      expect(asBob.status).toBe(404);
      const forged = await fetch(`${stack.url}/servers/pid-b/mcp`, { headers: { authorization: `Bearer ${stack.tokens.alice}`, 'mcp-session-id': `${'0'.repeat(64)}_${crypto.randomUUID()}`, accept: 'text/event-stream' } });
      expect(forged.status).toBe(404);
      expect((await forged.json()).error.data.reason).toBe('invalid-request');
      expect(await initialize('/servers/pid-a/mcp', stack.tokens.bob)).toMatchObject({ status: 404, body: { error: { data: { reason: 'server-not-found' } } } });
    } finally {
      await closeClient(client);
    }
  });

  it('refuses an agent without a valid token before any Durable Object wakes', async () => {
    const response = await fetch(`${stack.url}/mcp`, { method: 'POST', headers: { authorization: 'Bearer nope', 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
  });

  it('upgrades no /link request without its host\'s key on Workers: 401 with the reason, from the edge or the host\'s object', async () => {
    const host = stack.hostKey('a');
    const cases = [
      [{}, 'no-proof'],
      [{ key: hostCredential(host.entityId) }, 'bad-signature'],
    ] as const;
    for (const [options, check] of cases) {
      const refusal = (await RogueLink.dial(stack.url, host.entityId, options).then(
        async (rogue) => (await rogue.close(), null),
        (error: unknown) => error,
      )) as LinkRefusal | null;
      expect(refusal?.status).toBe(401);
      expect(JSON.parse(refusal?.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', check } });
    }
    // The host's own key still links through the edge to its object (the link route there checks again).
    const rogue = await RogueLink.dial(stack.url, host.entityId, { key: host });
    expect(await rogue.next('link-challenge')).toMatchObject({ type: 'link-challenge' });
    await rogue.close();
    await stack.waitLinked('a');
    // A plain GET, no upgrade at all: the edge answers 426 itself.
    const plain = await fetch(`${stack.url}/link`);
    expect([plain.status, ((await plain.json()) as { error: { reason: string } }).error.reason]).toEqual([426, 'invalid-request']);
  });

  it('keeps an agent\'s connection after answering a request whose body it did not need: the next request on it is answered', async () => {
    // A session that is over, its object still there: its 404 needs no body, nor does a 401.
    const ended = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    const sessionId = (ended.transport as { sessionId?: string }).sessionId!;
    await closeClient(ended);
    const connection = oneConnection(stack.url);
    const call = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'pid', arguments: {} } });
    const post = (token: string, headers: Record<string, string> = {}) =>
      connection.send('POST', '/servers/pid-a/mcp', { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, call);
    try {
      // workerd closed the connection after each of these; an agent's next request, already on
      // its way, was dropped with it (in CI: "fetch failed: other side closed").
      expect(await post(stack.tokens.alice!, { 'mcp-session-id': sessionId })).toMatchObject({ status: 404 });
      expect(await post('nope')).toMatchObject({ status: 401, reusedSocket: true });
      const again = await post(stack.tokens.alice!, { 'mcp-session-id': sessionId });
      expect(again).toMatchObject({ status: 404, reusedSocket: true });
      expect(JSON.parse(again.body).error.data.reason).toBe('invalid-request');
    } finally {
      connection.close();
    }
  });

  it('fails a host\'s channels with host-offline when its link goes, and serves it again once the sidecar relinks', async () => {
    const open = await connectClient(`${stack.url}/servers/pid-b/mcp`, stack.tokens.alice!);
    expectServedBy('b', pidOf(await open.callTool({ name: 'pid' })));
    await stack.stopSidecar('b', 'SIGKILL');
    await stack.waitLinked('b', false);

    // The open session's channel failed with the link; a new one is refused at once.
    const failed = await open.callTool({ name: 'pid' }).then(() => null, (error: unknown) => error);
    expect(failed).not.toBeNull();
    await open.close();
    expect(await initialize('/servers/pid-b/mcp')).toMatchObject({ status: 503, body: { error: { data: { reason: 'host-offline' } } } });
    const modern = await modernPost(`${stack.url}/servers/pid-b/mcp`, stack.tokens.alice!, 'tools/call', { name: 'pid', arguments: {} });
    expect(modern.response.error?.data?.reason).toBe('host-offline');
    // Host A is untouched.
    expectServedBy('a', await legacyPid('a'));

    stack.startSidecar('b');
    await stack.waitLinked('b');
    expectServedBy('b', await legacyPid('b'));
    expectServedBy('b', await modernPid('b'));
  });

  it('replaces an older link from the same host, in either order, and the host keeps serving', async () => {
    let resolveLinked!: (endpoint: LinkEndpoint) => void;
    const linked = new Promise<LinkEndpoint>((resolve) => (resolveLinked = resolve));
    // It must not dial again before it stops.
    const second = await secondLinkOfHostA({ backoff: { firstMs: 600_000 }, onLinked: (endpoint) => resolveLinked(endpoint) });
    second.start();
    try {
      const ours = await linked;
      // The CLI sidecar's link was the older one: closed with the reason, it dials again and
      // replaces ours in turn.
      await stack.sidecar('a').waitForLine((l) => l.msg === 'Link closed' && String(l.message).includes('Replaced by a newer link from the same host'), 'its link replaced');
      expect(await ours.whenClosed).toMatchObject({ reason: 'host-offline', message: 'Replaced by a newer link from the same host' });
    } finally {
      await second.stop();
    }
    await stack.waitLinked('a');
    expectServedBy('a', await legacyPid('a'));
  });

  it('writes the audit line of every call to the worker\'s log, from the isolate or object that served it', async () => {
    const calls = stack.worker.logs().filter((l) => l.event === 'call' && l.tool === 'pid' && l.outcome === 'ok');
    expect(calls).toEqual(expect.arrayContaining([
      expect.objectContaining({ server: 'pid-a', host: stack.entityId('a'), era: 'legacy', route: 'passthrough' }),
      expect.objectContaining({ server: 'pid-b', host: stack.entityId('b'), era: 'modern' }),
      expect.objectContaining({ server: 'pid-a', route: 'aggregate' }),
    ]));
    expect(stack.worker.logs().some((l) => l.event === 'credential')).toBe(true);
    // Each legacy session that opened, from the agent's session object.
    expect(stack.worker.logs().some((l) => l.msg === 'audit' && l.event === 'session' && l.route === 'passthrough' && l.server === 'pid-a' && l.ended === undefined)).toBe(true);
    // Each host's link, from the Durable Object that took it.
    const linkLines = () => stack.worker.logs().filter((l) => l.msg === 'audit' && l.event === 'link');
    expect(linkLines().filter((l) => l.decision === 'allowed').map((l) => l.host)).toEqual(expect.arrayContaining([stack.entityId('a'), stack.entityId('b')]));
    // A dial with host A's name and another key, refused at the edge: one line, not one more from the object.
    const refusedBefore = linkLines().filter((l) => l.decision === 'refused').length;
    await expect(RogueLink.connect(stack.url, stack.entityId('a'), hostCredential(stack.entityId('a')))).rejects.toMatchObject({ status: 401 });
    await expect.poll(() => linkLines().filter((l) => l.decision === 'refused').length).toBe(refusedBefore + 1);
    expect(linkLines().filter((l) => l.decision === 'refused').at(-1)).toMatchObject({ host: stack.entityId('a'), check: 'bad-signature', reason: 'unauthorized', level: 'warn' });
    // Each link that ended above, with why and how long it was up: host B's sidecar killed, host A's links replaced in turn.
    const ended = linkLines().filter((l) => l.ended !== undefined);
    expect(ended.filter((l) => l.host === stack.entityId('b')).map((l) => l.ended)).toEqual(['lost']);
    expect(ended.filter((l) => l.host === stack.entityId('a')).map((l) => l.ended)).toEqual(['replaced', 'replaced']);
    for (const line of ended) expect(line.durationMs).toBeGreaterThan(0);
  });

  it('warns once when two sidecars hold one host\'s key and keep replacing each other\'s link, from the host\'s object', async () => {
    // It dials again at once whenever it is replaced, as a real one would within seconds.
    const second = await secondLinkOfHostA({ backoff: { firstMs: 50, capMs: 200 } });
    const flapping = (line: Record<string, unknown>) => String(line.msg).startsWith('Host links keep replacing each other') && line['entity-id'] === stack.entityId('a');
    second.start();
    try {
      await waitUntil(() => stack.worker.logs().some(flapping), 'the flapping warning', 30_000);
    } finally {
      await second.stop();
    }
    expect(stack.worker.logs().filter(flapping)).toEqual([expect.objectContaining({ level: 'warn', replacements: 3, withinSeconds: 60 })]);
    await stack.waitLinked('a');
    expectServedBy('a', await legacyPid('a'));
  });

  it('relinks both sidecars after the runtime restarts, and an old session id is simply not found', async () => {
    const client: Client = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    const sessionId = (client.transport as { sessionId?: string }).sessionId!;
    await stack.worker.restart();
    await stack.waitLinked('a');
    await stack.waitLinked('b');
    const stale = await fetch(`${stack.url}/servers/pid-a/mcp`, { headers: { authorization: `Bearer ${stack.tokens.alice}`, 'mcp-session-id': sessionId, accept: 'text/event-stream' } });
    expect(stale.status).toBe(404);
    await client.close();
    expectServedBy('a', await legacyPid('a'));
    expectServedBy('b', await modernPid('b'));
  });
});
