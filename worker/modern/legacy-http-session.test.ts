import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveOnLegacySession } from './legacy-http-session.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('a modern request served on a legacy HTTP session', () => {
  it('closes when its agent leaves even if the server never answers the cancel: the request\'s stream ends and the session is deleted (review s21)', async () => {
    const seen: string[] = [];
    let calling!: () => void;
    const called = new Promise<void>((resolve) => (calling = resolve));
    let streamClosed!: () => void;
    const callStreamClosed = new Promise<void>((resolve) => (streamClosed = resolve));
    let deleting!: () => void;
    const deleted = new Promise<void>((resolve) => (deleting = resolve));
    const server = createServer((req, res) => {
      // No standalone stream: the session's GET is refused, as a server without one does.
      if (req.method === 'GET') return void res.writeHead(405).end();
      if (req.method === 'DELETE') {
        seen.push('DELETE');
        res.writeHead(200).end();
        return deleting();
      }
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        const message = JSON.parse(text) as { id?: number | string; method: string };
        seen.push(message.method);
        if (message.method === 'initialize') {
          return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'legacy-1' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'legacy', version: '1' } } }));
        }
        if (message.method === 'notifications/initialized') return void res.writeHead(202).end();
        if (message.method === 'tools/call') {
          // An answer that never comes, on the request's own stream.
          res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': working\n\n');
          res.once('close', streamClosed);
          return calling();
        }
        // notifications/cancelled: never answered.
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    const session = serveOnLegacySession({ url }, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: META } }, () => {});
    await called;
    await session.close();
    await callStreamClosed;
    await deleted;
    expect(seen).toEqual(['initialize', 'notifications/initialized', 'tools/call', 'notifications/cancelled', 'DELETE']);
  });
});
