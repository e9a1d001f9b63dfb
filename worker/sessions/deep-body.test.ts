/**
 * Agent bodies nested deeper than 128 levels are refused on both endpoints with `invalid-request`
 * (HTTP 400, JSON-RPC -32600, the request's id), before the SDK or a server sees them, and the
 * session goes on: before, a deep tools/call reached the link's `JSON.stringify`, overflowed the
 * stack there and came back as a misleading "server is no longer connected".
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
const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
/** A tools/call whose whole message is `3 + padDepth` levels deep (message, params, arguments, pad). */
const call = (id: number, tool: string, padDepth: number) =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":{"text":"still here","pad":${nest(padDepth)}}}}`;
const TOO_DEEP = { code: -32600, message: 'Request nested deeper than 128 levels', data: { reason: 'invalid-request' } };

/** SSE or JSON answer of one POST, as the JSON-RPC message it carries. */
async function answerOf(response: Response): Promise<{ id?: unknown; result?: { content?: Array<{ text: string }> }; error?: unknown }> {
  const text = await response.text();
  const data = text.split('\n').find((line) => line.startsWith('data: '));
  return JSON.parse(data === undefined ? text : data.slice(6));
}

describe('deep JSON from an agent', () => {
  it.each([
    ['/servers/alpha/mcp', 'echo'],
    ['/mcp', 'alpha__echo'],
  ])('is refused on %s with invalid-request and the request id; the session still answers', async (path, tool) => {
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']), router);
    const init = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: HEADERS, body: JSON.stringify(INIT) });
    await init.text();
    const session = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: session, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });

    for (const depth of [100_000, 126]) {
      const refused = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: session, body: call(5, tool, depth) });
      expect([depth, refused.status]).toEqual([depth, 400]);
      expect(await refused.json()).toEqual({ jsonrpc: '2.0', id: 5, error: TOO_DEEP });
    }
    const batch = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: session, body: `[${call(6, tool, 100_000)}]` });
    expect(batch.status).toBe(400);
    expect(await batch.json()).toEqual({ jsonrpc: '2.0', id: null, error: TOO_DEEP });

    // 128 levels exactly pass, and the session answers as before.
    const deepest = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: session, body: call(7, tool, 125) });
    expect(deepest.status).toBe(200);
    expect(await answerOf(deepest)).toMatchObject({ id: 7, result: { content: [{ text: 'alpha: still here' }] } });
    expect(router.opened).toHaveLength(1);
  });

  it.each(['/servers/alpha/mcp', '/mcp'])('refuses a deep initialize on %s before any server is opened', async (path) => {
    const router = new InProcessRouter({ alpha: createTestMcpServer });
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']), router);
    const body = JSON.stringify({ ...INIT, id: 'init-1', params: { ...INIT.params, capabilities: { experimental: { x: 'DEEP' } } } }).replace('"DEEP"', nest(50_000));
    const response = await harness.fetch(`${BASE}${path}`, { method: 'POST', headers: HEADERS, body });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 'init-1', error: TOO_DEEP });
    expect(router.opened).toEqual([]);
  });
});
