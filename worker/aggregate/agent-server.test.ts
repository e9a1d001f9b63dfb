import { describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { AgentServer, STANDALONE_WAIT_MS, type AgentServerOptions } from './agent-server.ts';
import { RpcError } from './rpc/peer-errors.ts';

function agentServer(options: Partial<AgentServerOptions>): AgentServer {
  return new AgentServer({
    serverInfo: { name: 'switchyard', version: '0.1.0' },
    capabilities: { tools: { listChanged: true } },
    instructions: 'Aggregated',
    requests: {},
    notifications: {},
    ...options,
  });
}

/** The answer to an initialize asking for `protocolVersion` (the SDK client always asks for the latest). */
async function initializeAnswer(protocolVersion: string): Promise<unknown> {
  const [agentEnd, serverEnd] = createInMemoryChannelPair();
  await agentServer({}).connect(serverEnd);
  await agentEnd.start();
  const answered = new Promise((resolve) => (agentEnd.onmessage = resolve));
  await agentEnd.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'a', version: '1' } } });
  return answered;
}

/** The agent-facing server on one end of an in-memory channel, a real SDK client on the other. */
async function connected(options: Partial<AgentServerOptions> = {}) {
  const server = agentServer(options);
  const [agentEnd, serverEnd] = createInMemoryChannelPair();
  await server.connect(serverEnd);
  const client = new Client({ name: 'agent', version: '1' });
  await client.connect(agentEnd);
  return { server, client };
}

describe('AgentServer', () => {
  it('answers initialize with its info, capabilities and instructions', async () => {
    const { client } = await connected();
    expect(client.getServerVersion()).toEqual({ name: 'switchyard', version: '0.1.0' });
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: true } });
    expect(client.getInstructions()).toBe('Aggregated');
  });

  it('keeps a supported protocol version the agent asks for and answers any other with the latest', async () => {
    expect(await initializeAnswer('2025-03-26')).toMatchObject({ result: { protocolVersion: '2025-03-26' } });
    expect(await initializeAnswer('1999-01-01')).toMatchObject({ result: { protocolVersion: '2025-11-25' } });
  });

  it('routes requests to their handler and answers any other method with -32601', async () => {
    const { client } = await connected({
      requests: {
        'tools/list': async () => ({ tools: [{ name: 'a__echo', inputSchema: { type: 'object' } }] }),
        'tools/call': async (params) => {
          throw new RpcError(-32602, `Unknown tool "${String(params.name)}"`);
        },
      },
    });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['a__echo']);
    await expect(client.callTool({ name: 'nope' })).rejects.toMatchObject({ code: -32602, message: 'MCP error -32602: Unknown tool "nope"' });
    await expect(client.listPrompts()).rejects.toMatchObject({ code: -32601 });
    expect(await client.ping()).toEqual({});
  });

  it('announces a list change once however often it is announced in one turn', async () => {
    const { server, client } = await connected();
    let heard = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void heard++);
    for (let i = 0; i < 3; i++) server.announce('notifications/tools/list_changed');
    await client.ping(); // the announcement travels ahead of this round trip
    expect(heard).toBe(1);
    server.announce('notifications/tools/list_changed');
    await client.ping();
    expect(heard).toBe(2);
  });

  it('asks the agent on its standalone stream once the agent opens it, and refuses when it opens none in time (review s20)', async () => {
    vi.useFakeTimers();
    try {
      const server = agentServer({});
      const [agentEnd, serverEnd] = createInMemoryChannelPair();
      // The endpoint's view: no GET stream open yet.
      const stream = Object.assign(serverEnd, { standaloneOpen: false, onstandaloneopen: undefined as (() => void) | undefined });
      await server.connect(stream);
      const sent: unknown[] = [];
      agentEnd.onmessage = (message) => void sent.push(message);
      await agentEnd.start();
      const late = server.request('roots/list', {}).catch((error: RpcError) => error);
      await vi.advanceTimersByTimeAsync(STANDALONE_WAIT_MS);
      expect(await late).toMatchObject({ code: -32603, data: { reason: 'invalid-request' }, message: expect.stringMatching(/^The agent cannot be asked roots\/list: it has no stream open \(GET \/mcp\) to be asked on/) });
      expect(sent).toEqual([]);
      const asked = server.request('roots/list', {});
      stream.standaloneOpen = true;
      stream.onstandaloneopen?.();
      await vi.advanceTimersByTimeAsync(0);
      expect(sent).toEqual([expect.objectContaining({ method: 'roots/list' })]);
      void asked.catch(() => {});
    } finally {
      vi.useRealTimers();
    }
  });
});
