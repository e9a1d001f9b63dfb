/**
 * A passthrough session's SSE streams are resumable, as the server's own are: an agent whose
 * stream dropped reconnects with `Last-Event-ID` and receives what it missed.
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

const VERSION = '2025-11-25';
const HEADERS = { authorization: 'Bearer alice-token', accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/** Reads SSE events from a response body until `enough` says stop, then cancels the stream. */
async function readEvents(response: Response, enough: (events: Array<{ id?: string; data: string }>) => boolean) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: Array<{ id?: string; data: string }> = [];
  let buffer = '';
  while (!enough(events)) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (.*)$/m.exec(block)?.[1];
      const data = [...block.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]).join('\n');
      events.push(id === undefined ? { data } : { id, data });
    }
  }
  await reader.cancel();
  return events;
}

describe('passthrough resumability', () => {
  it('replays what a dropped stream missed after Last-Event-ID', async () => {
    harness = startInProcessApp(await testConfig([{ name: 'alice', servers: ['alpha'] }], ['alpha']), new InProcessRouter({ alpha: createTestMcpServer }));
    const path = `${BASE}/servers/alpha/mcp`;
    const init = await harness.fetch(path, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    await init.text();
    const session = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': VERSION };
    await (await harness.fetch(path, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();

    const call = await harness.fetch(path, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'progress', arguments: {}, _meta: { progressToken: 'p' } } }),
    });
    // Drop the stream right after the priming event, before any progress or the result.
    const seen = await readEvents(call, (events) => events.length >= 1);
    const priming = seen[0]!;
    expect(priming.id).toBeDefined();
    expect(priming.data).toBe('');

    const resumed = await harness.fetch(path, { method: 'GET', headers: { ...session, 'last-event-id': priming.id! } });
    expect(resumed.status).toBe(200);
    const replayed = await readEvents(resumed, (events) => events.some((e) => e.data.includes('"id":2')));
    const messages = replayed.filter((e) => e.data !== '').map((e) => JSON.parse(e.data) as { method?: string; id?: number; result?: unknown });
    expect(messages.filter((m) => m.method === 'notifications/progress')).toHaveLength(3);
    expect(messages.find((m) => m.id === 2)?.result).toEqual({ content: [{ type: 'text', text: 'done' }] });
  });
});
