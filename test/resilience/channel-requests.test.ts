/**
 * Bad channel-open requests sent through a real link to a real sidecar host handler: the sidecar
 * is the CLI, and the worker end is the in-process link harness, whose registry passes a request
 * on unchecked (the production router validates first, so only a compromised or buggy worker
 * could send these; DESIGN §5 says the sidecar must hold even then).
 *
 * Each request must be refused with a channel-open-error carrying a stable reason, start no
 * process (a `marker` server writes a file the moment it starts), and leave the sidecar serving:
 * a canary channel to the echo server calls throughout.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { isFailureReason, WireError } from '../../shared/errors.ts';
import { TrustProfileStore } from '../../sidecar/trust/profile-store.ts';
import { credentialTexts, hostCredential, writeSidecarDir } from '../support/configs.ts';
import { startInProcessWorker, type InProcessWorker } from '../support/node-worker.ts';
import { fixtureServer } from '../support/paths.ts';
import { ProcessSet, waitUntil } from '../support/processes.ts';
import { spawnedPids, startSidecar, type SidecarProcess } from '../support/sidecar-process.ts';
import { Figures, SLOW_MS } from './figures.ts';
import { alive } from './proc-stats.ts';

const ENTITY = 'res-host-a';
const HOST = hostCredential(ENTITY);
const ZERO = `sha256:${'0'.repeat(64)}`;
const figures = new Figures('channel-requests');
const procs = new ProcessSet();
let dir: string;
let marker: string;
let worker: InProcessWorker;
let sidecar: SidecarProcess;
let revisions: Record<'open' | 'boxed', string>;
let canary: { client: Client; stop(): Promise<{ calls: number; errors: string[] }> };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'switchyard-channel-requests-'));
  marker = join(dir, 'marker-started');
  worker = await startInProcessWorker([HOST]);
  writeSidecarDir(join(dir, 'sidecar'), {
    worker: worker.url,
    host: HOST,
    servers: { echo: fixtureServer('raw-echo-server.mjs'), marker: fixtureServer('marker-server.mjs', marker) },
    profiles: { open: {}, boxed: { 'network-capabilities': [] } },
  });
  writeFileSync(join(dir, 'sidecar', 'trust-profiles', 'broken.json'), '{"filesystem-paths": [ not json');
  const store = new TrustProfileStore(join(dir, 'sidecar', 'trust-profiles'));
  revisions = { open: (await store.load('open')).revision, boxed: (await store.load('boxed')).revision };
  sidecar = startSidecar(procs, join(dir, 'sidecar'));
  await waitUntil(() => worker.registry.status()[0]?.linked === true, 'the sidecar linking');
  canary = await startCanary();
  figures.sessions++;
});

afterAll(async () => {
  figures.report();
  await canary?.client.close();
  await procs.stopAll();
  await worker?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const open = (request: unknown) => worker.registry.openChannel(ENTITY, request);
const mcp = (connection: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'mcp', connection, ...extra });

/** A channel to the echo server calling every 20 ms until stopped. */
async function startCanary() {
  const client = new Client({ name: 'canary', version: '1' });
  await client.connect(await open(mcp({ 'server-name': 'echo', session: 'canary' })));
  let stopped = false;
  let calls = 0;
  const errors: string[] = [];
  const loop = (async () => {
    while (!stopped) {
      const payload = `canary-${calls}`;
      const result = await client.callTool({ name: 'echo', arguments: { message: payload } }).catch((e: unknown) => e);
      if (JSON.stringify(result) !== JSON.stringify({ content: [{ type: 'text', text: `Echo: ${payload}` }] })) errors.push(String(result));
      calls++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return { client, stop: async () => ((stopped = true), await loop, { calls, errors }) };
}

/** One call on the canary channel, between phases, so each phase is shown to leave it working. */
async function canaryStillWorks(): Promise<void> {
  expect(await canary.client.callTool({ name: 'echo', arguments: { message: 'between phases' } })).toEqual({ content: [{ type: 'text', text: 'Echo: between phases' }] });
  figures.calls++;
}

/** The known-nasty requests, each with the reason it must be refused with. */
const CASES: Array<[string, unknown, string]> = [
  ['a compiled-policy in the connection', mcp({ 'server-name': 'marker', 'compiled-policy': { backend: 'none' } }), 'invalid-request'],
  ['a compiled-policy beside the connection', mcp({ 'server-name': 'marker' }, { 'compiled-policy': { args: ['--share-net'] } }), 'invalid-request'],
  ['a command line', mcp({ 'server-name': 'marker', command: '/bin/sh', args: ['-c', 'touch /tmp/pwned'] }), 'invalid-request'],
  ['an environment', mcp({ 'server-name': 'marker', env: { LD_PRELOAD: '/tmp/x.so' } }), 'invalid-request'],
  ['server name ../x', mcp({ 'server-name': '../x' }), 'invalid-request'],
  ['server name ../../etc/passwd', mcp({ 'server-name': '../../etc/passwd' }), 'invalid-request'],
  ['server name /bin/sh', mcp({ 'server-name': '/bin/sh' }), 'invalid-request'],
  ['server name with a shell command', mcp({ 'server-name': 'echo; rm -rf /' }), 'invalid-request'],
  ['server name with a NUL', mcp({ 'server-name': 'marker\u0000' }), 'invalid-request'],
  ['an empty server name', mcp({ 'server-name': '' }), 'invalid-request'],
  ['a 1 MB server name', mcp({ 'server-name': 'm'.repeat(1 << 20) }), 'invalid-request'],
  ['a server this host does not have', mcp({ 'server-name': 'nope' }), 'server-not-found'],
  ['a channel type other than mcp', { type: 'chat', connection: { 'server-name': 'marker' } }, 'invalid-request'],
  ['no type', { connection: { 'server-name': 'marker' } }, 'invalid-request'],
  ['a null request', null, 'invalid-request'],
  ['an array request', [mcp({ 'server-name': 'marker' })], 'invalid-request'],
  ['a profile without its revision', mcp({ 'server-name': 'marker', 'trust-profile-ref': 'open' }), 'invalid-request'],
  ['a profile ref ../../etc/passwd', mcp({ 'server-name': 'marker', 'trust-profile-ref': '../../etc/passwd', 'trust-profile-revision': ZERO }), 'invalid-request'],
  ['a profile this host does not have', mcp({ 'server-name': 'marker', 'trust-profile-ref': 'nope', 'trust-profile-revision': ZERO }), 'trust-profile-not-found'],
  ['a stale profile revision', mcp({ 'server-name': 'marker', 'trust-profile-ref': 'open', 'trust-profile-revision': ZERO }), 'trust-profile-stale'],
  ['a profile whose file is broken', mcp({ 'server-name': 'marker', 'trust-profile-ref': 'broken', 'trust-profile-revision': ZERO }), 'launch-failed'],
  ['a file: target', mcp({ 'server-name': 'marker', target: { type: 'http', url: 'file:///etc/passwd' } }), 'invalid-request'],
  ['a local target with a command', mcp({ 'server-name': 'marker', target: { type: 'local', command: '/bin/sh' } }), 'invalid-request'],
  ['a session id with a path', mcp({ 'server-name': 'marker', session: '../../x' }), 'invalid-request'],
  ['an agent name with a newline', mcp({ 'server-name': 'marker', agent: 'alice\n{"level":"error"}' }), 'invalid-request'],
];

describe('channel requests to a real sidecar', { timeout: SLOW_MS }, () => {
  it('the corpus: each refused with its reason, and nothing started', async () => {
    const spawned = spawnedPids(sidecar).length;
    for (const [name, request, reason] of CASES) {
      const error = await open(request).then(() => new Error('opened'), (e: unknown) => e);
      figures.inputs++;
      expect([name, error instanceof WireError ? error.reason : String(error)]).toEqual([name, reason]);
      expect((error as Error).message.length).toBeGreaterThan(0);
    }
    // An HTTP target under a profile that requires containment: no process exists to sandbox.
    const http = await open(mcp({ 'server-name': 'echo', 'trust-profile-ref': 'boxed', 'trust-profile-revision': revisions.boxed, target: { type: 'http', url: 'http://127.0.0.1:9/mcp' } })).catch((e: unknown) => e);
    figures.inputs++;
    expect(http).toMatchObject({ reason: 'unsupported-policy' });
    expect(spawnedPids(sidecar).length).toBe(spawned);
    expect(existsSync(marker)).toBe(false);
    await canaryStillWorks();
  });

  it('150 random requests: every refusal has a stable reason; nothing unexpected starts', async () => {
    const name = fc.oneof(fc.constantFrom('echo', 'nope', '../x', '', 'ECHO', 'echo ', 'e'.repeat(65)), fc.string({ maxLength: 12 }));
    const request = fc.record(
      {
        type: fc.constantFrom('mcp', 'mcp', 'chat', 'MCP', undefined),
        connection: fc.record(
          {
            'server-name': name,
            'trust-profile-ref': fc.constantFrom('open', 'nope', '../open', 'broken'),
            'trust-profile-revision': fc.constantFrom(ZERO, revisions.open, 'sha256:x'),
            'compiled-policy': fc.jsonValue({ maxDepth: 2 }),
            target: fc.oneof(fc.constant({ type: 'local' }), fc.record({ type: fc.constantFrom('http', 'ssh'), url: fc.oneof(fc.webUrl(), fc.string()) })),
            session: fc.oneof(fc.constant('s-1'), fc.string({ maxLength: 10 })),
            command: fc.string(),
          },
          { requiredKeys: ['server-name'] },
        ),
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: ['connection'] },
    );
    await fc.assert(
      fc.asyncProperty(request, async (input) => {
        figures.inputs++;
        try {
          const channel = await open(input);
          figures.sessions++;
          await channel.close(); // a valid request for echo: fine, and closed again
        } catch (error) {
          expect(error).toBeInstanceOf(WireError);
          expect(isFailureReason((error as WireError).reason)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
    expect(existsSync(marker)).toBe(false);
    expect(alive([sidecar.pid])).toEqual([sidecar.pid]);
    await canaryStillWorks();
  });

  it('the canary channel never failed, and nothing is left running', async () => {
    const report = await canary.stop();
    figures.calls += report.calls;
    figures.failures += report.errors.length;
    figures.note('canary calls', report.calls);
    expect(report.errors).toEqual([]);
    expect(report.calls).toBeGreaterThan(0);
    await canary.client.close();
    await expect.poll(() => alive(spawnedPids(sidecar)), { timeout: 10_000 }).toEqual([]);
    expect(worker.registry.status()[0]!.channels).toBe(0);
    for (const text of credentialTexts(HOST)) expect(sidecar.err.text).not.toContain(text);
  });
});
