import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';
import { httpUpstream } from './http-upstream-transport.ts';
import { MAX_SSE_EVENT_CHARS } from './sse-messages.ts';
import { LegacyHttpClientTransport } from './legacy-http-client-transport.ts';
import { floodingSseServer } from '../test/support/flooding-sse-server.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
interface Seen {
  method: string;
  session: string | undefined;
  version: string | undefined;
  lastEventId: string | undefined;
  key: string | undefined;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A real HTTP server on 127.0.0.1 that records what each request carried. */
async function listen(handler: Handler) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const header = (name: string) => req.headers[name] as string | undefined;
    seen.push({ method: req.method!, session: header('mcp-session-id'), version: header('mcp-protocol-version'), lastEventId: header('last-event-id'), key: header('x-api-key') });
    void handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), seen };
}

/**
 * The SDK's event store contract, kept in the order events were stored. The SDK's example
 * `InMemoryEventStore` replays by sorting ids `<stream>_<ms>_<random>` as strings, so two events of
 * the same millisecond (the hang-up tool's progress and its answer) came back in random order, and
 * a resume after the progress skipped the answer about one time in three on a loaded box: the
 * client then waited for ever.
 */
class OrderedEventStore implements EventStore {
  readonly #events: Array<{ id: string; streamId: string; message: JSONRPCMessage }> = [];

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${this.#events.length + 1}`;
    this.#events.push({ id, streamId, message });
    return id;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.#events.findIndex((event) => event.id === lastEventId);
    if (at === -1) return '';
    const { streamId } = this.#events[at]!;
    for (const event of this.#events.slice(at + 1)) if (event.streamId === streamId) await send(event.id, event.message);
    return streamId;
  }
}

/** The SDK's own session-based server, with an event store (its streams can be resumed) and a 5 ms retry. */
async function sdkServer() {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const closed: string[] = [];
  const server = await listen(async (req, res) => {
    const id = req.headers['mcp-session-id'] as string | undefined;
    let transport = id === undefined ? undefined : sessions.get(id);
    if (transport === undefined) {
      const mcp = new McpServer({ name: 'sessions', version: '1.0.0' });
      mcp.registerTool('count', { inputSchema: { to: z.number() } }, async ({ to }, extra) => {
        for (let i = 1; i <= to; i++) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: extra._meta!.progressToken!, progress: i, total: to } });
        return { content: [{ type: 'text', text: `counted to ${to}` }] };
      });
      mcp.registerTool('hang-up', {}, async (extra) => {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: extra._meta!.progressToken!, progress: 1 } });
        extra.closeSSEStream?.();
        return { content: [{ type: 'text', text: 'answered after the hang-up' }] };
      });
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        eventStore: new OrderedEventStore(),
        retryInterval: 5,
        onsessioninitialized: (sid) => void sessions.set(sid, transport!),
        onsessionclosed: (sid) => void closed.push(sid),
      });
      await mcp.connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  return { ...server, closed };
}

const initialize = (id: string | number = 'init'): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });

/** Collects a transport's messages; `next(predicate)` waits for the first one that matches. */
function inbox(transport: { onmessage?: (message: JSONRPCMessage) => void }) {
  const messages: JSONRPCMessage[] = [];
  const waiting: Array<{ match: (m: JSONRPCMessage) => boolean; resolve: (m: JSONRPCMessage) => void }> = [];
  transport.onmessage = (message) => {
    messages.push(message);
    for (const w of waiting.filter((w) => w.match(message))) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(message);
    }
  };
  const next = (match: (m: JSONRPCMessage) => boolean) => {
    const found = messages.find(match);
    return found ? Promise.resolve(found) : new Promise<JSONRPCMessage>((resolve) => waiting.push({ match, resolve }));
  };
  return { messages, next };
}

const answers = (id: string | number) => (m: JSONRPCMessage) => 'id' in m && m.id === id && !('method' in m);

describe('LegacyHttpClientTransport against the SDK server', () => {
  it('carries an SDK client: the session id on every request after initialize, the version header once negotiated, the configured header, progress from the SSE answer', async () => {
    const server = await sdkServer();
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(httpUpstream({ url: server.url, headers: { 'x-api-key': 'k-1' } }));
    const progress: number[] = [];
    const result = await client.callTool({ name: 'count', arguments: { to: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    expect(result.content).toEqual([{ type: 'text', text: 'counted to 3' }]);
    expect(progress).toEqual([1, 2, 3]);
    await client.close();

    const [init, ...later] = server.seen;
    expect(init).toMatchObject({ method: 'POST', session: undefined, version: undefined, key: 'k-1' });
    const session = later[0]!.session;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    expect(later.every((s) => s.session === session && s.version === '2025-11-25' && s.key === 'k-1')).toBe(true);
    expect(later.map((s) => s.method)).toEqual(expect.arrayContaining(['POST', 'GET', 'DELETE']));
    expect(server.closed).toEqual([session]);
  });

  it('takes up a request\'s stream the server hung up on, with Last-Event-ID, and gets the answer', async () => {
    const server = await sdkServer();
    const upstream = httpUpstream({ url: server.url });
    const { next } = inbox(upstream);
    await upstream.start();
    await upstream.send(initialize());
    await next(answers('init'));
    await upstream.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await upstream.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hang-up', _meta: { progressToken: 'p' } } });
    expect(await next(answers(2))).toMatchObject({ result: { content: [{ type: 'text', text: 'answered after the hang-up' }] } });
    expect(server.seen.some((s) => s.method === 'GET' && s.lastEventId !== undefined)).toBe(true);
    await upstream.close();
  });
});

describe('LegacyHttpClientTransport on the wire', () => {
  const sse = (res: ServerResponse, ...events: string[]) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const event of events) res.write(event);
  };

  it('reads messages the server sends on the standalone GET stream, opened once initialized is accepted', async () => {
    const server = await listen((req, res) => {
      if (req.method === 'GET') return sse(res, ': ready\n\n', 'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n');
      res.writeHead(202).end();
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    const { next } = inbox(transport);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(await next((m) => 'method' in m)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await transport.close();
  });

  it('opens no standalone stream when told not to, for a session of one request (review s22)', async () => {
    const methods = async (options: { standaloneStream?: boolean }) => {
      const server = await listen((req, res) => {
        if (req.method === 'GET') return sse(res, ': ready\n\n');
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => {
          const message = JSON.parse(body) as { id?: number };
          if (message.id === undefined) return void res.writeHead(202).end();
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: {} }));
        });
      });
      const transport = new LegacyHttpClientTransport({ url: server.url }, options);
      const { next } = inbox(transport);
      await transport.start();
      await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
      await next((m) => 'id' in m);
      await transport.close();
      return server.seen.map((s) => s.method).sort();
    };
    expect(await methods({})).toEqual(['GET', 'POST', 'POST']);
    expect(await methods({ standaloneStream: false })).toEqual(['POST', 'POST']);
  });

  it('fails a send the server refuses with an Error naming the status and the body, reported to onerror too', async () => {
    const server = await listen((_req, res) => void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}'));
    const transport = new LegacyHttpClientTransport({ url: server.url });
    const errors: Error[] = [];
    transport.onerror = (error) => errors.push(error);
    await transport.start();
    const failure = transport.send(initialize(1));
    await expect(failure).rejects.toThrow(/^The HTTP server answered initialize with HTTP 404: .*Session not found/);
    expect(errors).toHaveLength(1);
    await transport.close();
  });

  it('passes on no configured header value a refusal quotes, as a server echoing the key it was sent does (review s21)', async () => {
    const server = await listen((req, res) => void res.writeHead(401, { 'content-type': 'text/plain' }).end(`invalid key ${req.headers.authorization} (also tried ${req.headers['x-api-key']})`));
    const transport = new LegacyHttpClientTransport({ url: server.url, headers: { Authorization: 'Bearer sk-live-0123456789', 'X-Api-Key': 'k-abcdefgh12' } });
    transport.onerror = () => {};
    await transport.start();
    await expect(transport.send(initialize(1))).rejects.toThrow('The HTTP server answered initialize with HTTP 401: invalid key [redacted] (also tried [redacted])');
    await transport.close();
  });

  it('closes once the server answers 404 to a request naming its session: the session is gone, and every later request would get the same (review s21)', async () => {
    const server = await listen((req, res) => {
      if (req.headers['mcp-session-id'] === undefined) return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-old' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    transport.onerror = () => {};
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
    await transport.start();
    await transport.send(initialize(1));
    await expect(transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' })).rejects.toThrow('HTTP 404');
    await closed;
  });

  it('answers a request whose stream ended unanswered, with nothing to take it up from, with server-exited (review s21)', async () => {
    const server = await listen((req, res) => {
      if (req.headers['mcp-session-id'] === undefined) return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(': no answer after all\n\n');
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    const { next } = inbox(transport);
    await transport.start();
    await transport.send(initialize(1));
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(await next(answers(2))).toMatchObject({ id: 2, error: { data: { reason: 'server-exited' }, message: 'The HTTP server ended its answer\'s stream without answering' } });
    await transport.close();
  });

  it('says why a request\'s stream broke off when its answer is past the message bound (review s22: "ended without answering")', async () => {
    const server = await listen((req, res) => {
      if (req.headers['mcp-session-id'] === undefined) return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: {"jsonrpc":"2.0","id":2,"result":{"text":"${'x'.repeat(MAX_SSE_EVENT_CHARS)}"}}\n\n`);
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    const { next } = inbox(transport);
    transport.onerror = () => {};
    await transport.start();
    await transport.send(initialize(1));
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'big' } });
    expect(await next(answers(2))).toMatchObject({ id: 2, error: { data: { reason: 'server-exited' }, message: `The HTTP server broke off its answer's stream: SSE event longer than ${MAX_SSE_EVENT_CHARS} characters: the stream is dropped` } });
    await transport.close();
  });

  const WORKING = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}';

  it('answers a request whose resumable stream cannot be taken up (405), or is taken up 5 times without its answer, with server-exited (review of s21)', async () => {
    for (const [takeUp, message] of [
      ['refused', 'The HTTP server broke off its answer\'s stream and offers none to take it up from'],
      ['empty', 'The HTTP server ended its answer\'s stream without answering, taken up 5 times'],
    ] as const) {
      let gets = 0;
      const server = await listen((req, res) => {
        if (req.method === 'GET') {
          gets++;
          if (takeUp === 'refused') return void res.writeHead(405).end();
          return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`id: e${gets + 1}\ndata: ${WORKING}\n\n`);
        }
        if (req.headers['mcp-session-id'] === undefined) return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`id: e1\ndata: ${WORKING}\n\n`);
      });
      const transport = new LegacyHttpClientTransport({ url: server.url });
      const { next, messages } = inbox(transport);
      transport.onerror = () => {};
      await transport.start();
      await transport.send(initialize(1));
      await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect(await next(answers(2))).toMatchObject({ id: 2, error: { data: { reason: 'server-exited' }, message } });
      expect(gets).toBe(takeUp === 'refused' ? 1 : 5);
      expect(messages.filter(answers(2))).toHaveLength(1);
      await transport.close();
    }
  }, 20_000);

  it('refuses an answer of another content type, and a JSON answer that is no JSON-RPC message', async () => {
    let body = '<html>';
    const server = await listen((_req, res) => void res.writeHead(200, { 'content-type': body === '<html>' ? 'text/html' : 'application/json; charset=utf-8' }).end(body));
    const transport = new LegacyHttpClientTransport({ url: server.url });
    await transport.start();
    await expect(transport.send(initialize(1))).rejects.toThrow('unexpected content type: text/html');
    body = '{"hello":"world"}';
    await expect(transport.send(initialize(2))).rejects.toThrow('JSON that is no JSON-RPC message');
    await transport.close();
  });

  it('follows a redirect within the origin, keeping the method and body, and not one to another origin', async () => {
    const elsewhere = await listen((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'));
    const paths: string[] = [];
    const server = await listen((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      if (req.url === '/mcp') return void res.writeHead(307, { location: '/mcp/' }).end();
      if (req.url === '/away') return void res.writeHead(307, { location: elsewhere.url.href }).end();
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(text).id, result: { at: req.url } })));
    });
    const moved = new LegacyHttpClientTransport({ url: server.url });
    const { next } = inbox(moved);
    await moved.start();
    await moved.send(initialize(1));
    expect(await next(answers(1))).toEqual({ jsonrpc: '2.0', id: 1, result: { at: '/mcp/' } });
    expect(paths).toEqual(['POST /mcp', 'POST /mcp/']);
    await moved.close();

    const away = new LegacyHttpClientTransport({ url: new URL('/away', server.url) });
    await away.start();
    await expect(away.send(initialize(1))).rejects.toThrow('HTTP 307 (a redirect out of the server\'s origin, not followed)');
    expect(elsewhere.seen).toEqual([]);
    await away.close();
  });

  it('ends the session with a DELETE carrying its id, and takes a 405 as the server keeping none', async () => {
    let deleteStatus = 200;
    const server = await listen((req, res) => {
      if (req.method === 'DELETE') return void res.writeHead(deleteStatus).end();
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-42' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    await transport.start();
    await transport.terminateSession();
    expect(server.seen).toEqual([]);
    await transport.send(initialize(1));
    expect(transport.sessionId).toBe('s-42');
    await transport.terminateSession();
    expect(transport.sessionId).toBeUndefined();
    await transport.send(initialize(1));
    deleteStatus = 405;
    await transport.terminateSession();
    expect(server.seen.filter((s) => s.method === 'DELETE').map((s) => s.session)).toEqual(['s-42', 's-42']);
    await transport.close();
  });

  it('takes a server\'s retry: 0 as the least delay it waits, not as leave to reconnect at once (review s21)', async () => {
    const gets: number[] = [];
    let again!: () => void;
    const retaken = new Promise<void>((resolve) => (again = resolve));
    let ended = 0;
    const server = await listen((req, res) => {
      if (req.method === 'GET') {
        gets.push(performance.now());
        if (gets.length > 1) {
          res.writeHead(405).end();
          return again();
        }
        // A resumable stream that ends at once, asking to be taken up again at once.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end('retry: 0\nid: e1\n: nothing yet\n\n', () => (ended = performance.now()));
        return;
      }
      if (req.headers['mcp-session-id'] === undefined) return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end('{"jsonrpc":"2.0","id":1,"result":{}}');
      res.writeHead(202).end();
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    await transport.start();
    await transport.send(initialize(1));
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await retaken;
    expect(gets[1]! - ended).toBeGreaterThanOrEqual(900);
    await transport.close();
  });

  it('aborts its streams on close and reports nothing more', async () => {
    let hungUp!: () => void;
    const serverSawClose = new Promise<void>((resolve) => (hungUp = resolve));
    const server = await listen((req, res) => {
      res.on('close', hungUp);
      if (req.method === 'POST') sse(res, 'id: e-1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
    });
    const transport = new LegacyHttpClientTransport({ url: server.url });
    const { next } = inbox(transport);
    const errors: Error[] = [];
    transport.onerror = (error) => errors.push(error);
    let closes = 0;
    transport.onclose = () => closes++;
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await next((m) => 'method' in m);
    await transport.close();
    await serverSawClose;
    expect(closes).toBe(1);
    expect(errors).toEqual([]);
    expect(server.seen.map((s) => s.method)).toEqual(['POST']);
  });
});

describe('holding back an HTTP server (ReadHold)', () => {
  async function floodingServer() {
    const flood = await floodingSseServer();
    servers.push(flood.server);
    return flood;
  }

  it('stops reading the server\'s SSE stream while held, so the server waits in its write, and reads on once released', async () => {
    const { url, state } = await floodingServer();
    const transport = new LegacyHttpClientTransport({ url });
    let received = 0;
    transport.onmessage = () => received++;
    await transport.start();
    const release = transport.holdReading();
    void transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'flood' } }).catch(() => {});
    // Held from the start: what the server wrote fills the socket, and the server then waits for it to drain.
    await expect.poll(() => state.waiting, { timeout: 10_000 }).toBe(true);
    // Nothing of it read: a reader not held has read a socket's worth by the time the server waits.
    expect(received).toBe(0);
    release();
    await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(0);
    await transport.close();
  });

  it('reads as ever once closed while held: a close is never kept waiting for a release', async () => {
    const { url, state } = await floodingServer();
    const transport = new LegacyHttpClientTransport({ url });
    await transport.start();
    transport.holdReading();
    void transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'flood' } }).catch(() => {});
    await expect.poll(() => state.waiting, { timeout: 10_000 }).toBe(true);
    let closed = false;
    transport.onclose = () => (closed = true);
    await transport.close();
    expect(closed).toBe(true);
    // The stream is let go of, not left open behind a gate nobody will open.
    await expect.poll(() => state.hungUp, { timeout: 10_000 }).toBe(true);
  });
});
