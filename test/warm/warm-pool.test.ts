/**
 * The host's warm pool with real processes: the worker under Deno, the sidecar CLI with
 * `"warm-pool": {"size": 1}`, and the pid fixture (its one tool answers the pid of the process
 * serving the session). Shows that an agent's second session is served by the instance the pool
 * spawned after its first, that the pool refills after a take, that another agent never gets an
 * instance spawned for someone else, and that pooled instances end with the sidecar.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { isAlive, waitUntil } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { pids: fixtureServer('pid-server.mjs') },
    agents: [{ name: 'bob', servers: ['pids'] }],
    sidecar: { 'warm-pool': { size: 1, 'max-instances': 4 } },
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

/** Opens a session of `agent`, asks which process serves it, and closes the session. */
async function servedBy(agent: string): Promise<number> {
  const client: Client = await connectClient(`${stack.url}/servers/pids/mcp`, stack.tokens[agent]!);
  try {
    const result = await client.callTool({ name: 'pid', arguments: {} });
    return Number((result.content as Array<{ text: string }>)[0]!.text);
  } finally {
    await closeClient(client);
  }
}

const warmReady = (agent: string) => (line: Record<string, unknown>) => line.msg === 'Warm instance ready' && line.agent === agent && line.server === 'pids';
const ready = (agent: string) => stack.sidecar.lines().filter(warmReady(agent)).length;

describe('the warm pool', () => {
  let aliceWarm: number[] = [];

  it("serves an agent's second session from the instance spawned after its first, then refills", async () => {
    const spawnedBefore = stack.serverPids().length;
    const first = await servedBy('alice');
    // The first session was cold: its own process, spawned for it.
    expect(stack.serverPids().slice(spawnedBefore)[0]).toBe(first);
    await stack.sidecar.waitForLine(warmReady('alice'), 'a warm instance for alice');
    const pooled = stack.serverPids().slice(spawnedBefore + 1);
    expect(pooled).toHaveLength(1);

    const second = await servedBy('alice');
    expect(second).toBe(pooled[0]);
    // Taking it started a replacement in the background.
    await waitUntil(() => ready('alice') >= 2, 'the pool to refill for alice');
    aliceWarm = stack.serverPids().slice(spawnedBefore + 2);
    expect(aliceWarm).toHaveLength(1);
    expect(isAlive(aliceWarm[0]!)).toBe(true);
  });

  it('never hands an instance spawned for one agent to another', async () => {
    const spawnedBefore = stack.serverPids().length;
    const bobs = await servedBy('bob');
    expect(aliceWarm).not.toContain(bobs);
    expect(stack.serverPids().slice(spawnedBefore)[0]).toBe(bobs);
    // Alice's pooled instance is still there, untouched, for alice.
    expect(isAlive(aliceWarm[0]!)).toBe(true);
    await stack.sidecar.waitForLine(warmReady('bob'), 'a warm instance for bob');
    expect(await servedBy('alice')).toBe(aliceWarm[0]);
  });

  it('ends every pooled instance with the sidecar', async () => {
    await waitUntil(() => ready('alice') >= 3, 'the pool to refill for alice again');
    const pooled = stack.serverPids().filter(isAlive);
    expect(pooled.length).toBeGreaterThanOrEqual(2);
    await stack.sidecar.process.stop();
    await waitUntil(() => pooled.every((pid) => !isAlive(pid)), 'every pooled server to end with the sidecar', 10_000);
  });
});
