/**
 * The built-in OAuth server's state under Deno: the worker refuses to start without a state dir
 * (exit 2, saying what to set), and with one it keeps `oauth-state.json` there, mode 0600, holding
 * its server key (which seals registered client ids) but no client and no client secret, across a
 * restart.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DENO } from '../support/paths.ts';
import { ProcessSet, waitUntil } from '../support/processes.ts';
import { startWorkerProcess } from '../support/worker-process.ts';
import { randomBytes } from 'node:crypto';

const procs = new ProcessSet();
const dir = mkdtempSync(join(tmpdir(), 'switchyard-deno-oauth-'));
afterAll(async () => {
  await procs.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

const CONFIG = { agents: [], servers: {}, oauth: { 'built-in': {} } };

describe('OAuth state under Deno', () => {
  it('refuses to start the built-in server without a state dir, saying what to set', async () => {
    const proc = procs.spawn(DENO, ['run', '--allow-net', '--allow-read', '--allow-env', 'worker/adapters/deno/deno-worker.ts'], { SWITCHYARD_WORKER_CONFIG: JSON.stringify(CONFIG), SWITCHYARD_STATE_DIR: '' });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toContain('oauth.built-in needs a state dir for clients, grants and tokens: set SWITCHYARD_STATE_DIR');
  });

  it('keeps the key that seals client ids in a 0600 file, without the client or its secret, so a client registered before a restart still works', async () => {
    const stateDir = join(dir, 'state');
    const first = await startWorkerProcess(procs, CONFIG, { dir, stateDir });
    const registered = await fetch(`${first.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Confidential app', redirect_uris: ['https://app.example.com/cb'] }),
    });
    expect(registered.status).toBe(201);
    const { client_id, client_secret } = (await registered.json()) as { client_id: string; client_secret: string };
    expect(client_secret).toMatch(/^sycs_/);
    const file = join(stateDir, 'oauth-state.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(Object.keys((JSON.parse(text) as { records: object }).records)).toEqual(['key:hmac-sha256']);
    expect(text).not.toContain(client_id);
    expect(text).not.toContain(client_secret);
    await first.process.stop();

    const second = await startWorkerProcess(procs, CONFIG, { dir, stateDir });
    const authorize = await fetch(`${second.url}/oauth/authorize?client_id=${client_id}&redirect_uri=${encodeURIComponent('https://app.example.com/cb')}&response_type=code&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`);
    expect(authorize.status).toBe(200);
    expect(await authorize.text()).toContain('Confidential app');
  });

  it('with SWITCHYARD_OAUTH_KEYS keeps no key in the state, and rotates: a client sealed by a key listed second still works, one removed ends it', async () => {
    const stateDir = join(dir, 'state-keys');
    const [oldKey, newKey] = [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')];
    const redirect = encodeURIComponent('https://app.example.com/cb');
    const authorize = (url: string, clientId: string) =>
      fetch(`${url}/oauth/authorize?client_id=${clientId}&redirect_uri=${redirect}&response_type=code&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`);

    const first = await startWorkerProcess(procs, CONFIG, { dir, stateDir, env: { SWITCHYARD_OAUTH_KEYS: oldKey } });
    // Its first line says where the keys come from (without them it would be the state's own).
    await waitUntil(() => first.process.stderr().includes('"msg":"Worker listening"'), 'the worker to say what it runs', 10_000);
    expect(first.process.stderr()).toContain('"oauthKeys":"SWITCHYARD_OAUTH_KEYS"');
    const registered = await fetch(`${first.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Rotated app', redirect_uris: ['https://app.example.com/cb'] }),
    });
    const { client_id } = (await registered.json()) as { client_id: string };
    expect((await authorize(first.url, client_id)).status).toBe(200);
    await first.process.stop();
    // Nothing was written: neither a key nor the client.
    expect(() => readFileSync(join(stateDir, 'oauth-state.json'), 'utf8')).toThrow(/ENOENT/);

    const rotating = await startWorkerProcess(procs, CONFIG, { dir, stateDir, env: { SWITCHYARD_OAUTH_KEYS: `${newKey},${oldKey}` } });
    expect((await authorize(rotating.url, client_id)).status).toBe(200);
    await rotating.process.stop();

    const rotated = await startWorkerProcess(procs, CONFIG, { dir, stateDir, env: { SWITCHYARD_OAUTH_KEYS: newKey } });
    const refused = await authorize(rotated.url, client_id);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('or under a key it no longer holds): register the client again');
    await rotated.process.stop();
  });

  it('refuses to start with a malformed SWITCHYARD_OAUTH_KEYS, naming the key by its place, never quoting it', async () => {
    const secret = 'not-a-key-at-all';
    const proc = procs.spawn(DENO, ['run', '--allow-net', '--allow-read', '--allow-write', '--allow-env', 'worker/adapters/deno/deno-worker.ts'], {
      SWITCHYARD_WORKER_CONFIG: JSON.stringify(CONFIG),
      SWITCHYARD_STATE_DIR: join(dir, 'state-bad-keys'),
      SWITCHYARD_OAUTH_KEYS: secret,
    });
    expect(await proc.exited).toBe(2);
    expect(proc.stderr()).toContain('SWITCHYARD_OAUTH_KEYS: key 1 is not a key: expected 43 base64url characters (32 random bytes), comma-separated');
    expect(proc.stderr()).not.toContain(secret);
  });
});
