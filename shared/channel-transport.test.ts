import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { RootsListChangedNotificationSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { closeInfoOf, createInMemoryChannelPair } from './channel-transport.ts';
import { LocalError } from './errors.ts';

async function connectedPair() {
  const [clientEnd, serverEnd] = createInMemoryChannelPair();
  const server = new McpServer({ name: 'channel-test', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('add', { inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  const rootsChanged = new Promise<void>((resolve) =>
    server.server.setNotificationHandler(RootsListChangedNotificationSchema, async () => resolve()),
  );
  await server.connect(serverEnd);
  const client = new Client({ name: 'channel-client', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } });
  await client.connect(clientEnd);
  return { client, server, clientEnd, serverEnd, rootsChanged };
}

describe('ChannelTransport', () => {
  it('Send_Receive_PumpsMessagesOverChannel', async () => {
    const { client, server, rootsChanged } = await connectedPair();
    expect(client.getServerVersion()?.name).toBe('channel-test');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(['add']);
    const result = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
    expect(result.content).toEqual([{ type: 'text', text: '42' }]);

    // One notification each way.
    await client.sendRootsListChanged();
    await rootsChanged;
    const logged = new Promise<unknown>((resolve) =>
      client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => resolve(n.params.data)),
    );
    await server.server.sendLoggingMessage({ level: 'info', data: 'hello from the server' });
    expect(await logged).toBe('hello from the server');
    await client.close();
  });

  it('Dispose_ClosesUnderlyingChannel', async () => {
    const { client, clientEnd, serverEnd } = await connectedPair();
    const serverSawClose = closeInfoOf(serverEnd);
    await client.close();
    expect(clientEnd.closed).toBe(true);
    expect(await serverSawClose).toEqual({});
    expect(serverEnd.closed).toBe(true);
    await expect(clientEnd.send({ jsonrpc: '2.0', method: 'ping', id: 1 })).rejects.toThrow();
  });

  it('surfaces a failure close as an error carrying its reason, then closes', async () => {
    const { client, serverEnd } = await connectedPair();
    const errors: unknown[] = [];
    client.onerror = (e) => errors.push(e);
    const closed = new Promise<void>((resolve) => (client.onclose = () => resolve()));
    const pending = client.callTool({ name: 'add', arguments: { a: 1, b: 1 } }).catch((e: unknown) => e);
    await serverEnd.close({ reason: 'host-offline', message: 'Host "h" went offline' });
    await closed;
    expect(errors.map((e) => (e as { reason?: string }).reason)).toContain('host-offline');
    expect(await pending).toBeInstanceOf(Error);
  });

  it('refuses to start twice', async () => {
    const [a] = createInMemoryChannelPair();
    await a.start();
    await expect(a.start()).rejects.toBeInstanceOf(LocalError);
  });

  it('queues what arrives before start, then delivers it and a close that already happened', async () => {
    const [a, b] = createInMemoryChannelPair();
    await a.send({ jsonrpc: '2.0', method: 'first' });
    await a.close({ reason: 'server-exited', message: 'Server exited with code 3' });
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    const received: unknown[] = [];
    b.onmessage = (message) => received.push(message);
    const closed = closeInfoOf(b);
    await b.start();
    expect(await closed).toEqual({ reason: 'server-exited', message: 'Server exited with code 3' });
    expect(received).toEqual([{ jsonrpc: '2.0', method: 'first' }]);
    await expect(b.send({ jsonrpc: '2.0', method: 'x' })).rejects.toMatchObject({ reason: 'server-exited' });
  });
});
