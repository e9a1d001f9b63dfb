/**
 * The link end to end, with real processes and sockets: a worker (hono + the link route on
 * `@hono/node-server`, 127.0.0.1, port 0) in this process, a sidecar as a child process built by
 * the production composition, and real MCP servers behind it. Bounds on how fast a failure is
 * noticed are liveness bounds (generous), not performance assertions; the times are printed.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { reasonOf } from '../../shared/errors.ts';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { closeInfoOf } from '../../shared/channel-transport.ts';
import { ExecutorTargetRouter } from '../../worker/routing/executor-target-router.ts';
import { credentialTexts, hostCredential, writeSidecarDir, type HostCredential } from '../support/configs.ts';
import { startInProcessWorker, type InProcessWorker } from '../support/node-worker.ts';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { isAlive, ProcessSet, runsFile, waitFor, waitUntil } from '../support/processes.ts';
import { childrenOf } from '../support/descriptors.ts';
import { startSidecar, type SidecarProcess } from '../support/sidecar-process.ts';
import { cgroupPlacement } from '../../sidecar/process/cgroup-placement.ts';

const ENTITY = 'alice-laptop';
const HOST = hostCredential(ENTITY);
/** Liveness bounds: far above the expected ~10 ms, far below the 25 s keepalive deadline. */
const NOTICE_BOUND_MS = 5_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A sidecar config dir for `worker`, presenting `host` (the worker knows only `HOST`). */
function configDir(worker: string, host: HostCredential, sidecar: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-link-'));
  // 100 channels at once below: more server processes than a host runs by default.
  const limits = { 'server-processes-per-agent': 128, 'server-processes': 128 };
  const deaf = { command: process.execPath, args: fixtureServer('hang-server.mjs', '--outlive-stdin').args };
  // As `npx` runs a server: the real one is the launch's child (the trailing `:` keeps sh from exec'ing it).
  const wrapped = { command: '/bin/sh', args: ['-c', `${[process.execPath, ...deaf.args].map((arg) => `'${arg}'`).join(' ')}; :`] };
  writeSidecarDir(dir, { worker, host, servers: { everything: everythingServer(), cat: { command: '/bin/cat' }, deaf, wrapped }, sidecar: { limits, ...sidecar } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `router()` is built on the running worker's registry, so it follows the worker across a restart. */
async function setup(presented = HOST, sidecarConfig: Record<string, unknown> = {}): Promise<{ worker: InProcessWorker; sidecar: SidecarProcess; router: () => ExecutorTargetRouter }> {
  const worker = await startInProcessWorker([HOST]);
  cleanups.push(() => worker.stop());
  const procs = new ProcessSet();
  const sidecar = startSidecar(procs, configDir(worker.url, presented, sidecarConfig));
  cleanups.push(() => procs.stopAll());
  return { worker, sidecar, router: () => new ExecutorTargetRouter({ registry: worker.registry }) };
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function linked(worker: InProcessWorker): Promise<void> {
  await within(
    (async () => {
      while (!worker.registry.status().some((s) => s['entity-id'] === ENTITY && s.linked)) await new Promise((r) => setTimeout(r, 20));
    })(),
    15_000,
    'the sidecar linking',
  );
}

const hostDescriptor = { type: 'user-computer-profile', 'entity-id': ENTITY, target: { type: 'local' } } as const;

async function connect(router: ExecutorTargetRouter, server: string): Promise<{ client: Client; channel: Transport }> {
  const channel = await router.open(hostDescriptor, { 'server-name': server, session: `s-${Math.random().toString(36).slice(2)}`, agent: 'tester' });
  const client = new Client({ name: 'agent', version: '1.0.0' });
  cleanups.push(() => client.close());
  await client.connect(channel);
  return { client, channel };
}

/**
 * Starts a 30 s tool call and resolves once its first progress notification arrived: mid-call.
 * The call's outcome (result or error) is wrapped, so awaiting this does not await the call.
 */
async function startLongCall(client: Client): Promise<{ outcome: Promise<unknown> }> {
  let progressed!: () => void;
  const firstProgress = new Promise<void>((resolve) => (progressed = resolve));
  const call = client
    .callTool({ name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }, undefined, { onprogress: () => progressed(), timeout: 60_000 })
    .then(
      (r) => r,
      (e: unknown) => e,
    );
  await within(firstProgress, 10_000, 'the first progress notification');
  return { outcome: call };
}

describe('link end to end (worker in process, sidecar as a process)', () => {
  it('Send_Receive_PumpsMessagesOverChannel', async () => {
    const { worker, router } = await setup();
    await linked(worker);
    const { client } = await connect(router(), 'everything');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
    expect((await client.callTool({ name: 'echo', arguments: { message: 'over the link' } })).content).toEqual([{ type: 'text', text: 'Echo: over the link' }]);
    let progress = 0;
    const result = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 } }, undefined, { onprogress: () => progress++ });
    expect(result.content).toEqual([{ type: 'text', text: expect.stringContaining('Long running operation completed') }]);
    expect(progress).toBeGreaterThan(0); // the SDK may drop the last one: it runs notification handlers a microtask after a response that arrives in the same read
  });

  it('kill the worker mid-call: the sidecar side fails at once, ends the server, and relinks when the worker is back', async () => {
    const { worker, sidecar, router } = await setup();
    await linked(worker);
    const { client } = await connect(router(), 'everything');
    const { outcome } = await startLongCall(client);
    const pid = sidecar.serverPids()[0]!;
    expect(isAlive(pid)).toBe(true);
    const killedAt = Date.now();
    await worker.kill();
    await sidecar.waitForLine((l) => l.msg === 'Link to worker dropped', 'the link dropping', NOTICE_BOUND_MS);
    console.info(`sidecar noticed the dead worker after ${Date.now() - killedAt} ms`);
    const closed = await sidecar.waitForLine((l) => l.msg === 'Server channel closed', 'the channel failing', NOTICE_BOUND_MS);
    expect(closed.reason).toBe('host-offline');
    await within(
      (async () => {
        while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
      })(),
      NOTICE_BOUND_MS,
      'the server process ending',
    );
    expect(await outcome).toBeInstanceOf(Error); // the worker side of the call died with the worker

    await worker.restart();
    await linked(worker);
    const again = await connect(router(), 'everything');
    expect((await again.client.callTool({ name: 'echo', arguments: { message: 'relinked' } })).content).toEqual([{ type: 'text', text: 'Echo: relinked' }]);
  });

  it('kill the sidecar (SIGKILL) mid-call: the caller gets host-offline', async () => {
    const { worker, sidecar, router } = await setup();
    await linked(worker);
    const { client, channel } = await connect(router(), 'everything');
    const errors: unknown[] = [];
    client.onerror = (error) => errors.push(error);
    const channelClosed = closeInfoOf(channel);
    const { outcome } = await startLongCall(client);
    const killedAt = Date.now();
    sidecar.process.child.kill('SIGKILL');
    const info = await within(channelClosed, NOTICE_BOUND_MS, 'host-offline reaching the caller');
    console.info(`caller got host-offline ${Date.now() - killedAt} ms after the sidecar was killed`);
    expect(info.reason).toBe('host-offline');
    expect(errors.map(reasonOf)).toContain('host-offline');
    expect(await within(outcome, NOTICE_BOUND_MS, 'the pending call failing')).toBeInstanceOf(Error);
    await expect(router().open(hostDescriptor, { 'server-name': 'everything' })).rejects.toMatchObject({ reason: 'host-offline' });
  });

  it('kill the sidecar (SIGKILL): an ordinary server that outlives its stdin ends with it all the same', async () => {
    const { worker, sidecar, router } = await setup();
    await linked(worker);
    await router().open(hostDescriptor, { 'server-name': 'deaf', session: 's-deaf', agent: 'tester' });
    const pid = await waitFor(() => sidecar.serverPids()[0], 'the server to be spawned');
    // Past setpriv and prlimit, node itself: a launch that failed in them would end by itself.
    await waitUntil(() => runsFile(pid, process.execPath), 'the server to run node', NOTICE_BOUND_MS);
    sidecar.process.child.kill('SIGKILL');
    await waitUntil(() => !isAlive(pid), 'the server to end with the sidecar', NOTICE_BOUND_MS);
  });

  it('kill the sidecar (SIGKILL): a server a wrapper started (as npx does) ends with it too, through its group', async () => {
    const { worker, sidecar, router } = await setup();
    await linked(worker);
    await router().open(hostDescriptor, { 'server-name': 'wrapped', session: 's-wrapped', agent: 'tester' });
    const wrapper = await waitFor(() => sidecar.serverPids()[0], 'the wrapper to be spawned');
    const server = await waitFor(() => childrenOf(wrapper).find((pid) => runsFile(pid, process.execPath)), 'the wrapper\'s node server to run');
    sidecar.process.child.kill('SIGKILL');
    // The wrapper has the parent-death signal; its child, which ignores its stdin's end, only the watchdog.
    await waitUntil(() => !isAlive(server) && !isAlive(wrapper), 'the wrapped server to end with the sidecar', NOTICE_BOUND_MS);
  });

  // CI runs as root, where the sidecar may make cgroups; elsewhere doctor says why it may not.
  it.skipIf(process.getuid?.() !== 0)('runs each server in a cgroup of its own under the sidecar\'s, with its task limit and CPU cap, under its agent\'s with the agent\'s limits, and removes both when the server ends (skipped unless root)', async () => {
    const { worker, sidecar, router } = await setup(HOST, { limits: { 'server-processes-per-agent': 128, 'server-processes': 128, 'tasks-per-server': 300, 'cpus-per-server': 1.5, 'tasks-per-agent': 900, 'memory-per-agent-mib': 3000 } });
    await linked(worker);
    const channel = await router().open(hostDescriptor, { 'server-name': 'everything', session: 's-cgroup', agent: 'tester' });
    const pid = await waitFor(() => sidecar.serverPids()[0], 'the server to be spawned');
    await waitUntil(() => runsFile(pid, process.execPath), 'the server to run node', NOTICE_BOUND_MS);
    const placement = cgroupPlacement(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
    const dirs = [placement.unified, placement.pidsV1].filter((dir): dir is string => dir !== undefined);
    expect(dirs.length).toBeGreaterThan(0);
    for (const dir of dirs) expect(dir).toMatch(new RegExp(`/switchyard-${sidecar.process.child.pid}/agent-tester/\\d+$`));
    const limited = dirs.filter((dir) => existsSync(join(dir, 'pids.max')));
    expect(limited.map((dir) => readFileSync(join(dir, 'pids.max'), 'utf8').trim())).toEqual(['300']);
    // The agent's own limits, of all its servers together, on its cgroup above the server's.
    expect(limited.map((dir) => readFileSync(join(dirname(dir), 'pids.max'), 'utf8').trim())).toEqual(['900']);
    const memory = placement.memoryV1 !== undefined ? join(dirname(placement.memoryV1), 'memory.limit_in_bytes') : join(dirname(placement.unified!), 'memory.max');
    if (existsSync(memory)) expect(readFileSync(memory, 'utf8').trim()).toBe(String(3000 * 1024 * 1024));
    // 1.5 CPUs: 150 ms of every 100 ms period, in a v1 cpu hierarchy or in the unified one, where the host has a cpu controller.
    const cpu = placement.cpuV1 ?? (existsSync(join(placement.unified ?? '/nonexistent', 'cpu.max')) ? placement.unified : undefined);
    if (cpu !== undefined) {
      expect(cpu).toMatch(new RegExp(`/switchyard-${sidecar.process.child.pid}/agent-tester/\\d+$`));
      const cap = placement.cpuV1 !== undefined ? readFileSync(join(cpu, 'cpu.cfs_quota_us'), 'utf8').trim() : readFileSync(join(cpu, 'cpu.max'), 'utf8').trim();
      expect(['150000', '150000 100000']).toContain(cap);
    }
    await channel.close();
    // Its agent's cgroup goes with it, the agent's last server.
    const removed = [...dirs, ...(cpu !== undefined ? [cpu] : [])].flatMap((dir) => [dir, dirname(dir)]);
    await waitUntil(() => removed.every((dir) => !existsSync(dir)), 'the server\'s cgroup and its agent\'s removed', NOTICE_BOUND_MS);
  });

  it('refuses a wrong host key and logs it on both sides, with what to do and without the key, and on the host\'s audit record', async () => {
    const wrong = hostCredential(ENTITY);
    const { worker, sidecar } = await setup(wrong, { audit: {} });
    const line = await sidecar.waitForLine((l) => String(l.msg).includes('refused the link'), 'the refusal', 10_000);
    expect(line.msg).toBe(`Worker refused the link of host "${ENTITY}": The worker does not know this host's key (entity "${ENTITY}"): if this host made a new key, give the worker config the line \`sidecar host-entry\` prints on it (switchyard host add --rekey)`);
    await sidecar.waitForLine((l) => l.msg === 'Dialling the worker again', 'a retry', 10_000);
    for (const text of credentialTexts(wrong)) {
      expect(sidecar.process.stderr()).not.toContain(text);
      expect(JSON.stringify(worker.logs)).not.toContain(text);
    }
    expect(worker.logs.some((l) => l.msg === 'Refused a host link' && l['entity-id'] === ENTITY && l.reason === 'unauthorized')).toBe(true);
    // The workstation's own record: each refusal, with the check the worker says it failed.
    const audit = await sidecar.waitForLine((l) => l.msg === 'audit' && l.event === 'link', 'the refusal on the host\'s audit record', 10_000);
    expect(audit).toMatchObject({ level: 'warn', host: ENTITY, decision: 'refused', outcome: 'error', reason: 'unauthorized', check: 'bad-signature' });
    expect(worker.registry.status()).toEqual([{ 'entity-id': ENTITY, linked: false, since: null, channels: 0, roundTripMs: null }]);
  });

  it('100 concurrent channels over one link: every response reaches its own caller', async () => {
    const { worker, sidecar, router } = await setup();
    await linked(worker);
    const results = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const channel = await router().open(hostDescriptor, { 'server-name': 'cat', session: `s-${i}` });
        const sent: JSONRPCMessage = { jsonrpc: '2.0', id: i, method: 'echo', params: { payload: `payload-${i}-${Math.random()}` } };
        const reply = new Promise<JSONRPCMessage>((resolve) => (channel.onmessage = resolve));
        channel.start();
        await channel.send(sent);
        const received = await reply;
        await channel.close();
        return { sent, received };
      }),
    );
    for (const { sent, received } of results) expect(received).toEqual(sent);
    expect(worker.registry.status()[0]!.channels).toBe(0);
    expect(sidecar.serverPids()).toHaveLength(100);
    await within(
      (async () => {
        while (sidecar.serverPids().some(isAlive)) await new Promise((r) => setTimeout(r, 50));
      })(),
      15_000,
      'every cat process ending',
    );
  });
});
