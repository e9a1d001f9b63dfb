/**
 * A legacy (session-based) agent and a modern (2026-07-28) stdio server: the real handler in the
 * production composition, the real executor, the SDK's legacy Client over an in-memory channel,
 * the modern echo fixture (which refuses `initialize` and any request without the modern
 * `_meta`) and the SDK-free legacy echo fixture beside it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { fixtureServer } from '../../../test/support/paths.ts';
import type { SpawnAttempt } from '../../process/process-executor.ts';
import { createSidecarComposition, type SidecarComposition } from '../composition.ts';
import { serverEraKey } from './server-era.ts';

const SERVERS = { modern: fixtureServer('modern-echo-server.mjs'), legacy: fixtureServer('raw-echo-server.mjs') };
const keyOf = (name: keyof typeof SERVERS) => serverEraKey(name, { ...SERVERS[name], env: {} });

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function composition(limits?: Parameters<typeof createSidecarComposition>[0]['limits']) {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-legacy-agent-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(dirname(join(dir, 'mcp-servers/mcp.json')), { recursive: true });
  writeFileSync(join(dir, 'mcp-servers/mcp.json'), JSON.stringify({ mcpServers: SERVERS }));
  const spawns: SpawnAttempt[] = [];
  const sidecar = createSidecarComposition({
    configDir: dir,
    entityId: 'alice-laptop',
    user: 'alice',
    trust: { allowUncontained: true },
    executor: { onSpawn: (s) => spawns.push(s), termGraceMs: 500 },
    ...(limits !== undefined ? { limits } : {}),
  });
  cleanups.push(() => sidecar.stop());
  return { sidecar, spawns };
}

let sessions = 0;

async function connect(sidecar: SidecarComposition, server: string): Promise<Client> {
  const [agentEnd, hostEnd] = createInMemoryChannelPair();
  expect(await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': server, agent: 'alice', session: `legacy-${++sessions}` } }, hostEnd)).not.toBeNull();
  const client = new Client({ name: 'legacy-agent', version: '1.0.0' }, { capabilities: { roots: {} } });
  cleanups.push(() => client.close());
  await client.connect(agentEnd);
  return client;
}

describe('a legacy agent and a modern server', () => {
  it('is served even when the server is cached as legacy, which it no longer is (an in-place update; review s23)', async () => {
    const { sidecar } = composition();
    sidecar.modernInstances.eras.set(keyOf('modern'), { era: 'legacy' });
    const client = await connect(sidecar, 'modern');
    expect(client.getServerVersion()).toEqual({ name: 'modern-echo-fixture', version: '1.0.0' });
    expect(sidecar.modernInstances.eras.get(keyOf('modern'))).toMatchObject({ era: 'modern' });
  });

  it("gets initialize answered by the host from the server's discover result, and its tools with the modern _meta added", async () => {
    const { sidecar } = composition();
    const client = await connect(sidecar, 'modern');
    expect(client.getServerVersion()).toEqual({ name: 'modern-echo-fixture', version: '1.0.0' });
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: true } });
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(['echo', 'wait', 'cancelled', 'touch-tools', 'ask', 'regional']);
    const result = await client.callTool({ name: 'echo', arguments: { message: 'legacy to modern' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: legacy to modern' }]);
    expect(sidecar.modernInstances.eras.get(keyOf('modern'))).toMatchObject({ era: 'modern' });
  });

  it('answers ping and logging/setLevel, which a modern server no longer has, on the host', async () => {
    const { sidecar } = composition();
    const client = await connect(sidecar, 'modern');
    await expect(client.ping()).resolves.toEqual({});
    await expect(client.setLoggingLevel('info')).resolves.toEqual({});
    expect((await client.callTool({ name: 'echo', arguments: { message: 'still' } })).content).toEqual([{ type: 'text', text: 'Echo: still' }]);
  });

  it('serves a second session of a config already known to be modern, on a process of its own', async () => {
    const { sidecar, spawns } = composition();
    await connect(sidecar, 'modern');
    const second = await connect(sidecar, 'modern');
    expect(spawns).toHaveLength(2);
    expect((await second.callTool({ name: 'echo', arguments: { message: 'second session' } })).content).toEqual([{ type: 'text', text: 'Echo: second session' }]);
  });
  it('counts the listen the host keeps open for the session as no work: the process is idle, and ended to make room for the agent\'s next launch (review s20)', async () => {
    const { sidecar } = composition({ processesPerAgent: 1, processes: 64, memoryLimitMib: 0, launchBurstPerAgent: 8, launchesPerAgentPerMinute: 60 });
    const first = await connect(sidecar, 'modern');
    expect((await first.callTool({ name: 'echo', arguments: { message: 'then idle' } })).content).toEqual([{ type: 'text', text: 'Echo: then idle' }]);
    const ended = new Promise<unknown>((resolve) => (first.onerror = resolve));
    const second = await connect(sidecar, 'legacy');
    expect((await second.callTool({ name: 'echo', arguments: { message: 'room made' } })).content).toEqual([{ type: 'text', text: 'Echo: room made' }]);
    expect(await ended).toMatchObject({ reason: 'limit-reached' });
  });
});

describe('a legacy agent and a legacy server', () => {
  it('passes the session through untouched and remembers the server as legacy', async () => {
    const { sidecar } = composition();
    const client = await connect(sidecar, 'legacy');
    expect((await client.callTool({ name: 'echo', arguments: { message: 'as ever' } })).content).toEqual([{ type: 'text', text: 'Echo: as ever' }]);
    expect(sidecar.modernInstances.eras.get(keyOf('legacy'))).toEqual({ era: 'legacy' });
    expect(sidecar.modernInstances.eras.probes(keyOf('legacy'))).toBe(0);
  });
});

describe('a server that refuses initialize and never answers server/discover (review of s23)', () => {
  it('gives the agent the refusal after the probe\'s wait, not never, and drops the late discover answer', async () => {
    const { vi } = await import('vitest');
    const { LegacyAgentTransport } = await import('../../../shared/era-bridge/legacy-agent-transport.ts');
    const { ServerEraCache, DEFAULT_PROBE_TIMEOUT_MS } = await import('../../../shared/era-bridge/discover-verdict.ts');
    const { silentLogger } = await import('../../log.ts');
    const [hostEnd, server] = createInMemoryChannelPair();
    let discoverId: unknown;
    server.onmessage = (raw) => {
      const message = raw as { id?: unknown; method?: string };
      if (message.method === 'initialize') void server.send({ jsonrpc: '2.0', id: message.id as number, error: { code: -32600, message: 'Not now' } });
      if (message.method === 'server/discover') discoverId = message.id;
    };
    await server.start();
    const transport = new LegacyAgentTransport(hostEnd, { server: 'stubborn', eraKey: 'stubborn#1', eras: new ServerEraCache(), log: silentLogger });
    const heard: unknown[] = [];
    transport.onmessage = (message) => heard.push(message);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await transport.start();
      await transport.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'a', version: '1' } } });
      await new Promise((resolve) => setImmediate(resolve));
      expect(discoverId).toBeDefined();
      expect(heard).toEqual([]);
      vi.advanceTimersByTime(DEFAULT_PROBE_TIMEOUT_MS);
      expect(heard).toEqual([{ jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'Not now' } }]);
      await server.send({ jsonrpc: '2.0', id: discoverId as string, error: { code: -32601, message: 'Method not found' } });
      await new Promise((resolve) => setImmediate(resolve));
      expect(heard).toHaveLength(1);
    } finally {
      vi.useRealTimers();
      await transport.close();
    }
  });
});
