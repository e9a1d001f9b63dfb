/**
 * One agent cannot make the worker hold unbounded memory (review dos.md, findings 1 and 3),
 * against the real stack: the worker under Deno, the sidecar CLI, real stdio servers. Memory
 * lost to one agent is every agent's: an OOM kill of the worker ends all their sessions.
 *
 * - Event store: answers too large to keep are not kept, and a stream whose answers were all
 *   read is forgotten, so a resume from one of its events replays nothing (and ends, without an
 *   error), where 512 kept events of 1 MB echoes held about 1 GB per session.
 * - Requests in flight: a session takes 128 calls a server never answers and refuses the 129th
 *   with limit-reached; the agent's sessions together, and its modern requests, take
 *   `max-requests-per-agent`. Another agent's calls go on untouched.
 *
 * The worker's RSS growth is printed as the review measured it, not asserted: what is asserted
 * is the behaviour that bounds it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REQUESTS_PER_SESSION } from '../../worker/sessions/request-limits.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost } from '../modern/modern-client.ts';
import { exchange, RawSession } from './raw-client.ts';
import { rssMiB } from './proc-stats.ts';

const AGENT_LIMIT = 200;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { faults: fixtureServer('fault-server.mjs'), echo: fixtureServer('echo-server.mjs') },
    agents: [{ name: 'bob', servers: ['echo'] }],
    worker: { 'max-requests-per-agent': AGENT_LIMIT },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const headersOf = (session: RawSession) => ({ authorization: `Bearer ${session.token}`, 'mcp-session-id': session.id, 'mcp-protocol-version': '2025-11-25' });
const hang = (id: number, pad = '') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hang', arguments: {}, _meta: { pad } } });
const bobEcho = async () => {
  const bob = await RawSession.open(`${stack.url}/servers/echo/mcp`, stack.tokens.bob!);
  const answer = await bob.request('tools/call', { name: 'echo', arguments: { message: 'hi' } });
  await bob.close();
  return answer;
};

/** POSTs `body` on `session` and returns once the answer's headers are in: its requests are taken or refused by then. */
async function post(session: RawSession, body: unknown): Promise<Response> {
  return fetch(session.url, {
    method: 'POST',
    headers: { ...headersOf(session), accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Reads SSE events off `response` until `count` JSON-RPC messages have come (the stream may stay open). */
async function readMessages(response: Response, count: number): Promise<Array<Record<string, unknown>>> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  const messages = () => text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
  while (messages().length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    text += value;
  }
  await reader.cancel();
  return messages();
}

describe('worker memory one agent can hold', () => {
  it('keeps no 1 MB echo for replay: a resume from a read batch replays nothing and ends; bob is unaffected', async () => {
    const session = await RawSession.open(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!);
    const message = 'm'.repeat(1_000_000);
    const before = rssMiB(stack.worker.pid!);
    let id = 100;
    let lastIds: string[] = [];
    for (let batch = 0; batch < 32; batch++) {
      const body = Array.from({ length: 4 }, () => ({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'echo', arguments: { message } } }));
      const answer = await exchange(session.url, { headers: headersOf(session), body });
      expect(answer.messages.filter((m) => 'result' in m)).toHaveLength(4);
      lastIds = [...answer.body.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!);
    }
    console.log(`worker RSS after 128 MB echoed on one session: ${before} -> ${rssMiB(stack.worker.pid!)} MiB`);
    expect(lastIds.length).toBeGreaterThan(1);
    const resumed = await exchange(session.url, { method: 'GET', headers: { ...headersOf(session), accept: 'text/event-stream', 'last-event-id': lastIds[0]! } });
    expect(resumed.status).toBe(200);
    expect(resumed.messages).toEqual([]);
    expect(await bobEcho()).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: hi' }] } });
    expect(await session.close()).toBe(200);
  });

  it(`refuses a session's call past ${MAX_REQUESTS_PER_SESSION} in flight and the agent's calls past its cap with limit-reached, bob unaffected`, async () => {
    const first = await RawSession.open(`${stack.url}/servers/faults/mcp`, stack.tokens.alice!);
    const before = rssMiB(stack.worker.pid!);
    // Two batches (a batch holds 100 at most) fill the session.
    const held = await post(first, Array.from({ length: 100 }, (_, i) => hang(1000 + i)));
    expect(held.status).toBe(200);
    const heldToo = await post(first, Array.from({ length: MAX_REQUESTS_PER_SESSION - 100 }, (_, i) => hang(1100 + i)));
    expect(heldToo.status).toBe(200);

    const lone = await post(first, hang(2000));
    expect(lone.status).toBe(429);
    expect(await lone.json()).toMatchObject({ id: 2000, error: { code: -32012, data: { reason: 'limit-reached', limit: MAX_REQUESTS_PER_SESSION } } });

    // The review's flood: 2000 calls of 20 KB; all past the session's cap are refused at once.
    const pad = 'p'.repeat(20_000);
    let refused = 0;
    for (let batch = 0; batch < 20; batch++) {
      const answer = await post(first, Array.from({ length: 100 }, (_, i) => hang(3000 + batch * 100 + i, pad)));
      expect(answer.status).toBe(429);
      refused += ((await answer.json()) as unknown[]).length;
    }
    expect(refused).toBe(2000);
    console.log(`worker RSS with ${MAX_REQUESTS_PER_SESSION} calls held and 2000 refused on one session: ${before} -> ${rssMiB(stack.worker.pid!)} MiB`);

    // A second session of alice's takes only what is left of her 200: 72 of 76.
    const second = await RawSession.open(`${stack.url}/servers/faults/mcp`, stack.tokens.alice!);
    const partly = await post(second, Array.from({ length: 76 }, (_, i) => hang(101 + i)));
    expect(partly.status).toBe(200);
    const errors = await readMessages(partly, 4);
    expect(errors.map((m) => m.id)).toEqual([173, 174, 175, 176]);
    for (const error of errors) expect(error).toMatchObject({ error: { code: -32012, data: { reason: 'limit-reached', agent: 'alice', limit: AGENT_LIMIT } } });
    const modern = await modernPost(`${stack.url}/servers/faults/mcp`, stack.tokens.alice!, 'tools/call', { name: 'echo', arguments: { message: 'x' } });
    expect(modern.response).toMatchObject({ error: { code: -32012, data: { reason: 'limit-reached', agent: 'alice' } } });

    expect(await bobEcho()).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: hi' }] } });

    // Ending the first session gives its calls back to alice.
    expect(await first.close()).toBe(200);
    expect(await second.request('tools/call', { name: 'echo', arguments: { message: 'again' } })).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: again' }] } });
    await held.body?.cancel();
    await heldToo.body?.cancel();
    expect(await second.close()).toBe(200);
  });
});
