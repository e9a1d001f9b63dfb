import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { encodeHeaderValue, ModernHttpClientTransport, modernPost, postModern } from './modern-http-transport.ts';
import { PARAM_HEADERS_META_KEY } from './param-headers-meta.ts';
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
      const written = state.written;
      expect(received).toBeLessThan(written);
      release();
      await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(written);
      await transport.close();
      await expect.poll(() => state.hungUp, { timeout: 10_000 }).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
