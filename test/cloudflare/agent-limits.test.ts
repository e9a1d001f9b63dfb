/**
 * Per-agent session limits under workerd, where each legacy session lives in its own
 * `AgentSession` object and no isolate sees another's: the agent's `AgentSlots` object holds
 * `max-sessions-per-agent` as the session table does on Deno and Node
 * (test/resilience/agent-limits.test.ts), with real sidecars, servers and SDK clients.
 *
 * - Past the limit, the agent's oldest idle session is ended to make room; `/servers/:name/mcp`
 *   and `/mcp` count together; another agent's sessions are untouched.
 * - When every session of the agent is busy, the next is refused with `limit-reached` (HTTP 429,
 *   JSON-RPC -32012, the same message as on Deno), nothing is started, another agent is served,
 *   and a DELETE gives its slot back at once.
 * - A session that idles out gives its slot back.
 *
 * How many slots an agent holds is read from its object, as another object of the worker would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { startWorkerdStack, type WorkerdStack } from '../support/workerd-stack.ts';

const LIMIT = 2;

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'limit-probe', version: '1.0.0' } },
});

async function held(stack: WorkerdStack, agent: string): Promise<number> {
  const response = await stack.worker.objectFetch('AGENT_SLOTS', agent, 'https://agent-slots.switchyard/', { method: 'POST', body: JSON.stringify({ op: 'held' }) });
  return ((await response.json()) as { held: number }).held;
}

const pidOf = async (client: Client): Promise<number> => {
  const result = (await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> };
  return Number(result.content[0]!.text);
};

const linesOf = (stack: WorkerdStack, msg: string, agent?: string) => stack.worker.logs().filter((l) => l.msg === msg && (agent === undefined || l.agent === agent));

describe('per-agent session limits on Workers', () => {
  let stack: WorkerdStack;
  beforeAll(async () => {
    stack = await startWorkerdStack({
      servers: { a: { faults: fixtureServer('fault-server.mjs'), 'pid-a': fixtureServer('pid-server.mjs') }, b: { 'pid-b': fixtureServer('pid-server.mjs') } },
      agents: [
        { name: 'carol', servers: ['faults', 'pid-a', 'pid-b'] },
        { name: 'dave', servers: ['faults', 'pid-a', 'pid-b'] },
      ],
      worker: { 'max-sessions-per-agent': LIMIT },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('ends the oldest idle session of an agent past its limit, both endpoints counted, another agent untouched', async () => {
    const endedBefore = linesOf(stack, 'Agent session ended to make room').length;
    const dave = await connectClient(`${stack.url}/servers/pid-b/mcp`, stack.tokens.dave!);
    const davePid = await pidOf(dave);
    const carol = [await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.carol!), await connectClient(`${stack.url}/servers/pid-b/mcp`, stack.tokens.carol!)];
    const pids = [await pidOf(carol[0]!), await pidOf(carol[1]!)];
    expect(await held(stack, 'carol')).toBe(LIMIT);

    const aggregate = await connectClient(`${stack.url}/mcp`, stack.tokens.carol!);
    expect((await aggregate.listTools()).tools.length).toBeGreaterThan(0);
    expect(await held(stack, 'carol')).toBe(LIMIT);
    await expect.poll(() => linesOf(stack, 'Agent session ended to make room', 'carol').length).toBe(endedBefore + 1);
    // Told why, as on every runtime (review s20: a bare "Session not found" on Workers).
    await expect(pidOf(carol[0]!)).rejects.toThrow(/Session ended: agent \W+carol\W+ opened a session past its limit, .*endedBecause\W+limit-reached/);
    expect(await pidOf(carol[1]!)).toBe(pids[1]);
    expect(await pidOf(dave)).toBe(davePid);
    expect(await held(stack, 'dave')).toBe(1);
    expect(linesOf(stack, 'Agent session slot reclaimed')).toEqual([]);

    for (const client of [...carol, aggregate, dave]) await closeClient(client);
    expect(await held(stack, 'carol')).toBe(0);
    expect(await held(stack, 'dave')).toBe(0);
  }, 60_000);

  it('refuses a session past the limit with limit-reached when every one is busy, serves another agent, and frees a slot on DELETE', async () => {
    const endedBefore = linesOf(stack, 'Agent session ended to make room').length;
    const busy: Client[] = [];
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const client = await connectClient(`${stack.url}/servers/faults/mcp`, stack.tokens.carol!);
      busy.push(client);
      inFlight.push(
        new Promise<void>((resolve) => {
          client.callTool({ name: 'slow', arguments: { ms: 120_000, steps: 120 } }, undefined, { onprogress: () => resolve(), timeout: 180_000 }).catch(() => {});
        }),
      );
    }
    // A progress notification back means the call is in flight through worker and host.
    await Promise.all(inFlight);
    const spawnedBefore = stack.serverPids('a').length;
    const refused = await fetch(`${stack.url}/servers/faults/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.carol}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: INITIALIZE,
    });
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { code: number; message: string; data: { reason: string } } };
    expect(body.error).toMatchObject({ code: -32012, data: { reason: 'limit-reached', agent: 'carol', limit: LIMIT } });
    expect(body.error.message).toBe(`Agent "carol" already holds ${LIMIT} live sessions, all busy: close a session (DELETE with its Mcp-Session-Id) or raise max-sessions in the worker config`);
    expect(stack.serverPids('a')).toHaveLength(spawnedBefore);
    expect(await held(stack, 'carol')).toBe(LIMIT);

    // Another agent is not held back by carol's limit.
    const dave = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.dave!);
    expect(await pidOf(dave)).toBeGreaterThan(0);
    await closeClient(dave);

    // A DELETE's answer comes once its slot is back: the next session fits beside the busy one.
    await closeClient(busy.shift()!);
    expect(await held(stack, 'carol')).toBe(LIMIT - 1);
    const again = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.carol!);
    expect(await pidOf(again)).toBeGreaterThan(0);
    expect(await held(stack, 'carol')).toBe(LIMIT);
    expect(linesOf(stack, 'Agent session ended to make room')).toHaveLength(endedBefore);
    expect(linesOf(stack, 'Agent session slot reclaimed')).toEqual([]);

    for (const client of [...busy, again]) await closeClient(client);
    expect(await held(stack, 'carol')).toBe(0);
  }, 60_000);
});

describe('a legacy session that idles out on Workers', () => {
  let stack: WorkerdStack;
  beforeAll(async () => {
    stack = await startWorkerdStack({
      servers: { a: { 'pid-a': fixtureServer('pid-server.mjs') }, b: { 'pid-b': fixtureServer('pid-server.mjs') } },
      worker: { 'max-sessions-per-agent': 1, 'session-idle-seconds': 2 },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('gives its slot back, so the agent\'s next session takes it without ending anything', async () => {
    const first = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    expect(await pidOf(first)).toBeGreaterThan(0);
    expect(await held(stack, 'alice')).toBe(1);
    await expect.poll(() => linesOf(stack, 'Agent session expired', 'alice').length, { timeout: 15_000 }).toBe(1);
    await expect.poll(() => held(stack, 'alice'), { timeout: 15_000 }).toBe(0);
    await expect(pidOf(first)).rejects.toThrow(/Session ended: no request for more than \d+ s; initialize a new session/);
    await first.close();

    const next = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    expect(await pidOf(next)).toBeGreaterThan(0);
    expect(await held(stack, 'alice')).toBe(1);
    expect(linesOf(stack, 'Agent session ended to make room')).toEqual([]);
    expect(linesOf(stack, 'Agent session slot reclaimed')).toEqual([]);
    await closeClient(next);
    expect(await held(stack, 'alice')).toBe(0);
  }, 60_000);
});
