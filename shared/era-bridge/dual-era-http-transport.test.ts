import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { floodingSseServer } from '../../test/support/flooding-sse-server.ts';
import { DualEraHttpTransport } from './dual-era-http-transport.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function started(initialize: 'legacy' | 'refused') {
  const flood = await floodingSseServer({ initialize });
  servers.push(flood.server);
  const transport = new DualEraHttpTransport({ url: flood.url });
  const messages: JSONRPCMessage[] = [];
  let floodEvents = 0;
  transport.onmessage = (message) => {
    if ('method' in message && message.method === 'notifications/message') floodEvents++;
    else messages.push(message);
  };
  await transport.start();
  return { ...flood, transport, messages, floodEvents: () => floodEvents };
}

/** A real loopback HTTP server that hands each request's parsed JSON body (undefined for none) to `answer`. */
async function jsonServer(answer: (req: IncomingMessage, message: { id?: number; method: string; params?: { name?: string } } | undefined, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => answer(req, body === '' ? undefined : JSON.parse(body), res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const transport = new DualEraHttpTransport({ url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`) });
  const messages: JSONRPCMessage[] = [];
  transport.onmessage = (message) => messages.push(message);
  await transport.start();
  return { transport, messages };
}

/** Held from the start: what the server writes fills the socket and the server waits; nothing is read until the release. */
async function expectHeldUntilReleased(transport: DualEraHttpTransport, state: { waiting: boolean }, floodEvents: () => number, call: JSONRPCMessage): Promise<void> {
  const release = transport.holdReading();
  void transport.send(call).catch(() => {});
  await expect.poll(() => state.waiting, { timeout: 10_000 }).toBe(true);
  // A reader not held has read a socket's worth by the time the server waits.
  expect(floodEvents()).toBe(0);
  release();
  await expect.poll(floodEvents, { timeout: 10_000 }).toBeGreaterThan(0);
}

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } } as const;

describe('DualEraHttpTransport', () => {
  it('holds back a legacy server\'s answers once its session is open: the modern client it no longer uses does not open the gate they share', async () => {
    const { transport, messages, state, floodEvents } = await started('legacy');
    await transport.send(INITIALIZE);
    expect(messages).toEqual([expect.objectContaining({ id: 1, result: expect.objectContaining({ serverInfo: { name: 'flood', version: '1' } }) })]);
    expect(transport.era).toBe('legacy');
    await expectHeldUntilReleased(transport, state, floodEvents, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'flood' } });
    await transport.close();
  });

  it('speaks modern again when a modern-only server refuses the legacy initialize: the refusal is its answer, and the server/discover asked next gets the modern answer that explained it', async () => {
    const { transport, messages } = await started('refused');
    await transport.send(INITIALIZE);
    expect(messages).toEqual([
      expect.objectContaining({ id: 1, error: expect.objectContaining({ message: expect.stringContaining('The HTTP server answered initialize with HTTP 404'), data: expect.objectContaining({ reason: 'launch-failed' }) }) }),
    ]);
    expect(transport.era).toBe('modern');
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    await expect.poll(() => messages.slice(1)).toEqual([{ jsonrpc: '2.0', id: 2, result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: {} } }]);
    await transport.close();
  });

  it('holds back a modern server\'s answers after a refused initialize: the refused session\'s close does not open the gate', async () => {
    const { transport, state, floodEvents } = await started('refused');
    await transport.send(INITIALIZE);
    expect(transport.era).toBe('modern');
    await expectHeldUntilReleased(transport, state, floodEvents, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'flood', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    await transport.close();
  });

  it('fails the send as ever when a server that is not modern refuses the initialize: it was asked server/discover once, and refused that too', async () => {
    const posts: string[] = [];
    const { transport, messages } = await jsonServer((_req, message, res) => {
      posts.push(message!.method);
      res.writeHead(401, { 'content-type': 'text/plain' }).end('Unauthorized');
    });
    await expect(transport.send(INITIALIZE)).rejects.toThrow('The HTTP server answered initialize with HTTP 401: Unauthorized');
    expect(posts).toEqual(['initialize', 'server/discover']);
    expect(messages).toEqual([]);
    await transport.close();
  });

  it('stays on its legacy session when a later answer reuses the initialize\'s id with an error: only the first answer decides', async () => {
    const seen: string[] = [];
    const { transport, messages } = await jsonServer((req, message, res) => {
      seen.push(req.method!);
      if (req.method !== 'POST') return void res.writeHead(405).end();
      if (message!.id === undefined) return void res.writeHead(202).end();
      const answer = message!.method === 'initialize'
        ? { result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'legacy', version: '1' } } }
        : message!.params?.name === 'fail' ? { error: { code: -32603, message: 'Tool failed' } } : { result: { content: [] } };
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' }).end(JSON.stringify({ jsonrpc: '2.0', id: message!.id, ...answer }));
    });
    let closed = false;
    transport.onclose = () => (closed = true);
    await transport.send(INITIALIZE);
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fail' } });
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ok' } });
    expect(messages.map((m) => ('error' in m ? 'error' : 'result'))).toEqual(['result', 'error', 'result']);
    expect(transport.era).toBe('legacy');
    expect(closed).toBe(false);
    expect(seen).not.toContain('DELETE');
    await transport.close();
    expect(seen.at(-1)).toBe('DELETE');
  });

  it('delivers nothing after a close that came while it asked a refusing server server/discover: the send fails with the refusal', async () => {
    let discoverArrived!: (answer: () => void) => void;
    const arrived = new Promise<() => void>((resolve) => (discoverArrived = resolve));
    const { transport, messages } = await jsonServer((_req, message, res) => {
      if (message!.method === 'initialize') return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message!.id, error: { code: -32601, message: 'Method not found' } }));
      // Answered as a modern server, but only once the test has closed the transport.
      discoverArrived(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message!.id, result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: {} } })));
    });
    const sent = transport.send(INITIALIZE);
    const answer = await arrived;
    await transport.close();
    answer();
    await expect(sent).rejects.toThrow('The HTTP server answered initialize with HTTP 404');
    expect(messages).toEqual([]);
  });
});
