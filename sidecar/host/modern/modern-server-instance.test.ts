/**
 * Modern requests served from modern stdio servers: the real handler in the production
 * composition, the real executor, the modern echo fixture (and a server whose era a flag file
 * switches, to show a wrong cached verdict probed again), one in-memory channel per request as
 * the worker opens them.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { closeInfoOf, createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { fixtureServer } from '../../../test/support/paths.ts';
import { deferred } from '../../../test/support/deferred.ts';
import { waitFor } from '../../../test/support/processes.ts';
import type { SpawnAttempt } from '../../process/process-executor.ts';
import { createSidecarComposition, type SidecarComposition } from '../composition.ts';
import type { InstanceRequest } from './in-flight-calls.ts';
import { serverEraKey } from './server-era.ts';
import type { ServerInstance } from './server-instance.ts';

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
  'io.modelcontextprotocol/clientInfo': { name: 'modern-agent', version: '1.0.0' },
};
const FIXTURE_INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'modern-echo-fixture', version: '1.0.0' } };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Dir {
  dir: string;
  write(path: string, value: unknown): void;
  /** The flag file the `switch` server reads at start: "modern" or "legacy". */
  flag: string;
  servers: { modern: Server; switch: Server };
}

interface Server {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

function configDir(): Dir {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-modern-server-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, value: unknown) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), typeof value === 'string' ? value : JSON.stringify(value));
  };
  const flag = join(dir, 'era-flag');
  const modern = pathToFileURL(fixtureServer('modern-echo-server.mjs').args[0]!).href;
  const legacy = pathToFileURL(fixtureServer('raw-echo-server.mjs').args[0]!).href;
  write(
    'switch-server.mjs',
    `import { readFileSync } from 'node:fs';\nawait import(readFileSync(process.argv[2], 'utf8').trim() === 'modern' ? ${JSON.stringify(modern)} : ${JSON.stringify(legacy)});\n`,
  );
  write('era-flag', 'legacy');
  const servers: Dir['servers'] = { modern: fixtureServer('modern-echo-server.mjs'), switch: { command: process.execPath, args: [join(dir, 'switch-server.mjs'), flag] } };
  write('mcp-servers/mcp.json', { mcpServers: servers });
  return { dir, write, flag, servers };
}

function composition(dir: string) {
  const spawns: SpawnAttempt[] = [];
  const sidecar = createSidecarComposition({
    configDir: dir,
    entityId: 'alice-laptop',
    user: 'alice',
    trust: { allowUncontained: true },
    executor: { onSpawn: (s) => spawns.push(s), termGraceMs: 500 },
  });
  cleanups.push(() => sidecar.stop());
  return { sidecar, spawns };
}

let sessions = 0;

/** Opens a modern channel as the worker does (a fresh session per request) and sends `request` on it. */
async function send(sidecar: SidecarComposition, agent: string, request: Record<string, unknown>, server = 'modern') {
  const [agentEnd, hostEnd] = createInMemoryChannelPair();
  const connection = { 'server-name': server, agent, session: `modern-${++sessions}`, era: 'modern' };
  const hosted = await sidecar.handler.open({ type: 'mcp', connection }, hostEnd);
  expect(hosted).not.toBeNull();
  const messages: JSONRPCMessage[] = [];
  agentEnd.onmessage = (message) => messages.push(message);
  const closed = closeInfoOf(agentEnd);
  await agentEnd.start();
  await agentEnd.send({ jsonrpc: '2.0', ...request } as JSONRPCMessage);
  /** `hostClosed`: the host's end has heard of the close (its handler ran). */
  return { agentEnd, messages, closed, hostClosed: hosted!.closed! };
}

/** Sends `request` and waits for the host to answer and close the channel. */
async function exchange(sidecar: SidecarComposition, agent: string, request: Record<string, unknown>, server = 'modern'): Promise<JSONRPCMessage[]> {
  const sent = await send(sidecar, agent, request, server);
  await sent.closed;
  return sent.messages;
}

const request = (id: string | number, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) => ({
  id,
  method,
  params: { ...params, _meta: { ...MODERN_META, ...meta } },
});
const keyOf = (name: string, server: Server) => serverEraKey(name, { ...server, env: server.env ?? {} });

describe('modern requests on a modern server', () => {
  it('forwards them with their _meta (the fixture refuses a request without it) and relays results as the server gave them, server/discover included', async () => {
    const { dir } = configDir();
    const { sidecar } = composition(dir);
    const [discover] = await exchange(sidecar, 'alice', request('d', 'server/discover'));
    expect(discover).toEqual({
      jsonrpc: '2.0',
      id: 'd',
      result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } }, ttlMs: 60000, cacheScope: 'public', _meta: FIXTURE_INFO },
    });
    const [list] = await exchange(sidecar, 'alice', request('l', 'tools/list'));
    expect(list).toMatchObject({ id: 'l', result: { resultType: 'complete', ttlMs: 60000, cacheScope: 'public', tools: [{ name: 'echo' }, { name: 'wait' }, { name: 'cancelled' }, { name: 'touch-tools' }, { name: 'ask' }, { name: 'regional' }], _meta: FIXTURE_INFO } });
    const [call] = await exchange(sidecar, 'alice', request(7, 'tools/call', { name: 'echo', arguments: { message: 'modern to modern' } }));
    expect(call).toEqual({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', content: [{ type: 'text', text: 'Echo: modern to modern' }], _meta: FIXTURE_INFO } });
    expect(sidecar.modernInstances.instances().map((i) => i.constructor.name)).toEqual(['ModernServerInstance']);
  });

  it("passes the server's own errors on as it gave them", async () => {
    const { dir } = configDir();
    const { sidecar } = composition(dir);
    const [answer] = await exchange(sidecar, 'alice', request(1, 'tools/call', { name: 'no-such-tool', arguments: {} }));
    expect(answer).toMatchObject({ id: 1, error: { code: -32602 } });
  });

  it('gives two concurrent requests with the same id and progress token each its own answer and progress, on one process', async () => {
    const { dir } = configDir();
    const { sidecar, spawns } = composition(dir);
    const echo = (message: string) => request(1, 'tools/call', { name: 'echo', arguments: { message } }, { progressToken: 'p' });
    const [first, second] = await Promise.all([exchange(sidecar, 'alice', echo('first')), exchange(sidecar, 'alice', echo('second'))]);
    for (const [messages, text] of [[first, 'Echo: first'], [second, 'Echo: second']] as const) {
      expect(messages).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1, total: 1 } },
        { jsonrpc: '2.0', id: 1, result: expect.objectContaining({ content: [{ type: 'text', text }] }) },
      ]);
    }
    expect(spawns).toHaveLength(1);
  });

  it('cancels upstream with notifications/cancelled for the remapped id when the channel closes first, and the instance keeps serving', async () => {
    const { dir } = configDir();
    const { sidecar, spawns } = composition(dir);
    // A first tools/call has the host read the tool list for its Mcp-Param check (kept for the
    // list's ttlMs): without it, the one call in flight below could be that list, not the wait.
    await exchange(sidecar, 'alice', request(1, 'tools/call', { name: 'echo', arguments: { message: 'tool list read' } }));
    const waiting = await send(sidecar, 'alice', request('agent-id', 'tools/call', { name: 'wait', arguments: {} }));
    const instance = await waitFor(() => sidecar.modernInstances.instances().find((i) => i.inFlight === 1), 'the wait call in flight');
    await waiting.agentEnd.close();
    await waiting.closed;
    // The agent's end settles first; the host's end hears of the close a little later.
    await expect.poll(() => instance.inFlight, { timeout: 10_000 }).toBe(0);
    const [answer] = await exchange(sidecar, 'alice', request(2, 'tools/call', { name: 'cancelled', arguments: {} }));
    expect(answer).toMatchObject({ id: 2, result: { content: [{ type: 'text', text: expect.stringMatching(/^\[\d+\]$/) }] } });
    expect(waiting.messages).toEqual([]);
    expect(spawns).toHaveLength(1);
  });
});

describe('a modern request whose agent leaves while the host prepares it', () => {
  /** Records what the host forwards to `instance`, and holds the answers of the requests `hold` picks until `release`. */
  function tap(instance: ServerInstance, hold: (request: InstanceRequest) => boolean) {
    const forwarded: string[] = [];
    const held = deferred();
    const asked = deferred();
    const call = instance.call.bind(instance);
    instance.call = (request, sink) => {
      forwarded.push(request.method === 'tools/call' ? `tools/call ${String(request.params?.name)}` : request.method);
      const started = call(request, sink);
      if (!hold(request)) return started;
      asked.resolve();
      return { ...started, outcome: held.promise.then(() => started.outcome) };
    };
    return { forwarded, asked: asked.promise, release: () => held.resolve() };
  }

  /**
   * After `release`, what the held request does next runs on microtasks alone; a round trip to the
   * process (this exchange) is I/O, so it comes after all of them: whatever was going to be
   * forwarded has been by then.
   */
  const cancelledIds = async (sidecar: SidecarComposition) => {
    const [answer] = await exchange(sidecar, 'alice', request(2, 'tools/call', { name: 'cancelled', arguments: {} }));
    return JSON.parse((answer as unknown as { result: { content: [{ text: string }] } }).result.content[0].text) as number[];
  };

  it("forwards no call when the channel closed while the Mcp-Param check read the server's tool list", async () => {
    const { dir } = configDir();
    const { sidecar } = composition(dir);
    await exchange(sidecar, 'alice', request('d', 'server/discover'));
    const [instance] = sidecar.modernInstances.instances();
    const tapped = tap(instance!, (r) => r.method === 'tools/list');
    const waiting = await send(sidecar, 'alice', request('agent-id', 'tools/call', { name: 'wait', arguments: {} }));
    await tapped.asked;
    await waiting.agentEnd.close();
    await waiting.hostClosed;
    tapped.release();
    expect(await cancelledIds(sidecar)).toEqual([]);
    expect(tapped.forwarded.filter((m) => m.startsWith('tools/call'))).toEqual(['tools/call cancelled']);
    expect(instance!.inFlight).toBe(0);
    expect(waiting.messages).toEqual([]);
  });

  it('forwards no call when the channel closed while its instance was launching', async () => {
    const { dir } = configDir();
    const { sidecar, spawns } = composition(dir);
    const pool = sidecar.modernInstances;
    const acquire = pool.acquire.bind(pool);
    const launched = deferred<ServerInstance>();
    const held = deferred();
    let first = true;
    pool.acquire = async (key, start) => {
      const instance = await acquire(key, start);
      if (!first) return instance;
      first = false;
      launched.resolve(instance);
      await held.promise;
      return instance;
    };
    const waiting = await send(sidecar, 'alice', request('agent-id', 'tools/call', { name: 'wait', arguments: {} }));
    const tapped = tap(await launched.promise, () => false);
    await waiting.agentEnd.close();
    await waiting.hostClosed;
    held.resolve();
    expect(await cancelledIds(sidecar)).toEqual([]);
    expect(tapped.forwarded.filter((m) => m.startsWith('tools/call'))).toEqual(['tools/call cancelled']);
    expect(pool.instances()[0]!.inFlight).toBe(0);
    expect(spawns).toHaveLength(1);
  });
});

describe('the era verdict cache', () => {
  it('probes a config once: a second launch of it does not probe again, a changed config does', async () => {
    const { dir, write, servers } = configDir();
    const { sidecar, spawns } = composition(dir);
    const eras = sidecar.modernInstances.eras;
    await exchange(sidecar, 'alice', request(1, 'tools/list'));
    await exchange(sidecar, 'bob', request(1, 'tools/list'));
    expect(spawns).toHaveLength(2);
    expect(eras.probes(keyOf('modern', servers.modern))).toBe(1);
    expect(eras.get(keyOf('modern', servers.modern))).toMatchObject({ era: 'modern' });
    const changed: Server = { ...servers.modern, env: { FIXTURE_VARIANT: '2' } };
    write('mcp-servers/mcp.json', { mcpServers: { ...servers, modern: changed } });
    const [list] = await exchange(sidecar, 'carol', request(1, 'tools/list'));
    expect(list).toMatchObject({ result: { ttlMs: 60000 } });
    expect(spawns).toHaveLength(3);
    expect(eras.probes(keyOf('modern', changed))).toBe(1);
    expect(eras.probes(keyOf('modern', servers.modern))).toBe(1);
  });

  it('probes again when a server cached as legacy turns out modern', async () => {
    const { dir, write, servers } = configDir();
    const { sidecar, spawns } = composition(dir);
    const key = keyOf('switch', servers.switch);
    const [legacy] = await exchange(sidecar, 'alice', request(1, 'tools/list'), 'switch');
    expect(legacy).toMatchObject({ result: { ttlMs: 0, cacheScope: 'private' } });
    expect(sidecar.modernInstances.eras.get(key)).toEqual({ era: 'legacy' });
    write('era-flag', 'modern');
    process.kill(spawns[0]!.pid!, 'SIGKILL');
    await waitFor(() => (sidecar.modernInstances.size === 0 ? true : undefined), 'the killed instance to leave the pool');
    const [modern] = await exchange(sidecar, 'alice', request(2, 'tools/list'), 'switch');
    expect(modern).toMatchObject({ id: 2, result: { ttlMs: 60000, cacheScope: 'public' } });
    expect(sidecar.modernInstances.eras.probes(key)).toBe(2);
    expect(sidecar.modernInstances.eras.get(key)).toMatchObject({ era: 'modern' });
    // The relaunched instance is the pool's (review s23: the refused start's end dropped its entry,
    // so the next request launched a duplicate and the first was left to its idle clock).
    expect(sidecar.modernInstances.size).toBe(1);
    await exchange(sidecar, 'alice', request(3, 'tools/list'), 'switch');
    expect(sidecar.modernInstances.size).toBe(1);
    expect(spawns).toHaveLength(3);
  });

  it('probes again when a server cached as modern answers server/discover as a legacy one', async () => {
    const { dir, write, servers } = configDir();
    write('era-flag', 'modern');
    const { sidecar, spawns } = composition(dir);
    const key = keyOf('switch', servers.switch);
    await exchange(sidecar, 'alice', request(1, 'tools/list'), 'switch');
    expect(sidecar.modernInstances.eras.get(key)).toMatchObject({ era: 'modern' });
    write('era-flag', 'legacy');
    process.kill(spawns[0]!.pid!, 'SIGKILL');
    await waitFor(() => (sidecar.modernInstances.size === 0 ? true : undefined), 'the killed instance to leave the pool');
    const [refused] = await exchange(sidecar, 'alice', request(2, 'server/discover'), 'switch');
    expect(refused).toMatchObject({ id: 2, error: { code: -32601 } });
    expect(sidecar.modernInstances.eras.get(key)).toBeUndefined();
    await waitFor(() => (sidecar.modernInstances.size === 0 ? true : undefined), 'the wrong-era instance to end');
    const [discover] = await exchange(sidecar, 'alice', request(3, 'server/discover'), 'switch');
    expect(discover).toMatchObject({ id: 3, result: { supportedVersions: ['2026-07-28'], ttlMs: 0, cacheScope: 'private' } });
    expect(sidecar.modernInstances.eras.probes(key)).toBe(2);
    expect(sidecar.modernInstances.eras.get(key)).toEqual({ era: 'legacy' });
  });
});

describe('a modern server\'s era, judged by its server/discover answers', () => {
  it('is doubted when the server refuses server/discover itself, not when its answer never came (an HTTP stream broken off, a proxy\'s 502)', async () => {
    const { ModernServerInstance } = await import('./modern-server-instance.ts');
    const { silentLogger } = await import('../../log.ts');
    const errors = {
      brokeOff: { code: -32009, message: 'The HTTP server ended its answer to server/discover without one', data: { reason: 'server-exited' } },
      proxy: { code: -32009, message: 'The HTTP server answered server/discover with HTTP 502 and no modern error', data: { reason: 'server-exited', status: 502 } },
      legacy: { code: -32601, message: 'Method not found' },
      noSession: { code: -32009, message: 'The HTTP server answered server/discover with HTTP 400 and no modern error', data: { reason: 'server-exited', status: 400 } },
    };
    const doubted: string[] = [];
    for (const [kind, error] of Object.entries(errors)) {
      const [hostEnd, server] = createInMemoryChannelPair();
      server.onmessage = (raw) => {
        const message = raw as { id?: number; method?: string };
        if (message.method === 'server/discover') void server.send({ jsonrpc: '2.0', id: message.id!, error } as JSONRPCMessage);
      };
      await server.start();
      const instance = await ModernServerInstance.start({ server: 'm', transport: hostEnd, discover: null, log: silentLogger, onEraMismatch: () => doubted.push(kind) });
      const call = instance.call({ method: 'server/discover', params: { _meta: {} } }, { logLevel: null, notify: () => {} });
      expect(await call.outcome).toEqual({ error });
      await instance.close();
    }
    expect(doubted).toEqual(['legacy', 'noSession']);
  });
});

