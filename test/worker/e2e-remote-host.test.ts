/**
 * End to end over a real link: SDK client → worker under the real Deno binary → link (WebSocket
 * dialled by the sidecar) → sidecar under Node built by the production composition → real MCP
 * servers (stdio processes, and an HTTP server reached from the sidecar's workstation).
 *
 * Counterparts of the upstream note's Scenario3 and ProvideAIContext tests (see the test names).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateMessageRequestSchema, ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { sha256Hex } from '../../worker/auth/agent-auth.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { hostCredential, workerHostEntry, writeSidecarDir } from '../support/configs.ts';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { isAlive, ProcessSet, startEverythingHttp, waitUntil } from '../support/processes.ts';
import { startSidecar, type SidecarProcess } from '../support/sidecar-process.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

const ENTITY = 'alice-laptop';
const HOST = hostCredential(ENTITY);
const procs = new ProcessSet();
let dir: string;
let worker: { url: string };
let sidecar: SidecarProcess;

beforeAll(async () => {
  const everythingHttp = await startEverythingHttp(procs);
  dir = mkdtempSync(join(tmpdir(), 'switchyard-worker-e2e-'));
  const onLaptop = { type: 'user-computer-profile', 'entity-id': ENTITY, target: { type: 'local' } };
  worker = await startWorkerProcess(procs, {
    agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers: ['everything', 'echo', 'web', 'web-inner', 'offline'] }],
    hosts: [workerHostEntry(HOST), workerHostEntry(hostCredential('bob-desktop'))],
    servers: {
      everything: { executor: onLaptop },
      echo: { executor: { type: 'reverse-http', 'entity-id': ENTITY } },
      web: { executor: onLaptop },
      'web-inner': { executor: { type: 'user-computer-profile', 'entity-id': ENTITY, target: { type: 'http', url: everythingHttp.url } } },
      offline: { executor: { type: 'user-computer-profile', 'entity-id': 'bob-desktop', target: { type: 'local' } } },
    },
    'admin-token-sha256': await sha256Hex('admin-token'),
    // One agent opens 20 sessions at once below: more than the default per-agent limit.
    'max-sessions-per-agent': 24,
  }, { dir });
  writeSidecarDir(join(dir, 'sidecar'), {
    worker: worker.url,
    host: HOST,
    servers: {
      everything: everythingServer(),
      echo: fixtureServer('echo-server.mjs'),
      web: { url: everythingHttp.url },
      'web-inner': { url: everythingHttp.url },
    },
  });
  sidecar = startSidecar(procs, join(dir, 'sidecar'));
  await waitUntil(async () => (await health()).hosts.find((h) => h['entity-id'] === ENTITY)?.linked === true, 'the sidecar to link');
});

afterAll(async () => {
  await procs.stopAll();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

interface Health {
  hosts: Array<{ 'entity-id': string; linked: boolean; channels: number }>;
  servers: Array<{ name: string; binding: string; state: string }>;
  sessions: number;
}

async function health(): Promise<Health> {
  return (await (await fetch(`${worker.url}/healthz`, { headers: { authorization: 'Bearer admin-token' } })).json()) as Health;
}

function hostingLines(session: string | undefined): Array<Record<string, unknown>> {
  return sidecar.lines().filter((l) => l.msg === 'Hosting server' && l.session === session);
}

describe('worker under Deno → link → sidecar under Node → MCP servers', () => {
  it('Scenario3_RemoteBoundMcpServer_RoutesOverTransport', async () => {
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token');
    try {
      const session = (client.transport as { sessionId?: string }).sessionId;
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
      const hosted = hostingLines(session);
      expect(hosted).toEqual([expect.objectContaining({ server: 'everything', agent: 'alice', kind: 'stdio' })]);
      const host = (await health()).hosts.find((h) => h['entity-id'] === ENTITY)!;
      expect(host.linked).toBe(true);
      expect(host.channels).toBeGreaterThanOrEqual(1);
    } finally {
      await closeClient(client);
    }
  });

  it('Scenario3_RemoteHost_OpensStdioMcpConnection_ViaProductionHandler', async () => {
    const spawnedBefore = sidecar.serverPids().length;
    const client = await connectClient(`${worker.url}/servers/echo/mcp`, 'alice-token');
    try {
      expect(client.getServerVersion()?.name).toBe('echo-fixture');
      expect(hostingLines((client.transport as { sessionId?: string }).sessionId)).toEqual([expect.objectContaining({ server: 'echo', kind: 'stdio' })]);
      expect(sidecar.serverPids().length).toBe(spawnedBefore + 1);
    } finally {
      await closeClient(client);
    }
  });

  it('Scenario3_RemoteHost_OpensHttpMcpConnection_ViaProductionHandler', async () => {
    for (const name of ['web', 'web-inner']) {
      const client = await connectClient(`${worker.url}/servers/${name}/mcp`, 'alice-token');
      try {
        expect(client.getServerVersion()?.name).toMatch(/everything/);
        expect(hostingLines((client.transport as { sessionId?: string }).sessionId)).toEqual([expect.objectContaining({ server: name, kind: 'http' })]);
        expect(await client.callTool({ name: 'echo', arguments: { message: name } })).toMatchObject({ content: [{ type: 'text', text: `Echo: ${name}` }] });
      } finally {
        await closeClient(client);
      }
    }
  });

  it('Scenario3_RemoteBoundMcpServer_ToolCall_RoundTripsResult', async () => {
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token');
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'over the link' } })).toEqual({ content: [{ type: 'text', text: 'Echo: over the link' }] });
      const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
      expect(JSON.stringify(sum)).toContain('42');
    } finally {
      await closeClient(client);
    }
  });

  it('Scenario3_RemoteBoundMcpServer_ToolError_RoundTripsError', async () => {
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token');
    try {
      const toolError = await client.callTool({ name: 'echo', arguments: {} });
      expect(toolError.isError).toBe(true);
      expect(JSON.stringify(toolError.content)).toContain('validation');
      const rpcError = (await client.getPrompt({ name: 'no-such-prompt' }).catch((e: unknown) => e)) as McpError;
      expect(rpcError).toBeInstanceOf(McpError);
      expect(rpcError.code).toBe(-32602);
      expect(rpcError.message).toContain('no-such-prompt');
    } finally {
      await closeClient(client);
    }
  });

  it('round-trips sampling and elicitation through /servers/everything/mcp over the link', async () => {
    const client = await connectClient(`${worker.url}/servers/everything/mcp`, 'alice-token', { sampling: {}, elicitation: {} });
    try {
      client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'agent-model', content: { type: 'text', text: 'from the agent' } }));
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Grace Hopper' } }));
      const sampled = JSON.stringify(await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 5 } }));
      expect(sampled).toContain('from the agent');
      const elicited = JSON.stringify(await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }));
      expect(elicited).toContain('Grace Hopper');
    } finally {
      await closeClient(client);
    }
  });

  it('ProvideAIContext_BoundRemote_ConnectsViaRouter', async () => {
    const client = await connectClient(`${worker.url}/mcp`, 'alice-token');
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['everything__echo', 'echo__echo', 'web__echo', 'web-inner__echo', 'offline__unavailable']));
      expect(await client.callTool({ name: 'echo__echo', arguments: { message: 'aggregated' } })).toEqual({ content: [{ type: 'text', text: 'Echo: aggregated' }] });
    } finally {
      await closeClient(client);
    }
  });

  it('ProvideAIContext_BoundRemote_ExecutorTargetRouterExercisedAsProductionConsumer', async () => {
    const client = await connectClient(`${worker.url}/mcp`, 'alice-token');
    try {
      const session = (client.transport as { sessionId?: string }).sessionId;
      // The router sent one McpConnectionRequest per server bound to the linked host, each naming
      // the server, the agent and this session; the server on the unlinked host got host-offline.
      const hosted = hostingLines(session).map((l) => l.server).sort();
      expect(hosted).toEqual(['echo', 'everything', 'web', 'web-inner']);
      expect(client.getInstructions()).toContain('- offline: host-offline: Host "bob-desktop" is offline');
      const offline = await client.callTool({ name: 'offline__unavailable', arguments: {} });
      expect(offline.isError).toBe(true);
      expect(offline.structuredContent).toMatchObject({ server: 'offline', reason: 'host-offline' });
    } finally {
      await closeClient(client);
    }
  });

  it('ProvideAIContext_BoundRemote_BridgesChannelViaMcpChannelClientTransport', async () => {
    const client = await connectClient(`${worker.url}/mcp`, 'alice-token', { sampling: {} });
    try {
      client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'agent-model', content: { type: 'text', text: 'sampled through the aggregate' } }));
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain('everything__trigger-sampling-request');
      const result = JSON.stringify(await client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'x', maxTokens: 5 } }));
      expect(result).toContain('sampled through the aggregate');
      const resources = (await client.listResources()).resources;
      expect(resources.length).toBeGreaterThan(0);
      const read = await client.readResource({ uri: resources[0]!.uri });
      expect(read.contents[0]!.uri).toBe(resources[0]!.uri);
    } finally {
      await closeClient(client);
    }
  });

  it('answers host-offline at once when the server\'s host has no link', async () => {
    const response = await fetch(`${worker.url}/servers/offline/mcp`, {
      method: 'POST',
      headers: { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ id: 7, error: { data: { reason: 'host-offline' } } });
  });

  it('gives each of 20 parallel agent sessions its own server process and ends every one when they close', async () => {
    const before = new Set(sidecar.serverPids());
    const clients = await Promise.all(Array.from({ length: 20 }, () => connectClient(`${worker.url}/servers/echo/mcp`, 'alice-token')));
    try {
      const answers = await Promise.all(clients.map((c, i) => c.callTool({ name: 'echo', arguments: { message: `agent ${i}` } })));
      answers.forEach((answer, i) => expect(answer).toEqual({ content: [{ type: 'text', text: `Echo: agent ${i}` }] }));
      const sessions = new Set(clients.map((c) => (c.transport as { sessionId?: string }).sessionId));
      expect(sessions.size).toBe(20);
    } finally {
      await Promise.all(clients.map(closeClient));
    }
    const spawned = sidecar.serverPids().filter((pid) => !before.has(pid));
    expect(new Set(spawned).size).toBe(20);
    await expect.poll(() => spawned.filter(isAlive), { timeout: 15_000 }).toEqual([]);
    await expect.poll(async () => (await health()).sessions, { timeout: 5_000 }).toBe(0);
  });
});
