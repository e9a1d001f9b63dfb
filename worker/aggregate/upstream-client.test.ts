import { describe, expect, it } from 'vitest';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, InitializeRequestSchema, ListRootsResultSchema, RootsListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { UpstreamClient, type UpstreamClientOptions } from './upstream-client.ts';
import type { IncomingNotification } from './rpc/json-rpc-peer.ts';
import { RequestTimeoutError } from './rpc/peer-errors.ts';

function clientOptions(overrides: Partial<UpstreamClientOptions> = {}): UpstreamClientOptions {
  return {
    clientInfo: { name: 'agent', version: '1' },
    capabilities: { roots: { listChanged: true } },
    onRequest: async () => ({}),
    onNotification: () => {},
    onclose: () => {},
    onerror: () => {},
    ...overrides,
  };
}

/** A real SDK server on one end of an in-memory channel, the upstream client on the other. */
async function connected(server: Server, options: Partial<UpstreamClientOptions> = {}) {
  const [clientEnd, serverEnd] = createInMemoryChannelPair();
  await server.connect(serverEnd);
  const client = new UpstreamClient(clientOptions(options));
  await client.connect(clientEnd, 5_000);
  return { client, clientEnd };
}

describe('UpstreamClient', () => {
  it('initializes as the SDK client did: latest version, the agent\'s info and capabilities, then initialized', async () => {
    const server = new Server({ name: 'up', version: '2' }, { capabilities: { tools: {}, logging: {} }, instructions: 'Use me' });
    let initialized = false;
    server.oninitialized = () => void (initialized = true);
    const { client, clientEnd } = await connected(server);
    expect(server.getClientVersion()).toEqual({ name: 'agent', version: '1' });
    expect(server.getClientCapabilities()).toEqual({ roots: { listChanged: true } });
    expect(client.capabilities).toEqual({ tools: {}, logging: {} });
    expect(client.instructions).toBe('Use me');
    await expect.poll(() => initialized).toBe(true);
    await client.close();
    expect(clientEnd.closed).toBe(true);
  });

  it('fails the initialize, and closes the channel, when the server answers a version it does not support', async () => {
    const server = new Server({ name: 'up', version: '2' }, { capabilities: {} });
    server.setRequestHandler(InitializeRequestSchema, async () => ({ protocolVersion: '1999-01-01', capabilities: {}, serverInfo: { name: 'up', version: '2' } }));
    const [clientEnd, serverEnd] = createInMemoryChannelPair();
    await server.connect(serverEnd);
    const client = new UpstreamClient(clientOptions());
    await expect(client.connect(clientEnd, 5_000)).rejects.toThrow("Server's protocol version is not supported: 1999-01-01");
    await expect.poll(() => clientEnd.closed).toBe(true);
  });

  it('gives up on an initialize that is not answered in time', async () => {
    const [clientEnd, serverEnd] = createInMemoryChannelPair();
    await serverEnd.start(); // a server that reads and never answers
    const client = new UpstreamClient(clientOptions());
    await expect(client.connect(clientEnd, 1)).rejects.toEqual(new RequestTimeoutError(1));
  });

  it('hands the server\'s own requests and notifications to its owner, and forwards roots changes', async () => {
    const server = new Server({ name: 'up', version: '2' }, { capabilities: { tools: {}, logging: {} } });
    let rootsChanged = false;
    server.setNotificationHandler(RootsListChangedNotificationSchema, async () => void (rootsChanged = true));
    server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'asking' } });
      const roots = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
      return { content: [{ type: 'text', text: JSON.stringify(roots) }] };
    });
    const heard: IncomingNotification[] = [];
    const { client } = await connected(server, {
      onRequest: async (request) => ({ roots: [{ uri: 'file:///w', name: request.method }] }),
      onNotification: (n) => void heard.push(n),
    });
    const result = await client.request('tools/call', { name: 'x' });
    expect(result).toEqual({ content: [{ type: 'text', text: JSON.stringify({ roots: [{ uri: 'file:///w', name: 'roots/list' }] }) }] });
    expect(heard).toEqual([{ method: 'notifications/message', params: { level: 'info', data: 'asking' } }]);
    await client.sendRootsListChanged();
    await expect.poll(() => rootsChanged).toBe(true);
  });
});
