import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { encodeHeaderValue, ModernHttpClientTransport, modernPost, postModern } from './modern-http-transport.ts';
import { PARAM_HEADERS_META_KEY } from './param-headers-meta.ts';
import { MAX_SSE_EVENT_CHARS } from './sse-messages.ts';
import { floodingSseServer } from '../test/support/flooding-sse-server.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const call = (params: Record<string, unknown>): JSONRPCMessage => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { ...params, _meta: { ...META, ...(params._meta as object) } } });
const answering = (response: Response) => ({ url: new URL('http://203.0.113.5/mcp'), fetch: async () => response });

describe('modernPost', () => {
  it('mirrors version, method and name, and sends the decoded Mcp-Param values as headers again, the Switchyard key out of the body', () => {
    const { body, headers } = modernPost(call({ name: 'regional', arguments: { region: 'eu' }, _meta: { [PARAM_HEADERS_META_KEY]: { region: 'eu', note: 'zürich' } } }));
    expect(headers).toMatchObject({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'regional', 'mcp-param-region': 'eu', 'mcp-param-note': encodeHeaderValue('zürich') });
    expect((body as { params: { _meta: Record<string, unknown> } }).params._meta).toEqual(META);
  });

  it('encodes a value that is not plain visible ASCII, or looks like the sentinel, in Base64', () => {
    expect(encodeHeaderValue('plain value')).toBe('plain value');
    expect(encodeHeaderValue(' padded')).toBe(`=?base64?${btoa(' padded')}?=`);
    expect(encodeHeaderValue('=?base64?abc?=')).toBe(`=?base64?${btoa('=?base64?abc?=')}?=`);
    expect(atob(encodeHeaderValue('日本').slice(9, -2))).toBe(String.fromCharCode(...new TextEncoder().encode('日本')));
  });
});

describe('postModern', () => {
  it('calls a 400 without a modern error for the request not modern (a legacy server asking for its session)', async () => {
    const legacy = Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }, { status: 400 });
    const seen: JSONRPCMessage[] = [];
    expect(await postModern(answering(legacy), call({ name: 'echo' }), (m) => seen.push(m))).toEqual({ modern: false, status: 400 });
    expect(seen).toEqual([]);
  });

  it('relays a modern error (-32022 for this id) and the messages of an SSE answer, in order', async () => {
    const unsupported = { jsonrpc: '2.0', id: 7, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } } };
    const seen: unknown[] = [];
    expect(await postModern(answering(Response.json(unsupported, { status: 400 })), call({ name: 'echo' }), (m) => seen.push(m))).toEqual({ modern: true });
    const sse = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n';
    await postModern(answering(new Response(sse, { headers: { 'content-type': 'text/event-stream' } })), call({ name: 'echo' }), (m) => seen.push(m));
    expect(seen).toEqual([unsupported, expect.objectContaining({ method: 'notifications/progress' }), { jsonrpc: '2.0', id: 7, result: {} }]);
  });
});

describe('postModern, a server out of reach', () => {
  it('tells the agent why, never the URL (whose query or credentials the runtime quotes)', async () => {
    const url = 'https://svc.internal:8443/mcp?api_key=S3CRET';
    const failing = { url: new URL(url), fetch: async () => Promise.reject(new TypeError(`error sending request for url (${url}): client error (Connect): tcp connect error: Connection refused`)) };
    const error = await postModern(failing, call({ name: 'echo' }), () => {}).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'server-exited', message: 'Could not reach the HTTP server: error sending request for url (<url>): client error (Connect): tcp connect error: Connection refused' });
  });
});

describe('ModernHttpClientTransport', () => {
  it('answers nothing for a request cancelled while its refusal was still being read', async () => {
    let finish!: () => void;
    const body = new ReadableStream<Uint8Array>({ start: (controller) => void (finish = () => (controller.enqueue(new TextEncoder().encode('{"error":"busy"}')), controller.close())) });
    const transport = new ModernHttpClientTransport(answering(new Response(body, { status: 503, headers: { 'content-type': 'application/json' } })));
    const seen: JSONRPCMessage[] = [];
    transport.onmessage = (message) => seen.push(message);
    await transport.send(call({ name: 'echo' }));
    await transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } });
    finish();
    // The body's read and what follows it are promise jobs, all run before the next turn: no clock involved.
    await new Promise((resolve) => setImmediate(resolve));
    await transport.close();
    expect(seen).toEqual([]);
  });

  it('answers a request whose SSE stream ended without its answer with server-exited: nothing more will come for it', async () => {
    const progressOnly = 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n';
    const transport = new ModernHttpClientTransport(answering(new Response(progressOnly, { headers: { 'content-type': 'text/event-stream' } })));
    const seen: JSONRPCMessage[] = [];
    const ended = new Promise<void>((resolve) => (transport.onmessage = (message) => (seen.push(message), 'id' in message && resolve())));
    await transport.send(call({ name: 'echo' }));
    await ended;
    expect(seen).toEqual([
      expect.objectContaining({ method: 'notifications/progress' }),
      { jsonrpc: '2.0', id: 7, error: expect.objectContaining({ message: 'The HTTP server ended its answer to tools/call without one', data: expect.objectContaining({ reason: 'server-exited' }) }) },
    ]);
    await transport.close();
  });

  it('answers a request the server did not answer as a modern one with an error for its id, naming the status', async () => {
    const transport = new ModernHttpClientTransport(answering(new Response('<html>', { status: 502, headers: { 'content-type': 'text/html' } })));
    const answer = new Promise<JSONRPCMessage>((resolve) => (transport.onmessage = resolve));
    await transport.send(call({ name: 'echo' }));
    expect(await answer).toMatchObject({ id: 7, error: { data: { reason: 'server-exited', status: 502 } } });
    await transport.close();
  });
});

describe('holding back a modern HTTP server (ReadHold)', () => {
  it('stops reading an answer\'s SSE stream while held, so the server waits in its write, and reads on once released', async () => {
    const { url, state, server } = await floodingSseServer();
    try {
      const transport = new ModernHttpClientTransport({ url });
      let received = 0;
      transport.onmessage = () => received++;
      const release = transport.holdReading();
      await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'flood', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
      await expect.poll(() => state.waiting, { timeout: 10_000 }).toBe(true);
      // Nothing of it read: a reader not held has read a socket's worth by the time the server waits.
      expect(received).toBe(0);
      release();
      await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(0);
      await transport.close();
      await expect.poll(() => state.hungUp, { timeout: 10_000 }).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('postModern against a server that misbehaves (review s21)', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
  async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void) {
    const keys: Array<string | undefined> = [];
    const server = createServer((req, res) => {
      keys.push(req.headers['x-api-key'] as string | undefined);
      handler(req, res);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), keys };
  }
  const answer = (res: ServerResponse) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":7,"result":{}}');

  it('follows a redirect within the server\'s origin, and none to another, which would get its API key', async () => {
    const elsewhere = await listen((_req, res) => answer(res));
    const server = await listen((req, res) => {
      if (req.url === '/mcp') return void res.writeHead(307, { location: '/mcp/' }).end();
      if (req.url === '/away') return void res.writeHead(307, { location: elsewhere.url.href }).end();
      answer(res);
    });
    const seen: JSONRPCMessage[] = [];
    expect(await postModern({ url: server.url, headers: { 'X-Api-Key': 'SECRET-KEY' } }, call({ name: 'echo' }), (m) => seen.push(m))).toEqual({ modern: true });
    expect(seen).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    expect(await postModern({ url: new URL('/away', server.url), headers: { 'X-Api-Key': 'SECRET-KEY' } }, call({ name: 'echo' }), () => {})).toEqual({ modern: false, status: 307 });
    expect(elsewhere.keys).toEqual([]);
  });

  it('gives up on a redirect loop within the origin, saying so', async () => {
    const server = await listen((req, res) => void res.writeHead(307, { location: req.url === '/mcp' ? '/mcp/' : '/mcp' }).end());
    await expect(postModern({ url: server.url }, call({ name: 'echo' }), () => {})).rejects.toMatchObject({ reason: 'server-exited', message: 'Could not reach the HTTP server: The HTTP server redirected more than 5 times within its origin' });
  });

  it('reads an error answer within a bound: one whose body never ends is not a modern error, and is not held', async () => {
    let closed!: () => void;
    const gone = new Promise<void>((resolve) => (closed = resolve));
    const server = await listen((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.write('{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"');
      const chunk = 'x'.repeat(64 * 1024);
      const more = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', more);
      };
      res.once('close', closed);
      more();
    });
    expect(await postModern({ url: server.url }, call({ name: 'echo' }), () => {})).toEqual({ modern: false, status: 400 });
    await gone;
  });

  it('refuses a JSON answer past the message bound instead of buffering it', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { text: 'x'.repeat(MAX_SSE_EVENT_CHARS) } });
    const server = await listen((_req, res) => void res.writeHead(200, { 'content-type': 'Application/JSON; charset=utf-8' }).end(big));
    await expect(postModern({ url: server.url }, call({ name: 'echo' }), () => {})).rejects.toMatchObject({ reason: 'server-exited', message: expect.stringContaining(`larger than ${MAX_SSE_EVENT_CHARS} bytes`) });
  });

  it('aborts a notification\'s POST the server never answers when the transport closes', async () => {
    let hungUp!: () => void;
    const gone = new Promise<void>((resolve) => (hungUp = resolve));
    let got!: () => void;
    const received = new Promise<void>((resolve) => (got = resolve));
    const server = await listen((req) => {
      req.once('close', hungUp);
      got();
    });
    const transport = new ModernHttpClientTransport({ url: server.url });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { _meta: META } });
    await received;
    await transport.close();
    await gone;
  });

  it('takes a JSON answer whatever the case of its media type, and sends its own protocol headers over configured ones of any case', async () => {
    const sent: Array<[string | undefined, string | undefined]> = [];
    const server = await listen((req, res) => {
      sent.push([req.headers['content-type'], req.headers.accept]);
      void res.writeHead(200, { 'content-type': 'Application/JSON' }).end('{"jsonrpc":"2.0","id":7,"result":{}}');
    });
    const seen: JSONRPCMessage[] = [];
    await postModern({ url: server.url, headers: { 'Content-Type': 'text/plain', Accept: 'application/json' } }, call({ name: 'echo' }), (m) => seen.push(m));
    expect(seen).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    expect(sent).toEqual([['application/json', 'application/json, text/event-stream']]);
  });

  it('answers a request once: a stream that breaks off after its answer is no failure (review of s21)', async () => {
    const server = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n', () => res.destroy());
    });
    const seen: JSONRPCMessage[] = [];
    expect(await postModern({ url: server.url }, call({ name: 'echo' }), (m) => seen.push(m))).toEqual({ modern: true });
    expect(seen).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
  });
});
