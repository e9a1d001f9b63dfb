/**
 * Every error body of an agent endpoint carries `data.reason` (DESIGN §4), including the errors
 * a session's endpoint (`legacy-http-endpoint.ts`) answers by itself (bad JSON, a message that is
 * not JSON-RPC, an oversized batch or body, a second initialize, an unsupported protocol version,
 * PUT); and an initialize with a bad JSON-RPC envelope is refused before any server is opened.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestMcpServer } from '../../test/support/test-mcp-server.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
const HEADERS = { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

describe('error reasons inside a session', () => {
  it.each(['/servers/alpha/mcp', '/mcp'])('adds invalid-request to the session endpoint\'s own errors on %s', async (path) => {
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']), new InProcessRouter({ alpha: createTestMcpServer }));
    const init = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: HEADERS, body: JSON.stringify(INIT) });
    await init.text();
    const session = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    const cases: Array<[RequestInit, number]> = [
      [{ method: 'POST', headers: session, body: '{{{' }, 400],
      [{ method: 'POST', headers: session, body: '{"jsonrpc":"2.0","id":{},"method":5}' }, 400],
      [{ method: 'POST', headers: session, body: JSON.stringify(Array.from({ length: 101 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'ping' }))) }, 400],
      [{ method: 'POST', headers: session, body: JSON.stringify(INIT) }, 400],
      [{ method: 'POST', headers: { ...session, 'mcp-protocol-version': '1999-01-01' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }, 400],
      [{ method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(5_000_000) } }) }, 413],
      [{ method: 'PUT', headers: session }, 405],
    ];
    for (const [init, status] of cases) {
      const response = await harness.fetch(`${BASE}${path}`, init);
      expect(response.status).toBe(status);
      const body = (await response.json()) as { error: { code: number; message: string; data: { reason: string } } };
      expect(body.error.data.reason).toBe('invalid-request');
      expect(body.error.message.length).toBeGreaterThan(0);
    }
  });

  it.each(['/servers/alpha/mcp', '/mcp'])('refuses an initialize with a bad JSON-RPC envelope on %s before opening any server', async (path) => {
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']), router);
    for (const envelope of [{ jsonrpc: '1.0' }, { id: {} }, { id: null }]) {
      const response = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: HEADERS, body: JSON.stringify({ ...INIT, ...envelope }) });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: -32600, data: { reason: 'invalid-request' } } });
    }
    expect(router.opened).toEqual([]);
  });

  it.each(['/servers/alpha/mcp', '/mcp'])('refuses a huge body before a session on %s without reading all of it', async (path) => {
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']), router);
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1;
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
        if (pulled >= 1024) controller.close(); // 64 MiB at most, should it read on
      },
    });
    const streamed = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: HEADERS, body: endless, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(400);
    expect(await streamed.json()).toMatchObject({ error: { data: { reason: 'invalid-request' } } });
    expect(pulled).toBeLessThan(64);
    const declared = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: { ...HEADERS, 'content-length': String(50 * 1024 * 1024) }, body: 'x' });
    expect(declared.status).toBe(400);
    expect(router.opened).toEqual([]);
  });
});
