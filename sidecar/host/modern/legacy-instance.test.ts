/**
 * Modern (2026-07-28) requests served from legacy instances: the real handler in the production
 * composition, the real executor, server-everything from npm, one in-memory channel per request
 * as the worker opens them.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../../shared/errors.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { closeInfoOf, createInMemoryChannelPair, type ChannelCloseInfo, type ChannelTransport } from '../../../shared/channel-transport.ts';
import { everythingServer } from '../../../test/support/paths.ts';
import { isAlive, waitFor } from '../../../test/support/processes.ts';
import type { ProcessLaunchRequest, SpawnAttempt } from '../../process/process-executor.ts';
import type { HostTrustPolicy } from '../../trust/host-floor.ts';
import { createSidecarComposition, type SidecarComposition } from '../composition.ts';
import { createFrameSocketPair } from '../../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../../shared/link/link-endpoint.ts';
import type { ChannelOpenHandler } from '../../../shared/link/link-types.ts';

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function configDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-modern-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, value: unknown) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), JSON.stringify(value));
  };
  write('mcp-servers/mcp.json', { mcpServers: { everything: everythingServer(), web: { url: 'http://127.0.0.1:9/mcp' } } });
  write('trust-profiles/floor.json', { 'network-capabilities': [] });
  write('trust-profiles/no-forbidden-echo.json', {
    'restricted-mcp-tool-call-schemas': [{ properties: { toolName: { const: 'echo' }, input: { properties: { message: { const: 'forbidden' } }, required: ['message'] } }, required: ['toolName', 'input'] }],
  });
  return dir;
}

function composition(dir: string, options: { trust?: HostTrustPolicy; idleSeconds?: number } = {}) {
  const spawns: SpawnAttempt[] = [];
  const launches: ProcessLaunchRequest[] = [];
  const sidecar = createSidecarComposition({
    configDir: dir,
    entityId: 'alice-laptop',
    user: 'alice',
    trust: options.trust ?? { allowUncontained: true },
    executor: { onLaunch: (r) => launches.push(r), onSpawn: (s) => spawns.push(s), termGraceMs: 500 },
    ...(options.idleSeconds !== undefined ? { modernInstanceIdleSeconds: options.idleSeconds } : {}),
  });
  cleanups.push(() => sidecar.stop());
  return { sidecar, spawns, launches };
}

let sessions = 0;

interface Exchange {
  agentEnd: ChannelTransport;
  /** Everything the host sent back, in order. */
  messages: JSONRPCMessage[];
  closed: Promise<ChannelCloseInfo>;
}

/** Opens a modern channel as the worker does (a fresh session per request) and sends `request` on it. */
async function send(sidecar: SidecarComposition, agent: string, request: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Exchange> {
  const [agentEnd, hostEnd] = createInMemoryChannelPair();
  const connection = { 'server-name': 'everything', agent, session: `modern-${++sessions}`, era: 'modern', ...extra };
  const hosted = await sidecar.handler.open({ type: 'mcp', connection }, hostEnd);
  expect(hosted).not.toBeNull();
  const messages: JSONRPCMessage[] = [];
  agentEnd.onmessage = (message) => messages.push(message);
  const closed = closeInfoOf(agentEnd);
  await agentEnd.start();
  await agentEnd.send({ jsonrpc: '2.0', ...request } as JSONRPCMessage);
  return { agentEnd, messages, closed };
}

/** Sends `request` and waits for the host to answer and close the channel; the last message is the response. */
async function exchange(sidecar: SidecarComposition, agent: string, request: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<JSONRPCMessage[]> {
  const sent = await send(sidecar, agent, request, extra);
  await sent.closed;
  return sent.messages;
}

const echo = (id: string | number, message: string) => ({ id, method: 'tools/call', params: { name: 'echo', arguments: { message }, _meta: MODERN_META } });

describe('modern requests on a legacy instance', () => {
  it('answers a tools/call with the original id and resultType, the modern _meta never reaching the server', async () => {
    const { sidecar } = composition(configDir());
    const messages = await exchange(sidecar, 'alice', echo('agent-7', 'hello'));
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 'agent-7',
        result: expect.objectContaining({ resultType: 'complete', content: [{ type: 'text', text: 'Echo: hello' }] }),
      },
    ]);
    const result = (messages[0] as { result: Record<string, unknown> }).result;
    expect(result).not.toHaveProperty('ttlMs');
    expect((result._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: expect.stringMatching(/everything/i) });
  });

  it('stamps list results as private and immediately stale', async () => {
    const { sidecar } = composition(configDir());
    const [response] = await exchange(sidecar, 'alice', { id: 1, method: 'tools/list', params: { _meta: MODERN_META } });
    expect((response as { result: unknown }).result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private', tools: expect.arrayContaining([expect.objectContaining({ name: 'echo' })]) });
  });

  it('answers server/discover from the instance initialize result', async () => {
    const { sidecar } = composition(configDir());
    const [response] = await exchange(sidecar, 'alice', { id: 'd', method: 'server/discover', params: { _meta: MODERN_META } });
    const result = (response as { id: unknown; result: Record<string, unknown> }).result;
    expect((response as { id: unknown }).id).toBe('d');
    expect(result).toMatchObject({ resultType: 'complete', supportedVersions: ['2026-07-28'], ttlMs: 0, cacheScope: 'private', capabilities: expect.objectContaining({ tools: expect.anything() }) });
    expect(result._meta).toEqual({ 'io.modelcontextprotocol/serverInfo': expect.objectContaining({ name: expect.stringMatching(/everything/i), version: expect.any(String) }) });
  });

  it('maps resource-not-found to -32602 with data.uri', async () => {
    const { sidecar } = composition(configDir());
    const uri = 'demo://resource/static/document/no-such-thing.md';
    const [response] = await exchange(sidecar, 'alice', { id: 3, method: 'resources/read', params: { uri, _meta: MODERN_META } });
    expect(response).toMatchObject({ id: 3, error: { code: -32602, data: { uri } } });
  });

  it('gives two concurrent requests with the same id each its own answer, on one instance', async () => {
    const { sidecar, spawns } = composition(configDir());
    const [first, second] = await Promise.all([exchange(sidecar, 'alice', echo(1, 'first')), exchange(sidecar, 'alice', echo(1, 'second'))]);
    expect(first).toEqual([{ jsonrpc: '2.0', id: 1, result: expect.objectContaining({ content: [{ type: 'text', text: 'Echo: first' }] }) }]);
    expect(second).toEqual([{ jsonrpc: '2.0', id: 1, result: expect.objectContaining({ content: [{ type: 'text', text: 'Echo: second' }] }) }]);
    expect(spawns).toHaveLength(1);
  });

  it("reuses the agent's instance for its next request, and never shares it with another agent", async () => {
    const { sidecar, spawns } = composition(configDir());
    await exchange(sidecar, 'alice', echo(1, 'a'));
    await exchange(sidecar, 'alice', echo(2, 'b'));
    expect(spawns).toHaveLength(1);
    await exchange(sidecar, 'bob', echo(1, 'c'));
    expect(spawns).toHaveLength(2);
    expect(new Set(spawns.map((s) => s.pid)).size).toBe(2);
    expect(sidecar.modernInstances.size).toBe(2);
  });

  it('relays progress under the caller\'s own token before the response', async () => {
    const { sidecar } = composition(configDir());
    const messages = await exchange(sidecar, 'alice', {
      id: 5,
      method: 'tools/call',
      params: { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 }, _meta: { ...MODERN_META, progressToken: 'mine' } },
    });
    expect(messages.slice(0, -1)).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1, total: 2, progressToken: 'mine' } },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 2, total: 2, progressToken: 'mine' } },
    ]);
    expect(messages.at(-1)).toMatchObject({ id: 5, result: { resultType: 'complete' } });
  });

  it('cancels upstream when the channel closes first, and the instance keeps serving', async () => {
    const { sidecar, spawns } = composition(configDir());
    const long = await send(sidecar, 'alice', {
      id: 9,
      method: 'tools/call',
      params: { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 60 }, _meta: { ...MODERN_META, progressToken: 'p' } },
    });
    await waitFor(() => (long.messages.length > 0 ? true : undefined), 'the first progress notification');
    const instance = await waitFor(() => [...instancesOf(sidecar)][0], 'the instance');
    expect(instance.inFlight).toBe(1);
    await long.agentEnd.close();
    await waitFor(() => (instance.inFlight === 0 ? true : undefined), 'the call to leave flight');
    expect(await exchange(sidecar, 'alice', echo(10, 'still here'))).toEqual([expect.objectContaining({ id: 10, result: expect.objectContaining({ content: [{ type: 'text', text: 'Echo: still here' }] }) })]);
    expect(spawns).toHaveLength(1);
    expect(long.messages.every((m) => 'method' in m)).toBe(true);
  });

  it('fails the in-flight request with server-exited when the process dies, and starts a fresh instance next', async () => {
    const { sidecar, spawns } = composition(configDir());
    const long = await send(sidecar, 'alice', {
      id: 'slow',
      method: 'tools/call',
      params: { name: 'trigger-long-running-operation', arguments: { duration: 60, steps: 60 }, _meta: { ...MODERN_META, progressToken: 'p' } },
    });
    await waitFor(() => (long.messages.length > 0 ? true : undefined), 'the first progress notification');
    process.kill(spawns[0]!.pid!, 'SIGKILL');
    await long.closed;
    expect(long.messages.at(-1)).toMatchObject({ id: 'slow', error: { data: { reason: 'server-exited' } } });
    expect(await exchange(sidecar, 'alice', echo(2, 'again'))).toEqual([expect.objectContaining({ id: 2, result: expect.objectContaining({ content: [{ type: 'text', text: 'Echo: again' }] }) })]);
    expect(spawns).toHaveLength(2);
    expect(spawns[1]!.pid).not.toBe(spawns[0]!.pid);
  });

  it('starts a fresh instance for the agent\'s next request once the server\'s entry in mcp.json changes, with no reload (review s20)', async () => {
    const dir = configDir();
    const { sidecar, launches } = composition(dir);
    await exchange(sidecar, 'alice', echo(1, 'first'));
    const entry = (version: string) => ({ mcpServers: { everything: { ...everythingServer(), env: { SWITCHYARD_TEST_VERSION: version } } } });
    writeFileSync(join(dir, 'mcp-servers/mcp.json'), JSON.stringify(entry('2')));
    await exchange(sidecar, 'alice', echo(2, 'second'));
    await exchange(sidecar, 'alice', echo(3, 'third'));
    expect(launches.map((l) => l.env.SWITCHYARD_TEST_VERSION ?? null)).toEqual([null, '2']);
  });

  it('ends an idle instance after its idle time', async () => {
    const { sidecar, spawns } = composition(configDir(), { idleSeconds: 0.2 });
    await exchange(sidecar, 'alice', echo(1, 'then idle'));
    const pid = spawns[0]!.pid!;
    await waitFor(() => (!isAlive(pid) ? true : undefined), 'the idle instance to end');
    expect(sidecar.modernInstances.size).toBe(0);
    await exchange(sidecar, 'alice', echo(2, 'back'));
    expect(spawns).toHaveLength(2);
  });

  it('ends an idle instance whose last request needed no call of the server (server/discover)', async () => {
    const { sidecar, spawns } = composition(configDir(), { idleSeconds: 2 });
    await exchange(sidecar, 'alice', echo(1, 'then discover'));
    const [discover] = await exchange(sidecar, 'alice', { id: 2, method: 'server/discover', params: { _meta: MODERN_META } });
    expect(discover).toMatchObject({ id: 2, result: { supportedVersions: expect.any(Array) } });
    expect(spawns).toHaveLength(1); // answered from the running instance, not a fresh one
    const pid = spawns[0]!.pid!;
    await waitFor(() => (!isAlive(pid) ? true : undefined), 'the idle instance to end');
    expect(sidecar.modernInstances.size).toBe(0);
  });

  it('ends every instance when the sidecar stops', async () => {
    const { sidecar, spawns } = composition(configDir());
    await exchange(sidecar, 'alice', echo(1, 'a'));
    await exchange(sidecar, 'bob', echo(1, 'b'));
    const pids = spawns.map((s) => s.pid!);
    expect(pids.every(isAlive)).toBe(true);
    await sidecar.stop();
    expect(pids.filter(isAlive)).toEqual([]);
    expect(sidecar.modernInstances.size).toBe(0);
    const [late] = await exchange(sidecar, 'alice', echo(2, 'too late'));
    expect(late).toMatchObject({ id: 2, error: { data: { reason: 'host-offline' } } });
    expect(spawns).toHaveLength(2);
  });

  it('launches the instance contained under the host floor', async () => {
    const { sidecar, spawns, launches } = composition(configDir(), { trust: { floor: 'floor' } });
    const [response] = await exchange(sidecar, 'alice', echo(1, 'contained'));
    expect(response).toMatchObject({ id: 1, result: { content: [{ type: 'text', text: 'Echo: contained' }] } });
    expect(launches).toHaveLength(1);
    expect(launches[0]!.policy).toMatchObject({ backend: 'bubblewrap', revision: (await sidecar.profiles.load('floor')).revision });
    expect(spawns.map((s) => s.backend)).toEqual(['bubblewrap']);
  });

  it("checks a tool call against the agent's trust profile before anything starts", async () => {
    const { sidecar, spawns } = composition(configDir());
    const { revision } = await sidecar.profiles.load('no-forbidden-echo');
    const trust = { 'trust-profile-ref': 'no-forbidden-echo', 'trust-profile-revision': revision };
    const [denied] = await exchange(sidecar, 'alice', echo('x', 'forbidden'), trust);
    expect(denied).toMatchObject({ id: 'x', error: { data: { reason: 'denied-by-policy', tool: 'echo' } } });
    expect(spawns).toEqual([]);
    const [allowed] = await exchange(sidecar, 'alice', echo('y', 'fine'), trust);
    expect(allowed).toMatchObject({ id: 'y', result: { content: [{ type: 'text', text: 'Echo: fine' }] } });
  });

  it('serves a modern request to an HTTP server after the same trust checks as a legacy open: one it cannot reach is that request\'s error', async () => {
    const { sidecar, spawns } = composition(configDir());
    const [unreachable] = await exchange(sidecar, 'alice', { id: 'w', method: 'tools/list', params: { _meta: MODERN_META } }, { 'server-name': 'web' });
    expect(unreachable).toMatchObject({ id: 'w', error: { data: { reason: 'launch-failed' } } });
    const [, hostEnd] = createInMemoryChannelPair();
    const stale = { 'server-name': 'everything', agent: 'alice', era: 'modern', 'trust-profile-ref': 'floor', 'trust-profile-revision': `sha256:${'0'.repeat(64)}` };
    await expect(sidecar.handler.open({ type: 'mcp', connection: stale }, hostEnd)).rejects.toMatchObject({ reason: 'trust-profile-stale' });
    expect(spawns).toEqual([]);
  });
});

/** A real link to the composition's channel-open handler, as the worker's end sees it; `gate` holds each open before the handler runs. */
function linked(sidecar: SidecarComposition, gate?: (host: LinkEndpoint) => Promise<void>) {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  let host!: LinkEndpoint;
  const handled: Promise<unknown>[] = [];
  const onOpen: ChannelOpenHandler = (request, channel) => {
    const handling = (async () => {
      await gate?.(host);
      await sidecar.onOpen(request, channel);
    })();
    handled.push(handling.catch(() => {}));
    return handling;
  };
  host = new LinkEndpoint(sidecarSocket, { role: 'sidecar', onOpen });
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'alice-laptop' });
  cleanups.push(() => worker.close());
  const hostSent: string[] = [];
  host.onFrame = (direction, text) => direction === 'out' && hostSent.push(JSON.parse(text).type);
  return { worker, host, hostSent, handled };
}

const modernOpen = (extra: Record<string, unknown> = {}) => ({ type: 'mcp', connection: { 'server-name': 'everything', agent: 'alice', session: `modern-${++sessions}`, era: 'modern', ...extra } });

describe('a modern request sent right behind its channel open (one round trip)', () => {
  it('is answered on the channel the ack hands back, and reaches the server once', async () => {
    const { sidecar } = composition(configDir());
    const { worker } = linked(sidecar);
    const request = { jsonrpc: '2.0', ...echo('ahead', 'pipelined') } as JSONRPCMessage;
    const channel = await worker.openChannel(modernOpen(), { first: request });
    expect(channel.sentAhead).toBe(request);
    const messages: JSONRPCMessage[] = [];
    channel.onmessage = (message) => messages.push(message);
    const closed = closeInfoOf(channel);
    await channel.start();
    expect(await closed).toEqual({});
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 'ahead', result: expect.objectContaining({ content: [{ type: 'text', text: 'Echo: pipelined' }] }) }]);
  });

  it('refused (unknown server, stale profile) rejects with the host\'s reason as before; nothing starts and nothing is served', async () => {
    const { sidecar, spawns } = composition(configDir());
    const { worker, host, hostSent } = linked(sidecar);
    const request = { jsonrpc: '2.0', ...echo(1, 'never') } as JSONRPCMessage;
    await expect(worker.openChannel(modernOpen({ 'server-name': 'nope' }), { first: request })).rejects.toMatchObject({ reason: 'server-not-found' });
    const stale = modernOpen({ 'trust-profile-ref': 'floor', 'trust-profile-revision': `sha256:${'0'.repeat(64)}` });
    await expect(worker.openChannel(stale, { first: request })).rejects.toMatchObject({ reason: 'trust-profile-stale' });
    expect(hostSent).toEqual(['channel-open-error', 'channel-open-error']);
    expect(spawns).toEqual([]);
    expect(instancesOf(sidecar).length).toBe(0);
    expect(host.stats).toMatchObject({ channels: 0, unknownChannelFrames: 0 });
  });

  it('withdrawn by a close before the ack (the agent went away) is never served: no instance starts, no ack is sent', async () => {
    const { sidecar, spawns } = composition(configDir());
    // The handler runs only once the host has read the open, the request and the close.
    const { worker, hostSent, handled } = linked(sidecar, async (host) => void (await waitFor(() => (host.stats.framesIn >= 3 ? true : undefined), 'the close')));
    const deadline = new AbortController();
    const opening = worker.openChannel(modernOpen(), { first: { jsonrpc: '2.0', ...echo(1, 'withdrawn') } as JSONRPCMessage, signal: deadline.signal });
    deadline.abort(new WireError('request-timeout', 'The agent went away'));
    await expect(opening).rejects.toMatchObject({ reason: 'request-timeout' });
    await waitFor(() => handled[0], 'the open to reach the handler');
    await handled[0];
    expect(hostSent).toEqual([]);
    expect(spawns).toEqual([]);
    expect(instancesOf(sidecar).length).toBe(0);
  });
});

function instancesOf(sidecar: SidecarComposition) {
  return sidecar.modernInstances.instances();
}
