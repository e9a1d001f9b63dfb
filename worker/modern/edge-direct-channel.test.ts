import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EdgeDirectModernChannel } from './edge-direct-channel.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
type Handler = (body: Record<string, any> | null, init: RequestInit) => Response;

/** A channel to an in-process "server": `handler` answers each fetch; every request is recorded. */
function channelTo(handler: Handler) {
  const seen: Array<{ method: string; body: Record<string, any> | null; headers: Headers }> = [];
  const fetch = async (_url: string | URL, init?: RequestInit) => {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : null;
    seen.push({ method: init?.method ?? 'GET', body, headers: new Headers(init?.headers) });
    return handler(body, init ?? {});
  };
  const channel = new EdgeDirectModernChannel({ url: new URL('http://203.0.113.9/mcp'), fetch });
  const messages: JSONRPCMessage[] = [];
  const closed = new Promise<void>((resolve) => (channel.onclose = resolve));
  channel.onmessage = (message) => messages.push(message);
  return { channel, seen, messages, closed };
}

const request = (method: string, params: Record<string, unknown> = {}): JSONRPCMessage => ({ jsonrpc: '2.0', id: 'r-1', method, params: { ...params, _meta: META } });

describe('EdgeDirectModernChannel', () => {
  it('relays a modern server\'s answer as it is and closes once it has ended', async () => {
    const result = { resultType: 'complete', tools: [], ttlMs: 5000, cacheScope: 'public' };
    const { channel, seen, messages, closed } = channelTo((body) => Response.json({ jsonrpc: '2.0', id: body!.id, result }));
    await channel.send(request('tools/list'));
    await closed;
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 'r-1', result }]);
    expect(seen.map((s) => [s.method, s.headers.get('mcp-method'), s.headers.get('mcp-protocol-version')])).toEqual([['POST', 'tools/list', '2026-07-28']]);
  });

  it('makes a stateless legacy server\'s result modern: resultType and the private caching defaults', async () => {
    const { channel, messages, closed } = channelTo((body) => Response.json({ jsonrpc: '2.0', id: body!.id, result: { tools: [] } }));
    await channel.send(request('tools/list'));
    await closed;
    expect(messages).toEqual([{ jsonrpc: '2.0', id: 'r-1', result: { tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' } }]);
  });

  it("passes a stateless server's log notifications only to a request that asked for them, at or above its logLevel", async () => {
    const log = (level: string) => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level, data: level } });
    const sse = (body: Record<string, any>) =>
      new Response([log('debug'), log('warning'), { jsonrpc: '2.0', id: body.id, result: { content: [] } }].map((m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`).join(''), { headers: { 'content-type': 'text/event-stream' } });
    const quiet = channelTo((body) => sse(body!));
    await quiet.channel.send(request('tools/call', { name: 'chatty' }));
    await quiet.closed;
    expect(quiet.messages.map((m) => ('method' in m ? m.method : 'answer'))).toEqual(['answer']);
    const asked = channelTo((body) => sse(body!));
    await asked.channel.send({ jsonrpc: '2.0', id: 'r-1', method: 'tools/call', params: { name: 'chatty', _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'info' } } });
    await asked.closed;
    expect(asked.messages.map((m) => ('method' in m ? (m.params as { level: string }).level : 'answer'))).toEqual(['warning', 'answer']);
  });

  it('opens a legacy session when the server asks for one, answers server/discover from initialize, and ends the session with a DELETE', async () => {
    const { channel, seen, messages } = channelTo((body, init) => {
      if (init.method === 'DELETE') return new Response(null, { status: 200 });
      if (init.method === 'GET') return new Response(null, { status: 405 });
      const session = new Headers(init.headers).get('mcp-session-id');
      if (body!.method === 'initialize') {
        const result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'legacy-http', version: '1.0.0' } };
        return Response.json({ jsonrpc: '2.0', id: body!.id, result }, { headers: { 'mcp-session-id': 'S-1' } });
      }
      if (session === null) return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }, { status: 400 });
      return new Response(null, { status: 202 });
    });
    await channel.send(request('server/discover'));
    await expect.poll(() => messages.length).toBe(1);
    expect(messages[0]).toMatchObject({ id: 'r-1', result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'legacy-http' } } } });
    await channel.close();
    expect(seen.filter((s) => s.method === 'POST').map((s) => s.body?.method)).toEqual(['server/discover', 'initialize', 'notifications/initialized']);
    expect(seen.at(-1)).toMatchObject({ method: 'DELETE' });
    expect(seen.at(-1)!.headers.get('mcp-session-id')).toBe('S-1');
  });

  it('takes a server/discover answered -32601 for a stateless legacy server, and asks it on a legacy session', async () => {
    const { channel, seen, messages } = channelTo((body, init) => {
      if (init.method !== 'POST') return new Response(null, { status: 405 });
      if (body!.method === 'initialize') return Response.json({ jsonrpc: '2.0', id: body!.id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'stateless', version: '1' } } });
      if (body!.id === undefined) return new Response(null, { status: 202 });
      return Response.json({ jsonrpc: '2.0', id: body!.id, error: { code: -32601, message: 'Method not found' } });
    });
    await channel.send(request('server/discover'));
    await expect.poll(() => messages.length).toBe(1);
    expect(messages[0]).toMatchObject({ id: 'r-1', result: { supportedVersions: ['2026-07-28'], _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'stateless' } } } });
    expect(seen.filter((s) => s.method === 'POST').map((s) => s.body?.method)).toEqual(['server/discover', 'initialize', 'notifications/initialized']);
    await channel.close();
  });

  it('carries one request: a second send is refused', async () => {
    const { channel } = channelTo((body) => Response.json({ jsonrpc: '2.0', id: body!.id, result: {} }));
    await channel.send(request('tools/list'));
    await expect(channel.send(request('tools/list'))).rejects.toMatchObject({ reason: 'invalid-request' });
    await channel.close();
  });
});
