/**
 * What an agent that stops reading its answers can make the worker hold (review isolation.md,
 * findings 2 and 3), against the real stack: the worker under Deno, the sidecar CLI, and
 * `bulk-server.mjs`, whose output size the agent chooses. An agent that reads the first chunk of
 * an answer and then never again used to make the worker hold everything the server sent
 * (one modern `flood` call: 3 GB), past every request cap.
 *
 * What is asserted are the bounded quantities (where the stream ended, what the agent and the
 * server were told, the slots held), never the timing or the RSS, which is printed.
 */
import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { eventsOf } from '../support/sse-events.ts';
import { MODERN, modernMeta, modernPost } from '../modern/modern-client.ts';
import { rssMiB } from './proc-stats.ts';
import { exchange, RawSession } from './raw-client.ts';

const CAP = 3;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { bulk: fixtureServer('bulk-server.mjs') }, worker: { 'max-requests-per-agent': CAP } });
});

afterAll(async () => {
  await stack?.stop();
});

/** POSTs `body` on a connection of its own and resolves with the response once its headers are in, the body unread (paused). */
function postUnread(url: string, headers: Record<string, string>, body: unknown): Promise<IncomingMessage> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': String(Buffer.byteLength(text)), ...headers } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** Reads what is left of `res` to its end. */
function readRest(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.resume();
  });
}

describe('a modern answer stream the agent stops reading', () => {
  it('is ended at the bound: the server is cancelled, the worker says why, and the agent reads a limit-reached error as its last event', async () => {
    const url = `${stack.url}/servers/bulk/mcp`;
    const before = rssMiB(stack.worker.pid!);
    // 2000 × 16 KB = 32 MB, far past the 4 MiB a stream may hold unread (and what the sockets hold).
    const body = { jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'flood', arguments: { count: 2000, bytes: 16_000 }, _meta: modernMeta({ progressToken: 'p41' }) } };
    const res = await postUnread(url, { authorization: `Bearer ${stack.tokens.alice}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'flood' }, body);
    expect([res.statusCode, res.headers['content-type']]).toEqual([200, 'text/event-stream']);

    const line = await stack.worker.err.waitFor(msg('Answer stream ended: the agent left it unread', { agent: 'alice', server: 'bulk' }), 'the modern stream cut', { timeoutMs: 20_000 });
    expect(line.json).toMatchObject({ method: 'tools/call', limit: 4 * 1024 * 1024 });
    console.log(`worker RSS with one modern flood left unread: ${before} -> ${rssMiB(stack.worker.pid!)} MiB`);
    // Closing the channel cancelled the call on the host: the server stopped short.
    await expect.poll(async () => JSON.parse(String((await modernPost(url, stack.tokens.alice!, 'tools/call', { name: 'flood-report' })).response.result?.content?.[0]?.text)), { timeout: 10_000 })
      .toMatchObject({ cancelled: true });
    const report = JSON.parse(String((await modernPost(url, stack.tokens.alice!, 'tools/call', { name: 'flood-report' })).response.result.content[0].text)) as { sent: number };
    expect(report.sent).toBeLessThan(2000);

    const events = eventsOf(await readRest(res)).map((e) => JSON.parse(e.data) as Record<string, any>);
    expect(events.at(-1)).toEqual({ jsonrpc: '2.0', id: 41, error: { code: -32012, message: expect.stringMatching(/^Answer stream ended: more than 4194304 bytes of it were left unread/), data: { reason: 'limit-reached', limit: 4 * 1024 * 1024 } } });
    // Every other event is a whole progress notification, in order: only the ones not started were dropped.
    const progress = events.slice(0, -1).map((e) => e.params.progress as number);
    expect(progress).toEqual(progress.map((_, i) => i));
    expect(progress.length).toBeLessThan(report.sent);
  });
});

describe('legacy answers the agent does not read', () => {
  it('keep their places until read: lone calls for 12 MB answers on connections never read fill the cap, and the next call is refused', async () => {
    const session = await RawSession.open(`${stack.url}/servers/bulk/mcp`, stack.tokens.alice!);
    const headers = { authorization: `Bearer ${session.token}`, 'mcp-session-id': session.id, 'mcp-protocol-version': session.protocolVersion };
    const big = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: { bytes: 12_000_000 } } });
    const echo = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } });
    const before = rssMiB(stack.worker.pid!);
    // Far more than a connection's socket buffers take: each answer waits in the worker, unread.
    const unread: IncomingMessage[] = [];
    for (let id = 1; id <= CAP; id++) unread.push(await postUnread(session.url, headers, big(id)));
    expect(unread.map((res) => res.statusCode)).toEqual([200, 200, 200]);
    console.log(`worker RSS with ${CAP} answers of 12 MB left unread: ${before} -> ${rssMiB(stack.worker.pid!)} MiB`);

    const refused = await exchange(session.url, { headers, body: echo(10) });
    expect(refused.status).toBe(429);
    expect(refused.messages[0]).toMatchObject({ id: 10, error: { code: -32012, data: { reason: 'limit-reached', agent: 'alice', limit: CAP } } });

    // Read, an answer gives its place back.
    const text = await readRest(unread[0]!);
    expect(text.length).toBeGreaterThan(12_000_000);
    expect(text).toContain('"id":1');
    const after = await exchange(session.url, { headers, body: echo(11) });
    expect(after.messages.find((m) => m.id === 11)).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: hi' }] } });
    // An agent that goes away gives its places back too.
    for (const res of unread.slice(1)) res.destroy();
    await expect.poll(async () => (await exchange(session.url, { headers, body: [echo(12), echo(13), echo(14)] })).status, { timeout: 10_000 }).toBe(200);
    expect(await session.close()).toBe(200);
  });
});
