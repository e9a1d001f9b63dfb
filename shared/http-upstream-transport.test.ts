import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpUpstreamTransport, httpUpstream } from './http-upstream-transport.ts';

async function serverBehindTransport() {
  const server = new McpServer({ name: 'behind-transport', version: '1.0.0' });
  server.registerTool('hello', { description: 'Says hello' }, async () => ({ content: [{ type: 'text', text: 'hello' }] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  return { server, upstream: new HttpUpstreamTransport(clientSide) };
}

describe('HttpUpstreamTransport', () => {
  it('lets an SDK client reach a server through it', async () => {
    const { upstream, server } = await serverBehindTransport();
    const client = new Client({ name: 'c', version: '1.0.0' });
    await client.connect(upstream);
    const result = await client.callTool({ name: 'hello' });
    expect(result.content).toEqual([{ type: 'text', text: 'hello' }]);
    const serverClosed = new Promise<void>((resolve) => (server.server.onclose = resolve));
    await client.close();
    await serverClosed;
    expect(upstream.closed).toBe(true);
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
    const upstream = new HttpUpstreamTransport(transport);
    const answered = new Promise((resolve) => (upstream.onmessage = resolve));
    await upstream.start();
    await upstream.send({ jsonrpc: '2.0', id: 'init-1', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    await answered;
    expect(versions).toEqual(['2025-06-18']);
    await upstream.close();
  });

  it('ends the server\'s HTTP session on close, and closes once', async () => {
    const calls: string[] = [];
    const transport = {
      sessionId: 'session-1',
      async start() {},
      async send() {},
      async terminateSession() {
        calls.push('delete');
      },
      async close() {
        calls.push('close');
        transport.onclose?.();
      },
      onclose: undefined as (() => void) | undefined,
    } satisfies Transport & { terminateSession(): Promise<void> };
    const upstream = new HttpUpstreamTransport(transport);
    let closes = 0;
    upstream.onclose = () => closes++;
    await upstream.start();
    await Promise.all([upstream.close(), upstream.close()]);
    expect(calls).toEqual(['delete', 'close']);
    expect(closes).toBe(1);
  });

  it('ends the session an initialize still on its way opens, when closed before its answer (review of s22)', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.headers['mcp-session-id'] ?? '-'}`);
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      req.resume();
      req.on('end', () => setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-late' }).end('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"late","version":"1"}}}');
      }, 200));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const upstream = httpUpstream({ url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`) });
      await upstream.start();
      const initialize = upstream.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      await upstream.close();
      await initialize.catch(() => {});
      expect(seen).toEqual(['POST -', 'DELETE s-late']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('passes the inner transport\'s errors and own close on', async () => {
    const transport: Transport = { async start() {}, async send() {}, async close() {} };
    const upstream = new HttpUpstreamTransport(transport);
    const errors: Error[] = [];
    upstream.onerror = (error) => errors.push(error);
    const closed = new Promise<void>((resolve) => (upstream.onclose = resolve));
    await upstream.start();
    transport.onerror?.(new Error('POST failed'));
    transport.onclose?.();
    await closed;
    expect(errors.map((e) => e.message)).toEqual(['POST failed']);
    expect(upstream.closed).toBe(true);
  });
});

describe('HttpUpstreamTransport and deep server output', () => {
  it('turns a too-deep answer into invalid-request for its request, answers a too-deep server request, and reports both', async () => {
    const sent: JSONRPCMessage[] = [];
    const inner: Transport = { async start() {}, async send(message) { sent.push(message); }, async close() {} };
    const upstream = new HttpUpstreamTransport(inner);
    const got: JSONRPCMessage[] = [];
    const errors: string[] = [];
    upstream.onmessage = (message) => got.push(message);
    upstream.onerror = (error) => errors.push(error.message);
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000));
    inner.onmessage?.({ jsonrpc: '2.0', id: 9, result: { deep } });
    inner.onmessage?.({ jsonrpc: '2.0', id: 'ask', method: 'sampling/createMessage', params: { deep } });
    inner.onmessage?.({ jsonrpc: '2.0', method: 'notifications/message', params: { deep } });
    inner.onmessage?.({ jsonrpc: '2.0', id: 10, result: { fine: [[1]] } });
    await new Promise((resolve) => setTimeout(resolve, 0));
    const refusal = { code: -32600, message: 'Server output nested deeper than 128 levels', data: { reason: 'invalid-request' } };
    expect(got).toEqual([{ jsonrpc: '2.0', id: 9, error: refusal }, { jsonrpc: '2.0', id: 10, result: { fine: [[1]] } }]);
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 'ask', error: refusal }]);
    expect(errors).toEqual(Array(3).fill('Server message nested deeper than 128 levels: refused'));
  });
});
