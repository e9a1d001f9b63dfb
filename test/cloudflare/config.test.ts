/**
 * The config on Workers: `SWITCHYARD_WORKER_CONFIG` validated by the same function as every
 * runtime. An invalid one is logged as `path: message` lines and every route answers 500 with a
 * body that names no detail (anyone may read it), until it is fixed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startWorkerdWorker, type WorkerdWorker } from '../support/workerd-worker.ts';

const workers: WorkerdWorker[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

async function answers(config: unknown, bindings?: Record<string, string>) {
  const worker = await startWorkerdWorker(config, bindings === undefined ? {} : { bindings });
  workers.push(worker);
  const responses = await Promise.all(['/healthz', '/mcp', '/link'].map((path) => fetch(`${worker.url}${path}`)));
  return { worker, statuses: responses.map((r) => r.status), bodies: await Promise.all(responses.map((r) => r.text())) };
}

describe('the worker config on workerd', () => {
  it('refuses an invalid config on every route, with every problem in the log and none in the answer', async () => {
    const { worker, statuses, bodies } = await answers({ hosts: [{ 'entity-id': 'laptop', 'public-key': 'nope' }] });
    expect(statuses).toEqual([500, 500, 500]);
    for (const body of bodies) expect(JSON.parse(body)).toEqual({ error: { message: 'The worker config is missing or invalid: see the worker log (wrangler tail)' } });
    const log = worker.lines().join('\n');
    expect(log).toMatch(/SWITCHYARD_WORKER_CONFIG: \d+ problems \(worker config\)\n/);
    expect(log).toMatch(/agents: /);
    expect(log).toMatch(/hosts\[0\]\.public-key: /);
  });

  it('says how to give a config both deployed and under wrangler dev, which reads no secret', async () => {
    const { worker, statuses } = await answers(undefined);
    expect(statuses).toEqual([500, 500, 500]);
    const log = worker.errorLines().join('\n');
    expect(log).toContain('No worker config: set SWITCHYARD_WORKER_CONFIG, deployed with wrangler secret put SWITCHYARD_WORKER_CONFIG given worker.json minified (a secret holds 5 KB; the README has the command)');
    expect(log).toContain('under wrangler dev in a .dev.vars file next to wrangler.jsonc holding the line SWITCHYARD_WORKER_CONFIG=');
  });

  it('refuses audit.file, since Workers have no file system', async () => {
    const { worker, statuses } = await answers({ agents: [], hosts: [], servers: {}, audit: { file: 'audit.jsonl' } });
    expect(statuses).toEqual([500, 500, 500]);
    expect(worker.lines().join('\n')).toContain('audit.file: Workers have no file system');
  });

  it('takes the OAuth keys from the SWITCHYARD_OAUTH_KEYS secret, rotating: the old key listed second still opens its clients, removed it does not', async () => {
    const config = { agents: [], hosts: [], servers: {}, oauth: { 'built-in': {} } };
    const [oldKey, newKey] = [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')];
    const bad = await answers(config, { SWITCHYARD_OAUTH_KEYS: 'not-a-key' });
    expect(bad.statuses).toEqual([500, 500, 500]);
    expect(bad.worker.lines().join('\n')).toContain('SWITCHYARD_OAUTH_KEYS: key 1 is not a key: expected 43 base64url characters');
    expect(bad.worker.lines().join('\n')).not.toContain('not-a-key');

    const started = async (keys: string) => {
      const worker = await startWorkerdWorker(config, { bindings: { SWITCHYARD_OAUTH_KEYS: keys } });
      workers.push(worker);
      return worker;
    };
    const authorize = (url: string, clientId: string) =>
      fetch(`${url}/oauth/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent('https://app.example.com/cb')}&response_type=code&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`);
    const first = await started(oldKey);
    const registered = await fetch(`${first.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Rotated app', redirect_uris: ['https://app.example.com/cb'] }),
    });
    const { client_id } = (await registered.json()) as { client_id: string };
    // Other runtimes' state, each a fresh one: a client id is the registration itself.
    expect((await authorize((await started(`${newKey},${oldKey}`)).url, client_id)).status).toBe(200);
    expect((await authorize((await started(newKey)).url, client_id)).status).toBe(400);
  });
});
