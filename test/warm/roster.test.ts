/**
 * The worker's roster, with real processes: the worker under Deno, the sidecar CLI with a warm
 * pool, and the pid fixture. When a reload of the worker's config removes an agent, or takes a
 * server from one, the host ends at once what it kept ready for it: the warm pool's spare and a
 * modern agent's server instance, which before sat idle for 600 s and 15 minutes with no one left
 * who could reach them. Everyone else's stay.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { livePids } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost } from '../modern/modern-client.ts';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { pids: fixtureServer('pid-server.mjs') },
    agents: [
      { name: 'bob', servers: ['pids'] },
      { name: 'carol', servers: ['pids'] },
    ],
    sidecar: { 'warm-pool': { size: 1, 'max-instances': 4 } },
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

const url = () => `${stack.url}/servers/pids/mcp`;
const pidOf = (result: unknown) => Number((result as { content: Array<{ text: string }> }).content[0]!.text);

/** A legacy session of `agent` that asks its pid and closes; then the pool's spare for it, once ready. */
async function sessionThenSpare(agent: string): Promise<void> {
  const readyBefore = stack.sidecar.lines().filter((l) => l.msg === 'Warm instance ready' && l.agent === agent).length;
  const client = await connectClient(url(), stack.tokens[agent]!);
  try {
    expect(pidOf(await client.callTool({ name: 'pid', arguments: {} }))).toBeGreaterThan(0);
  } finally {
    await closeClient(client);
  }
  await expect.poll(() => stack.sidecar.lines().filter((l) => l.msg === 'Warm instance ready' && l.agent === agent).length, { timeout: 30_000 }).toBe(readyBefore + 1);
}

function editWorkerConfig(edit: (config: { agents: Array<{ name: string; servers: string[] }> }) => void): void {
  const file = stack.worker.configFile;
  const config = JSON.parse(readFileSync(file, 'utf8'));
  edit(config);
  writeFileSync(file, JSON.stringify(config));
}

describe('the roster', () => {
  it('ends a removed agent\'s spare and modern instance at once, and then the spare of an agent that lost the server, keeping everyone else\'s', async () => {
    const modern = await modernPost(url(), stack.tokens.carol!, 'tools/call', { name: 'pid', arguments: {} });
    expect(modern.status).toBe(200);
    const carolModern = pidOf(modern.response.result);
    await sessionThenSpare('bob');
    await sessionThenSpare('carol');
    const kept = livePids(stack.serverPids());
    // Bob's spare, carol's spare and carol's modern instance: nothing else runs.
    expect(kept).toHaveLength(3);
    expect(kept).toContain(carolModern);
    // Told once as the sidecar linked: alice, bob and carol.
    expect(stack.sidecar.err.filter(msg('Roster from the worker')).map((l) => l.json)).toEqual([expect.objectContaining({ agents: 3, endedSpares: 0, endedInstances: 0 })]);

    editWorkerConfig((config) => {
      config.agents = config.agents.filter((a) => a.name !== 'carol');
    });
    await expect.poll(() => stack.worker.err.filter(msg('Worker config reloaded')).length, { timeout: 15_000 }).toBe(1);
    await expect.poll(() => livePids(kept).length, { timeout: 15_000 }).toBe(1);
    const [bobSpare] = livePids(kept);
    expect(bobSpare).not.toBe(carolModern);
    expect(stack.sidecar.err.filter(msg('Roster from the worker')).map((l) => l.json)[1]).toMatchObject({ agents: 2, endedSpares: 1, endedInstances: 1 });
    expect(stack.sidecar.err.filter(msg('Warm instances ended: the worker no longer routes their agent and server here', { agent: 'carol', server: 'pids' }))).toHaveLength(1);

    // Bob keeps his spare until he loses the server; then it goes too, and his next session on
    // another server works as before.
    editWorkerConfig((config) => {
      config.agents.find((a) => a.name === 'bob')!.servers = ['offline'];
    });
    await expect.poll(() => livePids(kept), { timeout: 15_000 }).toEqual([]);
    expect(stack.sidecar.err.filter(msg('Warm instances ended: the worker no longer routes their agent and server here', { agent: 'bob', server: 'pids' }))).toHaveLength(1);
    // Alice, untouched by both changes, is served as before.
    const alice = await connectClient(url(), stack.tokens.alice!);
    try {
      expect(pidOf(await alice.callTool({ name: 'pid', arguments: {} }))).toBeGreaterThan(0);
    } finally {
      await closeClient(alice);
    }
  });
});
