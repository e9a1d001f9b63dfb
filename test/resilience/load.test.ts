/**
 * Load: 50 agent sessions × 200 tool calls, spread over 3 servers on one host, all over the one
 * link between the worker (under Deno) and the sidecar (the real CLI).
 *
 * What must hold: no call lost (every call answered, none failed), none misrouted (each answer
 * echoes its own caller's unique payload: session, call and a random nonce), and afterwards
 * nothing left: /healthz counts 0 sessions and 0 channels, every server process the sidecar
 * spawned has ended, and the worker's and the sidecar's memory are back near their baselines
 * (the numbers are printed; only a generous bound is asserted, since RSS rarely shrinks fully).
 *
 * Sized as specified, within the suite's time budget on 2 cores, because (measured, see the
 * printed CPU split) the load's own parts were made light: two of the servers are the SDK-free
 * echo fixture and one is server-everything, so a real npm server is in the mix; and the agents
 * use `RawSession`, a bare HTTP client, since the SDK client cost the test process more CPU per
 * call than the worker and the sidecar together. Memory: measured over repeated rounds, the
 * worker's RSS climbs to a plateau in the first two rounds and stays there (heap high-water, not
 * a leak), hence a generous bound rather than "back to baseline".
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { EVERYTHING, REPO } from '../support/paths.ts';
import { Figures } from './figures.ts';
import { RawSession } from './raw-client.ts';
import { alive, cpuMs, rssMiB } from './proc-stats.ts';
import { startStack, type Stack } from '../support/stack.ts';

const SESSIONS = 50;
const CALLS_PER_SESSION = 200;
/** Calls in flight at once within one session, so routing inside a session is exercised too. */
const PER_SESSION_CONCURRENCY = 2;
/** Growth over baseline that would mean a leak rather than allocator slack (MiB). */
const MEMORY_BOUND_MIB = 256;
const SERVERS = ['echo-1', 'echo-2', 'everything'] as const;

const figures = new Figures('load');
let stack: Stack;

beforeAll(async () => {
  const echo = { command: process.execPath, args: [join(REPO, 'test/fixtures/raw-echo-server.mjs')] };
  stack = await startStack({
    servers: { 'echo-1': echo, 'echo-2': echo, everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } },
    // One agent holds every session here: above the default per-agent limits.
    worker: { 'max-sessions-per-agent': SESSIONS + 8 },
    sidecar: { limits: { 'server-processes-per-agent': SESSIONS + 8, 'server-processes': SESSIONS + 8 } },
  });
});

afterAll(async () => {
  figures.report();
  await stack?.stop();
});

/** CPU used so far by each party of the load, in ms (servers: those spawned after `from`). */
function cpu(from: number): Record<'test' | 'worker' | 'sidecar' | 'servers', number> {
  const own = process.cpuUsage();
  return {
    test: (own.user + own.system) / 1000,
    worker: cpuMs(stack.worker.pid),
    sidecar: cpuMs(stack.sidecar.pid),
    servers: stack.serverPids().slice(from).reduce((sum, pid) => sum + cpuMs(pid), 0),
  };
}

const server = (i: number) => SERVERS[i % SERVERS.length]!;

async function callMany(client: RawSession, session: number, counts: { ok: number; lost: number; misrouted: number; errors: string[] }) {
  let next = 0;
  const lane = async () => {
    while (next < CALLS_PER_SESSION) {
      const call = next++;
      const payload = `s${session}-c${call}-${randomBytes(6).toString('hex')}`;
      try {
        const response = await client.request('tools/call', { name: 'echo', arguments: { message: payload } });
        const text = (response.result as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text;
        if (text === `Echo: ${payload}`) counts.ok++;
        else if (response.error !== undefined) throw new Error(JSON.stringify(response.error));
        else counts.misrouted++;
      } catch (error) {
        counts.lost++;
        if (counts.errors.length < 5) counts.errors.push(`session ${session} call ${call}: ${(error as Error).message}`);
      }
      figures.calls++;
    }
  };
  await Promise.all(Array.from({ length: PER_SESSION_CONCURRENCY }, lane));
}

describe('load over one link', () => {
  it(`${SESSIONS} sessions × ${CALLS_PER_SESSION} calls across ${SERVERS.length} servers: none lost, none misrouted, nothing left`, async () => {
    // Warm up every code path once, so the baseline is a steady state rather than a cold start.
    for (const name of SERVERS) {
      const client = await connectClient(`${stack.url}/servers/${name}/mcp`, stack.tokens.alice!);
      await client.callTool({ name: 'echo', arguments: { message: 'warm-up' } });
      await closeClient(client);
      figures.sessions++;
      figures.calls++;
    }
    await expect.poll(() => alive(stack.serverPids()), { timeout: 15_000 }).toEqual([]);
    const baseline = { worker: rssMiB(stack.worker.pid), sidecar: rssMiB(stack.sidecar.pid) };
    const spawnedBefore = stack.serverPids().length;

    const started = Date.now();
    const clients = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => RawSession.open(`${stack.url}/servers/${server(i)}/mcp`, stack.tokens.alice!)));
    figures.sessions += clients.length;
    const opened = Date.now();
    const counts = { ok: 0, lost: 0, misrouted: 0, errors: [] as string[] };
    const cpu0 = cpu(spawnedBefore);
    await Promise.all(clients.map((client, i) => callMany(client, i, counts)));
    const called = Date.now();
    const cpu1 = cpu(spawnedBefore);
    const peak = { worker: rssMiB(stack.worker.pid), sidecar: rssMiB(stack.sidecar.pid) };
    const closed = await Promise.all(clients.map((c) => c.close()));

    const spawned = stack.serverPids().slice(spawnedBefore);
    await expect.poll(async () => (await stack.health()).sessions, { timeout: 10_000 }).toBe(0);
    await expect.poll(async () => (await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')?.channels, { timeout: 10_000 }).toBe(0);
    await expect.poll(() => alive(spawned), { timeout: 20_000 }).toEqual([]);
    const after = { worker: rssMiB(stack.worker.pid), sidecar: rssMiB(stack.sidecar.pid) };

    figures.failures += counts.lost + counts.misrouted;
    figures.note('open ms', opened - started);
    figures.note('calls ms', called - opened);
    figures.note('calls/s', Math.round((SESSIONS * CALLS_PER_SESSION) / ((called - opened) / 1000)));
    figures.note('CPU s of the calls (test/worker/sidecar/servers)', (['test', 'worker', 'sidecar', 'servers'] as const).map((k) => ((cpu1[k] - cpu0[k]) / 1000).toFixed(1)).join('/'));
    figures.note('worker RSS MiB base/peak/after', `${baseline.worker}/${peak.worker}/${after.worker}`);
    figures.note('sidecar RSS MiB base/peak/after', `${baseline.sidecar}/${peak.sidecar}/${after.sidecar}`);

    expect(counts.errors).toEqual([]);
    expect(closed.every((status) => status === 200)).toBe(true);
    expect(counts).toMatchObject({ ok: SESSIONS * CALLS_PER_SESSION, lost: 0, misrouted: 0 });
    expect(spawned).toHaveLength(SESSIONS);
    expect(after.worker - baseline.worker).toBeLessThan(MEMORY_BOUND_MIB);
    expect(after.sidecar - baseline.sidecar).toBeLessThan(MEMORY_BOUND_MIB);
  }, 180_000);
});
