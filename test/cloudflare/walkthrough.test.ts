/**
 * What a new user of the Cloudflare deployment meets first, on the Workers bundle under workerd:
 * a config with `public-url` alone serves agents that use that URL, on the edge and in the
 * objects; doctor's probe learns what the worker expects of its host from the `HostLink` object;
 * ordinary traffic is logged at its own level, not as errors; a missing config says how to run
 * the worker locally.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { probeLink } from '../../cli/doctor-link.ts';
import { loadHostKey } from '../../sidecar/link/host-key.ts';
import { agentEntry, hostCredential, randomCredential, workerHostEntry } from '../support/configs.ts';
import { startWorkerdWorker, type WorkerdWorker } from '../support/workerd-worker.ts';
import { TEST_SCRATCH_ENV } from '../global-setup.ts';

const workers: WorkerdWorker[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

async function started(config: unknown, options: Parameters<typeof startWorkerdWorker>[1] = {}): Promise<WorkerdWorker> {
  const worker = await startWorkerdWorker(config, options);
  workers.push(worker);
  return worker;
}

/** A request with the `Host` header a client of the deployed worker sends (fetch would send the loopback one). */
function send(worker: WorkerdWorker, path: string, options: { method?: string; headers: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: worker.port, path, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const PUBLIC_HOST = 'switchyard.me.workers.dev';
const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

describe('the Workers bundle as a new user deploys it', () => {
  it('serves agents on the host of public-url when allowed-hosts does not list it', async () => {
    const token = randomCredential('walk-agent');
    const worker = await started({ agents: [agentEntry({ name: 'alice', token, servers: [] })], hosts: [], servers: {}, 'public-url': `https://${PUBLIC_HOST}` });
    const headers = {
      host: PUBLIC_HOST,
      origin: `https://${PUBLIC_HOST}`,
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    // A legacy initialize passes the edge's guard and then the AgentSession object's.
    const initialize = await send(worker, '/mcp', { method: 'POST', headers, body: INITIALIZE });
    expect(initialize.status, initialize.body).toBe(200);
    const health = await send(worker, '/healthz', { headers: { host: PUBLIC_HOST } });
    expect(health.status, health.body).toBe(200);
    const foreign = await send(worker, '/mcp', { method: 'POST', headers: { ...headers, host: 'evil.example' }, body: INITIALIZE });
    expect(foreign.status).toBe(403);
  }, 60_000);

  it('tells doctor\'s probe what it expects of the host, from the HostLink object', async () => {
    const host = hostCredential('walk-laptop');
    const revision = `sha256:${'a'.repeat(64)}`;
    const worker = await started({
      agents: [agentEntry({ name: 'alice', token: randomCredential('walk-agent'), servers: ['files'], 'trust-context': { 'trust-profile-ref': 'workspace', 'trust-profile-revision': revision } })],
      hosts: [workerHostEntry(host)],
      servers: { files: { executor: { type: 'user-computer-profile', 'entity-id': host.entityId, target: { type: 'local' } } } },
    });
    const dir = mkdtempSync(join(process.env[TEST_SCRATCH_ENV] ?? tmpdir(), 'switchyard-walk-'));
    writeFileSync(join(dir, 'host.key'), host.privateKeyPem, { mode: 0o600 });
    const probe = await probeLink({ worker: worker.url, entityId: host.entityId, key: await loadHostKey(join(dir, 'host.key')) });
    expect(probe).toMatchObject({ ok: true, expects: { servers: ['files'], 'trust-profiles': [{ ref: 'workspace', revision, agents: ['alice'] }] } });
  }, 60_000);

  it('logs ordinary traffic at its own level: info lines and allowed calls are not written as errors', async () => {
    const token = randomCredential('walk-agent');
    const worker = await started({ agents: [agentEntry({ name: 'alice', token, servers: [] })], hosts: [], servers: {} });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const allowed = await fetch(`${worker.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}` }, body: INITIALIZE });
    expect(allowed.status).toBe(200);
    await allowed.text();
    const refused = await fetch(`${worker.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer wrong' }, body: INITIALIZE });
    expect(refused.status).toBe(401);
    await refused.text();
    const levelOf = (line: string) => (JSON.parse(line.slice(line.indexOf('{'))) as { level?: string; msg?: string });
    const json = (lines: string[]) => lines.filter((line) => line.includes('{"time"')).map(levelOf);
    // The refused credential's audit line is a warning; the session the allowed one opened, news.
    await expect.poll(() => json(worker.errorLines()).some((l) => l.level === 'warn' && l.msg === 'audit')).toBe(true);
    await expect.poll(() => json(worker.lines()).some((l) => l.level === 'info' && l.msg === 'Agent session opened')).toBe(true);
    expect(json(worker.errorLines()).filter((l) => l.level !== 'warn' && l.level !== 'error')).toEqual([]);
  }, 60_000);
});
