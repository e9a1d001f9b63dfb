/**
 * A real HTTP server on 127.0.0.1 whose every POST is answered with an endless SSE stream of log
 * notifications, written as fast as the socket takes them and no faster (it waits for `drain`):
 * an HTTP MCP server that floods its client. `state` says how many events it wrote, whether it is
 * waiting for its socket to drain (its client is not reading), and whether its client hung up.
 *
 * With `initialize: 'legacy'` it opens a session first, as a legacy server does: an `initialize`
 * gets its result as JSON, a notification 202. With `'refused'` it is modern-only: an
 * `initialize` gets 404 with -32601, and a `server/discover` its result.
 *
 * @module
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FloodState {
  written: number;
  waiting: boolean;
  hungUp: boolean;
}

export async function floodingSseServer(options: { initialize?: 'legacy' | 'refused' } = {}): Promise<{ url: URL; state: FloodState; server: Server }> {
  const state: FloodState = { written: 0, waiting: false, hungUp: false };
  const event = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'f'.repeat(16_000) } })}\n\n`;
  const server = createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    if (options.initialize !== undefined) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method?: string };
      const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
        void res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === 'initialize') {
        return options.initialize === 'legacy'
          ? answer(200, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'flood', version: '1' } } }, { 'mcp-session-id': 'flood' })
          : answer(404, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found: initialize' } });
      }
      if (message.method === 'server/discover') {
        return answer(200, { jsonrpc: '2.0', id: message.id, result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: {} } });
      }
    } else req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'flood' });
    res.once('close', () => (state.hungUp = true));
    const pump = () => {
      while (!res.destroyed) {
        state.written++;
        if (!res.write(event)) {
          state.waiting = true;
          res.once('drain', () => {
            state.waiting = false;
            pump();
          });
          return;
        }
      }
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), state, server };
}
