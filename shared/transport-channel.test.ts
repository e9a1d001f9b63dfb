import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpChannelClientTransport } from './mcp-channel-client-transport.ts';
import type { ChannelCloseInfo } from './message-channel.ts';
import { TransportChannel } from './transport-channel.ts';

async function serverBehindChannel() {
  const server = new McpServer({ name: 'behind-channel', version: '1.0.0' });
  server.registerTool('hello', { description: 'Says hello' }, async () => ({ content: [{ type: 'text', text: 'hello' }] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const channel = await TransportChannel.open(clientSide);
  return { server, channel };
}

describe('TransportChannel', () => {
  it('lets an SDK client reach a server through a channel over its transport', async () => {
    const { channel, server } = await serverBehindChannel();
    const client = new Client({ name: 'c', version: '1.0.0' });
    await client.connect(new McpChannelClientTransport(channel));
    const result = await client.callTool({ name: 'hello' });
    expect(result.content).toEqual([{ type: 'text', text: 'hello' }]);
    const serverClosed = new Promise<void>((resolve) => (server.server.onclose = resolve));
    await client.close();
    await serverClosed;
    expect(channel.closed).toBe(true);
  });

  it('hands the negotiated protocol version to the transport, as an SDK client would', async () => {
    const versions: string[] = [];
    const sent: JSONRPCMessage[] = [];
    const transport: Transport = {
      async start() {},
      async send(message) {
        sent.push(message);
        if ('method' in message && message.method === 'initialize' && 'id' in message) {
          queueMicrotask(() => transport.onmessage?.({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } } }));
        }
      },
      async close() {
        transport.onclose?.();
      },
      setProtocolVersion: (v: string) => versions.push(v),
    };
    const channel = await TransportChannel.open(transport);
    const answered = new Promise((resolve) => (channel.onmessage = resolve));
    channel.start();
    await channel.send({ jsonrpc: '2.0', id: 'init-1', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    await answered;
    expect(versions).toEqual(['2025-06-18']);
    await channel.close();
  });

  it('reports why the transport closed on its own', async () => {
    const transport: Transport = { async start() {}, async send() {}, async close() {} };
    const channel = await TransportChannel.open(transport, { closeInfo: () => ({ reason: 'server-exited', message: 'Server exited with code 3' }) });
    const closed = new Promise<ChannelCloseInfo>((resolve) => (channel.onclose = resolve));
    channel.start();
    transport.onclose?.();
    expect(await closed).toEqual({ reason: 'server-exited', message: 'Server exited with code 3' });
    await expect(channel.send({ jsonrpc: '2.0', method: 'x' })).rejects.toMatchObject({ reason: 'server-exited' });
  });
});
