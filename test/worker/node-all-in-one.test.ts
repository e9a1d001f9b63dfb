/**
 * The worker under Node (`startNodeWorker`): the all-in-one mode, where servers bound to
 * `{"type":"local"}` go through the router's `localHost` factory straight to the sidecar's
 * production handler over an in-memory channel pair (no link, no socket), and the Node adapter's
 * `/link` WebSockets with a sidecar process dialling in.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpConnectionRequest } from '../../shared/connection-request.ts';
import { createInMemoryChannelPair, type ChannelTransport } from '../../shared/channel-transport.ts';
import { createSidecarComposition, type SidecarComposition } from '../../sidecar/host/composition.ts';
import { silentLogger } from '../../sidecar/log.ts';
import { startNodeWorker, type NodeWorker } from '../../worker/adapters/node/node-worker.ts';
import { sha256Hex } from '../../worker/auth/agent-auth.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { hostCredential, workerHostEntry, writeSidecarDir } from '../support/configs.ts';
import { fixtureServer } from '../support/paths.ts';
import { isAlive, ProcessSet, waitUntil } from '../support/processes.ts';
import { startSidecar } from '../support/sidecar-process.ts';

const ECHO = fixtureServer('echo-server.mjs');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function configDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-node-worker-'));
  mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { echo: ECHO } }));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The all-in-one wiring: the router's local host is the sidecar's listener, in memory. */
async function allInOne(): Promise<{ node: NodeWorker; sidecar: SidecarComposition; localOpens: McpConnectionRequest[]; pids: number[] }> {
  const pids: number[] = [];
  const sidecar = createSidecarComposition({
    configDir: configDir(),
    entityId: 'this-machine',
    user: 'tester',
    log: silentLogger,
    executor: { onSpawn: (attempt) => attempt.pid !== undefined && pids.push(attempt.pid) },
  });
  cleanups.push(() => sidecar.stop());
  const localOpens: McpConnectionRequest[] = [];
  const localHost = async (request: McpConnectionRequest): Promise<ChannelTransport> => {
    localOpens.push(request);
    const [workerEnd, hostEnd] = createInMemoryChannelPair();
    await sidecar.onOpen(request, hostEnd);
    return workerEnd;
  };
  const node = await startNodeWorker({
    config: {
      agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['echo'] }],
      hosts: [],
      servers: { echo: { executor: { type: 'local' } } },
    },
    localHost,
  });
  cleanups.push(() => node.close());
  return { node, sidecar, localOpens, pids };
}

describe('worker under Node, all-in-one mode', () => {
  it('Scenario3_LocalBoundMcpServer_ConnectsInProcess_NoTransportRoundTrip', async () => {
    const { node, sidecar, localOpens, pids } = await allInOne();
    const client = await connectClient(`${node.url}/servers/echo/mcp`, 'alice-token');
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'in process' } })).toEqual({ content: [{ type: 'text', text: 'Echo: in process' }] });
      expect(localOpens).toEqual([{ type: 'mcp', connection: { 'server-name': 'echo', session: (client.transport as { sessionId?: string }).sessionId, agent: 'alice' } }]);
      expect(sidecar.listeners.mcp.hostedCount).toBe(1);
      // No link: the sidecar has no link client and the worker's registry never saw a host.
      expect(sidecar.link).toBeNull();
      expect(node.worker.registry.status()).toEqual([]);
    } finally {
      await closeClient(client);
    }
    await waitUntil(() => sidecar.listeners.mcp.hostedCount === 0, 'the hosted connection to end');
    await waitUntil(() => pids.every((pid) => !isAlive(pid)), 'the server process to end');
  });

  it('ProvideAIContext_BoundLocal_UsesInProcessFactory_NoRoundTrip', async () => {
    const { node, sidecar, localOpens } = await allInOne();
    const client = await connectClient(`${node.url}/mcp`, 'alice-token');
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo__echo']);
      expect(await client.callTool({ name: 'echo__echo', arguments: { message: 'aggregated locally' } })).toEqual({
        content: [{ type: 'text', text: 'Echo: aggregated locally' }],
      });
      expect(localOpens).toHaveLength(1);
      expect(sidecar.link).toBeNull();
      expect(node.worker.registry.status()).toEqual([]);
    } finally {
      await closeClient(client);
    }
  });

  it('rejects a local binding when no local host is given (edge runtime rules)', async () => {
    await expect(startNodeWorker({
      config: { agents: [], servers: { echo: { executor: { type: 'local' } } } },
    })).rejects.toThrow(/needs the all-in-one Node mode/);
  });
});

describe('worker under Node, with a sidecar process on /link', () => {
  it('links a sidecar over the Node adapter\'s WebSockets and routes a session through it', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const host = hostCredential('laptop', 'node-link-secret-2e8f');
    const node = await startNodeWorker({
      config: {
        agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['echo'] }],
        hosts: [workerHostEntry(host)],
        servers: { echo: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } } },
      },
    });
    cleanups.push(() => node.close());
    const dir = configDir();
    writeSidecarDir(dir, { worker: node.url, host });
    startSidecar(procs, dir);
    await waitUntil(() => node.worker.registry.status()[0]?.linked === true, 'the sidecar to link');
    const client = await connectClient(`${node.url}/servers/echo/mcp`, 'alice-token');
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'over ws' } })).toEqual({ content: [{ type: 'text', text: 'Echo: over ws' }] });
      expect(node.worker.registry.status()[0]!.channels).toBe(1);
    } finally {
      await closeClient(client);
    }
    await waitUntil(() => node.worker.registry.status()[0]!.channels === 0, 'the channel to close');
  });
});
