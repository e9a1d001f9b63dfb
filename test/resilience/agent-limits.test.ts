/**
 * One agent cannot exhaust a host (issue 18, item 6), against the real stack: the worker under
 * Deno, the sidecar CLI, real stdio servers and real SDK clients that open sessions and never
 * close them, as the MCP Inspector CLI does.
 *
 * - The worker holds at most `max-sessions-per-agent` sessions of one agent: each session past it
 *   ends that agent's oldest idle one (and so its server process); another agent's sessions and
 *   processes are untouched, and no process outlives its session.
 * - When every session of the agent is busy the new one is refused with `limit-reached` (HTTP
 *   429, JSON-RPC -32012) and nothing is started.
 * - The host holds at most `server-processes-per-agent` processes of one agent: an aggregate
 *   session needs one per server, so the host ends the agent's oldest idle process first; the
 *   instances kept for a modern (2026-07-28) agent count against the same limit.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { livePids } from '../support/processes.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost } from '../modern/modern-client.ts';

const SESSION_LIMIT = 3;
const HOST_LIMIT = 3;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    servers: { faults: fixtureServer('fault-server.mjs'), pid: fixtureServer('pid-server.mjs') },
    agents: [
      { name: 'bob', servers: ['pid'] },
      { name: 'carol', servers: ['pid', 'faults'] },
      { name: 'dave', servers: ['pid', 'faults'] },
    ],
    worker: { 'max-sessions-per-agent': SESSION_LIMIT },
    sidecar: { limits: { 'server-processes-per-agent': HOST_LIMIT } },
  });
});

afterAll(async () => {
  await stack?.stop();
});

const pidOf = async (client: Client): Promise<number> => {
  const result = (await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> };
  return Number(result.content[0]!.text);
};

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'limit-probe', version: '1.0.0' } },
});

describe('per-agent limits', () => {
  it('holds a client that never closes its sessions to its limit, ending its oldest idle ones, other agents untouched, no orphan process', async () => {
    const bob = await connectClient(`${stack.url}/servers/pid/mcp`, stack.tokens.bob!);
    const bobPid = await pidOf(bob);
    const alice: Client[] = [];
    const pids: number[] = [];
    for (let i = 0; i < 6; i++) {
      const client = await connectClient(`${stack.url}/servers/pid/mcp`, stack.tokens.alice!);
      alice.push(client);
      pids.push(await pidOf(client));
    }
    expect((await stack.health()).sessions).toBe(SESSION_LIMIT + 1);
    // Every server process maps at most sidecar.json's memory-limit-mib (4096 MiB by default), through RLIMIT_DATA.
    const limits = readFileSync(`/proc/${bobPid}/limits`, 'utf8');
    expect(limits).toMatch(new RegExp(`^Max data size\\s+${4096 * 1024 * 1024}\\s+${4096 * 1024 * 1024}\\s+bytes`, 'm'));
    // The three oldest were ended to make room, in the order they were opened.
    // Logs arrive on their own pipe: wait for the lines rather than assume they came first.
    await expect.poll(() => stack.worker.err.filter(msg('Agent session ended to make room', { agent: 'alice' })).length, { timeout: 15_000 }).toBe(3);
    for (const client of alice.slice(0, 3)) await expect(pidOf(client)).rejects.toThrow(/Session ended: agent \W+alice\W+ opened a session past its limit of \d+, .*endedBecause\W+limit-reached/);
    // The newest three still answer, each from the process it had; bob's session never noticed.
    for (const [i, client] of alice.slice(3).entries()) expect(await pidOf(client)).toBe(pids[3 + i]);
    expect(await pidOf(bob)).toBe(bobPid);
    // Every ended session's server process is gone; no other one is.
    await expect.poll(() => livePids(stack.serverPids()).sort(), { timeout: 15_000 }).toEqual([...pids.slice(3), bobPid].sort());

    for (const client of alice) await closeClient(client);
    await closeClient(bob);
    await expect.poll(() => livePids(stack.serverPids()), { timeout: 15_000 }).toEqual([]);
  });

  it('refuses a session past the limit with limit-reached when every session of the agent is busy, starting nothing', async () => {
    const busy: Client[] = [];
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < SESSION_LIMIT; i++) {
      const client = await connectClient(`${stack.url}/servers/faults/mcp`, stack.tokens.alice!);
      busy.push(client);
      inFlight.push(
        new Promise<void>((resolve) => {
          client.callTool({ name: 'slow', arguments: { ms: 120_000, steps: 120 } }, undefined, { onprogress: () => resolve(), timeout: 180_000 }).catch(() => {});
        }),
      );
    }
    // A progress notification back means the call is in flight through worker and host.
    await Promise.all(inFlight);
    const spawnedBefore = stack.serverPids().length;
    const refused = await fetch(`${stack.url}/servers/faults/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.alice}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: INITIALIZE,
    });
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { code: number; message: string; data: { reason: string } } };
    expect(body.error).toMatchObject({ code: -32012, data: { reason: 'limit-reached', agent: 'alice', limit: SESSION_LIMIT } });
    expect(body.error.message).toBe(`Agent "alice" already holds ${SESSION_LIMIT} live sessions, all busy: close a session (DELETE with its Mcp-Session-Id) or raise max-sessions in the worker config`);
    expect(stack.serverPids()).toHaveLength(spawnedBefore);
    // Another agent is not held back by alice's limit.
    const bob = await connectClient(`${stack.url}/servers/pid/mcp`, stack.tokens.bob!);
    expect(await pidOf(bob)).toBeGreaterThan(0);
    await closeClient(bob);
    for (const client of busy) await closeClient(client);
    await expect.poll(() => livePids(stack.serverPids()), { timeout: 15_000 }).toEqual([]);
  });

  it('holds one agent to its server processes on the host, ending its oldest idle process, never another agent\'s', async () => {
    const bob = await connectClient(`${stack.url}/servers/pid/mcp`, stack.tokens.bob!);
    const bobPid = await pidOf(bob);
    // Each aggregate session of carol runs two servers: the second session needs a fourth process.
    const first = await connectClient(`${stack.url}/mcp`, stack.tokens.carol!);
    await first.listTools();
    const second = await connectClient(`${stack.url}/mcp`, stack.tokens.carol!);
    await second.listTools();
    const made = await stack.sidecar.waitForLine((l) => l.msg === 'Server process ended to make room', 'a process ended to make room');
    expect(made).toMatchObject({ agent: 'carol' });
    expect(stack.sidecar.lines().filter((l) => l.msg === 'Server process ended to make room').every((l) => l.agent === 'carol')).toBe(true);
    const live = () => livePids(stack.serverPids()).filter((pid) => pid !== bobPid);
    await expect.poll(() => live().length, { timeout: 15_000 }).toBe(HOST_LIMIT);
    // The newer session works in full; bob's process is the one it always was.
    expect((await second.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['pid__pid', 'faults__echo']));
    expect(await pidOf(bob)).toBe(bobPid);
    for (const client of [first, second, bob]) await closeClient(client);
    await expect.poll(() => livePids(stack.serverPids()), { timeout: 15_000 }).toEqual([]);
  });

  it('counts the instances kept for a modern agent against the same per-agent limit on the host', async () => {
    const older = await connectClient(`${stack.url}/servers/pid/mcp`, stack.tokens.dave!);
    const olderPid = await pidOf(older);
    const newer = await connectClient(`${stack.url}/servers/faults/mcp`, stack.tokens.dave!);
    await newer.callTool({ name: 'echo', arguments: { message: 'kept' } });
    const modern = async (server: string, name: string, args: Record<string, unknown> = {}) =>
      (await modernPost(`${stack.url}/servers/${server}/mcp`, stack.tokens.dave!, 'tools/call', { name, arguments: args })).response;
    const instancePid = Number((await modern('pid', 'pid')).result.content[0].text);
    const before = stack.sidecar.lines().filter((l) => l.msg === 'Server process ended to make room').length;
    // A fourth process of dave's: his oldest idle one (the older legacy session's) makes room.
    expect((await modern('faults', 'echo', { message: 'modern' })).result.content[0].text).toBe('Echo: modern');
    const made = () => stack.sidecar.lines().filter((l) => l.msg === 'Server process ended to make room').slice(before);
    await expect.poll(made, { timeout: 15_000 }).toEqual([expect.objectContaining({ agent: 'dave', server: 'pid' })]);
    await expect.poll(() => livePids([olderPid]), { timeout: 15_000 }).toEqual([]);
    await expect(pidOf(older)).rejects.toThrow();
    expect((await newer.callTool({ name: 'echo', arguments: { message: 'still' } })).content).toEqual([{ type: 'text', text: 'Echo: still' }]);
    expect(Number((await modern('pid', 'pid')).result.content[0].text)).toBe(instancePid);
    for (const client of [older, newer]) await closeClient(client).catch(() => {});
  });
});
