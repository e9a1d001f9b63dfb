/**
 * The shipped `wrangler.jsonc` is paste-ready: wrangler itself (`unstable_startWorker`, what
 * `wrangler dev` runs) starts the built bundle from it, with both Durable Object bindings and the
 * migration as written, and the config given as the secret would be. A host's state comes from its
 * `HostLink` object and an `initialize` reaches an `AgentSession` object, which takes a slot from
 * the agent's `AgentSlots` object and asks the host's.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { unstable_startWorker } from 'wrangler';
// @ts-expect-error plain JS build script
import { buildCloudflareWorker } from '../../scripts/build.mjs';
// @ts-expect-error plain JS build script
import { wranglerTemplate } from '../../scripts/wrangler-template.mjs';
import { agentEntry, hostCredential, randomCredential, tokenSha256, workerHostEntry } from '../support/configs.ts';

// No usage metrics from a test run (the machine has no internet beyond the npm registry anyway).
process.env.WRANGLER_SEND_METRICS = 'false';
const dir = mkdtempSync(join(tmpdir(), 'switchyard-wrangler-'));
const WRANGLER = join(import.meta.dirname, '..', '..', 'node_modules', 'wrangler', 'bin', 'wrangler.js');
let worker: Awaited<ReturnType<typeof unstable_startWorker>> | undefined;

afterAll(async () => {
  await worker?.dispose().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

describe('dist/cloudflare/wrangler.jsonc', () => {
  it('tells that public-url alone lets sidecars and agents use the worker', () => {
    const header = (wranglerTemplate() as string).split('\n').filter((line) => line.startsWith('//')).join('\n');
    expect(header).toContain('"public-url"');
    expect(header).toMatch(/that alone lets sidecars and agents use it/);
    expect(header).not.toMatch(/"public-url" or "allowed-hosts" must/);
  });

  it('has wrangler deploy upload the bundle as built, without bundling it again', async () => {
    const built = join(dir, 'deploy');
    await buildCloudflareWorker({ minify: true, outdir: built });
    const uploaded = join(dir, 'uploaded');
    // --dry-run writes what it would upload and needs no network or account.
    await promisify(execFile)(process.execPath, [WRANGLER, 'deploy', '--dry-run', '--outdir', uploaded], { cwd: built, env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } });
    expect(readFileSync(join(uploaded, 'worker.js')).equals(readFileSync(join(built, 'worker.js')))).toBe(true);
  }, 120_000);

  it('runs the bundle under wrangler with its Durable Object classes bound', async () => {
    await buildCloudflareWorker({ minify: true, outdir: dir });
    const template = readFileSync(join(dir, 'wrangler.jsonc'), 'utf8');
    expect(template).toContain('{ "tag": "v1", "new_sqlite_classes": ["HostLink", "AgentSession", "OAuthState"] }');
    // A class added later comes in a tag of its own: a deployed worker has applied v1 as it was.
    expect(template).toContain('{ "tag": "v2", "new_sqlite_classes": ["AgentSlots"] }');

    const host = hostCredential('wrangler-host');
    const token = randomCredential('wrangler-agent');
    const admin = randomCredential('wrangler-admin');
    const config = {
      agents: [agentEntry({ name: 'alice', token, servers: ['files'] })],
      hosts: [workerHostEntry(host)],
      servers: { files: { executor: { type: 'reverse-http', 'entity-id': host.entityId } } },
      'admin-token-sha256': tokenSha256(admin),
    };
    worker = await unstable_startWorker({
      config: join(dir, 'wrangler.jsonc'),
      bindings: { SWITCHYARD_WORKER_CONFIG: { type: 'plain_text', value: JSON.stringify(config) } },
      dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, logLevel: 'warn' },
    } as Parameters<typeof unstable_startWorker>[0]);
    await worker.ready;
    const url = await worker.url;

    const health = await fetch(new URL('/healthz', url), { headers: { authorization: `Bearer ${admin}` } });
    expect(await health.json()).toMatchObject({ hosts: [{ 'entity-id': host.entityId, linked: false }], servers: [{ name: 'files', state: 'host-offline' }] });

    const initialize = await fetch(new URL('/servers/files/mcp', url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    // Admitted by alice's AgentSlots object first, then refused by the host's.
    expect(initialize.status).toBe(503);
    expect((await initialize.json()).error.data.reason).toBe('host-offline');
  }, 120_000);
});
