/**
 * A call the agent cancels, against the real stack: the worker under Deno, the sidecar CLI,
 * server-everything and `bulk-server.mjs`.
 *
 * - Its stream ends at once, without an answer: a server that honours `notifications/cancelled`
 *   never answers the request (MCP, "Cancellation"), and the agent must not wait for one.
 * - Its place under `max-requests-per-agent` and the session's cap stays taken until its late
 *   answer comes (dropped: the agent never sees it) or a grace passes, or its session ends (review
 *   isolation.md, finding 4). A place given back at the cancel let one agent queue thousands of
 *   calls on a host that ignored the cancellations (4,966 in 16 s), and every other agent's calls
 *   on that host waited behind them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { exchange, RawSession } from './raw-client.ts';

const CAP = 3;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { everything: everythingServer(), bulk: fixtureServer('bulk-server.mjs') }, worker: { 'max-requests-per-agent': CAP } });
});

afterAll(async () => {
  await stack?.stop();
});

const headersOf = (session: RawSession) => ({ authorization: `Bearer ${session.token}`, 'mcp-session-id': session.id, 'mcp-protocol-version': session.protocolVersion });

/** POSTs `body` and returns once the answer's headers are in: its requests are taken or refused by then. */
function post(session: RawSession, body: unknown): Promise<Response> {
  return fetch(session.url, {
    method: 'POST',
    headers: { ...headersOf(session), accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const cancel = (id: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'The user pressed stop' } });

describe('cancelled calls', () => {
  it.each([
    ['the passthrough', '/servers/everything/mcp', ''],
    ['the aggregate', '/mcp', 'everything__'],
  ])('end their streams at once on %s, and keep their places while the server may still be at work, until the session ends', async (_route, path, prefix) => {
    const session = await RawSession.open(`${stack.url}${path}`, stack.tokens.alice!);
    const long = (id: number) => ({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 120, steps: 120 }, _meta: { progressToken: `progress-${id}` } },
    });
    const echo = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `${prefix}echo`, arguments: { message: 'after' } } });

    const calls = await Promise.all([1, 2, 3].map((id) => post(session, long(id))));
    expect(calls.map((c) => c.status)).toEqual([200, 200, 200]);
    const full = await post(session, echo(4));
    expect(full.status).toBe(429);
    expect(((await full.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe('limit-reached');

    // Taken before its 202: the calls are ended by the time this returns.
    expect((await exchange(session.url, { headers: headersOf(session), body: [1, 2, 3].map(cancel) })).status).toBe(202);
    // Each cancelled call's stream ends, without an answer.
    const streams = await Promise.all(calls.map((c) => c.text()));
    for (const [i, text] of streams.entries()) expect(text).not.toContain(`"id":${i + 1},"result"`);
    // Their places are still taken: cancelling is no way around the cap.
    const held = await exchange(session.url, { headers: headersOf(session), body: echo(5) });
    expect(held.status).toBe(429);
    expect(held.messages[0]).toMatchObject({ id: 5, error: { data: { reason: 'limit-reached', agent: 'alice', limit: CAP } } });

    // Ending the session ends its server's work, and gives the places back.
    expect(await session.close()).toBe(200);
    const next = await RawSession.open(`${stack.url}${path}`, stack.tokens.alice!);
    expect(await next.request('tools/call', { name: `${prefix}echo`, arguments: { message: 'after' } })).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: after' }] } });
    expect(await next.close()).toBe(200);
  });

  it('hold their places until the late answer of a server that ignored the cancellation, which the agent never sees', async () => {
    const session = await RawSession.open(`${stack.url}/servers/bulk/mcp`, stack.tokens.alice!);
    const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { message: `m${id}` } } });
    const waits = await Promise.all([1, 2].map((id) => post(session, call(id, 'wait'))));
    expect((await exchange(session.url, { headers: headersOf(session), body: [cancel(1), cancel(2)] })).status).toBe(202);
    expect(await Promise.all(waits.map((w) => w.text()))).toEqual(['', '']);

    // Two places held by the cancelled calls: of two more, one is taken and one refused.
    const squeezed = await exchange(session.url, { headers: headersOf(session), body: [call(3, 'echo'), call(4, 'echo')] });
    expect(squeezed.messages.find((m) => m.id === 3)).toMatchObject({ result: { content: [{ text: 'Echo: m3' }] } });
    expect(squeezed.messages.find((m) => m.id === 4)).toMatchObject({ error: { data: { reason: 'limit-reached', limit: CAP } } });

    // The server answers the cancelled calls late, then this one: those answers reached the worker first.
    const trigger = await exchange(session.url, { headers: headersOf(session), body: call(5, 'answer-waiting') });
    expect(trigger.messages.find((m) => m.id === 5)).toMatchObject({ result: { content: [{ text: 'answered' }] } });
    const freed = await exchange(session.url, { headers: headersOf(session), body: [call(6, 'echo'), call(7, 'echo'), call(8, 'echo')] });
    expect(freed.messages.filter((m) => 'result' in m).map((m) => m.id)).toEqual([6, 7, 8]);
    expect(freed.body).not.toContain('late');
    expect(await session.close()).toBe(200);
  });
});
