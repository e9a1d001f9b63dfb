/**
 * The two ends of the link failing under live sessions, with the real processes: the sidecar
 * SIGKILLed mid-call (a crash, an OOM kill) and the worker restarted (SIGTERM, as an operator
 * does, and SIGKILL, as a crash does) on the same port.
 *
 * Liveness bounds from the issue, measured between arrival times of log lines or answers here:
 * the agent hears `host-offline` within 2 s of the sidecar's death, and the sidecar relinks
 * within 2 s of the worker listening again. Old sessions fail with a clear answer, new ones work.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { Figures, SLOW_MS } from './figures.ts';
import { msg } from '../support/line-log.ts';
import { alive } from './proc-stats.ts';
import { startStack, type Stack } from '../support/stack.ts';

/** The liveness bound the issue sets for noticing a dead peer and for relinking (ms). */
const LIVENESS_MS = 2_000;

const figures = new Figures('link-faults');
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { fault: fixtureServer('fault-server.mjs'), echo: fixtureServer('raw-echo-server.mjs') } });
});

afterAll(async () => {
  const leaked = stack?.leakedSecrets() ?? [];
  figures.failures += leaked.length;
  figures.report();
  await stack?.stop();
  expect(leaked).toEqual([]);
});

const reasonOf = (error: unknown) => ((error as McpError).data as { reason?: string } | undefined)?.reason;

async function echo(server: string): Promise<void> {
  const client = await connectClient(`${stack.url}/servers/${server}/mcp`, stack.tokens.alice!);
  figures.sessions++;
  expect(await client.callTool({ name: 'echo', arguments: { message: 'works' } })).toEqual({ content: [{ type: 'text', text: 'Echo: works' }] });
  figures.calls++;
  await closeClient(client);
}

describe('link faults', { timeout: SLOW_MS }, () => {
  it('sidecar SIGKILLed mid-call: host-offline within 2 s; a new session works once it is back', async () => {
    const client = await connectClient(`${stack.url}/servers/fault/mcp`, stack.tokens.alice!);
    figures.sessions++;
    let progressed!: () => void;
    const midCall = new Promise<void>((resolve) => (progressed = resolve));
    const call = client
      .callTool({ name: 'slow', arguments: { ms: 60_000, steps: 600 } }, undefined, { onprogress: () => progressed(), timeout: 120_000 })
      .then((result) => result, (error: unknown) => error);
    figures.calls++;
    await midCall;
    const orphans = stack.serverPids();

    const killedAt = Date.now();
    stack.sidecar.process.child.kill('SIGKILL');
    const error = await call;
    const noticedMs = Date.now() - killedAt;
    figures.faults++;
    figures.note('host-offline after SIGKILL ms', noticedMs);
    expect(reasonOf(error)).toBe('host-offline');
    expect((error as Error).message).toMatch(/Server "fault" ended the session: Host "res-host-a" went offline/);
    expect(noticedMs).toBeLessThan(LIVENESS_MS);
    await stack.sidecar.process.exited;

    // While the host is down, a new session is refused at once with the same reason.
    const refused = await connectClient(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!).catch((e: unknown) => e);
    expect(String(refused)).toMatch(/host-offline/);
    // Uncontained servers are spawned detached, out of reach of a group kill: they end by their
    // parent-death signal, or with their stdin. None may be left (the stack would kill them).
    const orphanedAt = Date.now();
    await expect.poll(() => alive(orphans), { timeout: 10_000 }).toEqual([]);
    figures.note('ms until the servers of the SIGKILLed sidecar had all ended', Date.now() - orphanedAt);

    stack.startSidecar();
    await stack.waitLinked();
    await echo('fault');
    const next = await client.callTool({ name: 'echo', arguments: { message: 'old session' } }).catch((e: unknown) => e);
    expect(String(next)).toMatch(/Session ended: .*; initialize a new session.*endedBecause\W+host-offline/);
    await client.close();
  });

  it.each(['SIGTERM', 'SIGKILL'] as const)('worker restarted (%s): the sidecar relinks within 2 s; old sessions fail clearly, new ones work', async (signal) => {
    const old = await connectClient(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!);
    figures.sessions++;
    const pid = stack.serverPids().at(-1)!;
    expect(await old.callTool({ name: 'echo', arguments: { message: 'before' } })).toEqual({ content: [{ type: 'text', text: 'Echo: before' }] });
    const linksBefore = stack.sidecar.err.lines.length;

    const worker = await stack.restartWorker(signal);
    figures.faults++;
    const relinked = await stack.sidecar.err.waitFor(msg('Linked to the worker'), 'the sidecar relinking', { from: linksBefore, timeoutMs: 10_000 });
    const relinkMs = relinked.at - worker.listeningAt;
    figures.note(`relink after ${signal} restart ms`, relinkMs);
    expect(relinkMs).toBeLessThan(LIVENESS_MS);

    await expect.poll(() => alive([pid]), { timeout: 10_000 }).toEqual([]);
    const stale = await old.callTool({ name: 'echo', arguments: { message: 'after' } }).catch((e: unknown) => e);
    figures.calls += 2;
    expect(String(stale)).toMatch(/Session not found: it expired or was closed; initialize a new session/);
    await old.close();
    await stack.waitLinked();
    await echo('echo');
    await expect.poll(async () => (await stack.health()).sessions, { timeout: 5_000 }).toBe(0);
  });
});
