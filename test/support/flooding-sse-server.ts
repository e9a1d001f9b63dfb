/**
 * A real HTTP server on 127.0.0.1 whose every POST is answered with an endless SSE stream of log
 * notifications, written as fast as the socket takes them and no faster (it waits for `drain`):
 * an HTTP MCP server that floods its client. `state` says how many events it wrote, whether it is
 * waiting for its socket to drain (its client is not reading), and whether its client hung up.
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

export async function floodingSseServer(): Promise<{ url: URL; state: FloodState; server: Server }> {
  const state: FloodState = { written: 0, waiting: false, hungUp: false };
  const event = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'f'.repeat(16_000) } })}\n\n`;
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    req.resume();
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
