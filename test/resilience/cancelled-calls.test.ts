/**
 * A call the agent cancels gives its place back, against the real stack: the worker under Deno,
 * the sidecar CLI, server-everything. A server that honours `notifications/cancelled` never
 * answers the request (MCP, "Cancellation"), so a cancelled call the worker still counted in
 * flight held its slot under `max-requests-per-agent` and the session's cap, and kept its session
 * busy, until the session ended: an agent whose user pressed stop a few times was refused every
 * call with limit-reached.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { exchange, RawSession } from './raw-client.ts';

const CAP = 3;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { everything: everythingServer() }, worker: { 'max-requests-per-agent': CAP } });
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

describe('cancelled calls', () => {
  it.each([
    ['the passthrough', '/servers/everything/mcp', ''],
    ['the aggregate', '/mcp', 'everything__'],
  ])("give their slots back on %s: the agent's next call goes through, and their streams end", async (_route, path, prefix) => {
    const session = await RawSession.open(`${stack.url}${path}`, stack.tokens.alice!);
    const long = (id: number) => ({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 120, steps: 120 }, _meta: { progressToken: `progress-${id}` } },
    });
    const echo = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: `${prefix}echo`, arguments: { message: 'after' } } });
    const cancel = (id: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'The user pressed stop' } });

    const calls = await Promise.all([1, 2, 3].map((id) => post(session, long(id))));
    expect(calls.map((c) => c.status)).toEqual([200, 200, 200]);
    const full = await post(session, echo(4));
    expect(full.status).toBe(429);
    expect(((await full.json()) as { error: { data: { reason: string } } }).error.data.reason).toBe('limit-reached');

    // Taken before its 202: the calls are settled by the time this returns.
    expect((await exchange(session.url, { headers: headersOf(session), body: [1, 2, 3].map(cancel) })).status).toBe(202);
    const after = await exchange(session.url, { headers: headersOf(session), body: echo(5) });
    expect(after.messages.find((m) => m.id === 5)).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: after' }] } });

    // Each cancelled call's stream ends, without an answer.
    const streams = await Promise.all(calls.map((c) => c.text()));
    for (const [i, text] of streams.entries()) expect(text).not.toContain(`"id":${i + 1},"result"`);
    expect(await session.close()).toBe(200);
  });
});
