/**
 * A DNS rebinding attack on the Client ID Metadata Document fetch, for real: a name that resolves
 * to a public address when the worker checks it and to 127.0.0.1 when asked again, a loopback
 * https service waiting there, and the worker under Deno and under Node asked for that client's
 * sign-in page (`dns-rebinding-runner.ts` builds it all in a network and mount namespace of its
 * own). Before, the worker checked the name's addresses and then let `fetch` resolve it again:
 * the second answer took it to the loopback service. Now it reads the document over a connection
 * to the address it checked.
 *
 * Network and mount namespaces, an address on their loopback and a DNS server on port 53 need
 * root; as another user the file is skipped, with that reason in its title.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../support/paths.ts';
import { issueTestCertificates } from '../support/test-certificates.ts';

const IS_ROOT = process.getuid?.() === 0;
const HOST = 'apps.example.com';
const dir = mkdtempSync(join(tmpdir(), 'switchyard-rebinding-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface SignIn {
  status: number;
  /** `public`: the client's own document; `loopback`: the service the rebinding name pointed to. */
  shows: string;
}

function runInNamespaces(): Promise<{ deno?: SignIn; node?: SignIn; hits: { public: number; loopback: number }; error?: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('unshare', ['--net', '--mount', process.execPath, '--import', 'tsx', join(REPO, 'test/oauth/dns-rebinding-runner.ts'), dir], {
      cwd: REPO,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) return reject(new Error(`The runner exited ${code}: ${err.slice(-2000)}${out.slice(-500)}`));
      resolve(JSON.parse(line));
    });
  });
}

describe.skipIf(!IS_ROOT)(`DNS rebinding on the client metadata document fetch${IS_ROOT ? '' : ' (skipped: network namespaces and port 53 need root)'}`, () => {
  it('reads the document from the address the worker checked, under Deno and under Node: the loopback service the name points to next is never reached', { timeout: 60_000 }, async () => {
    issueTestCertificates(dir, HOST);
    const result = await runInNamespaces();
    expect(result.error).toBeUndefined();
    expect(result.deno).toEqual({ status: 200, shows: 'public' });
    expect(result.node).toEqual({ status: 200, shows: 'public' });
    expect(result.hits).toEqual({ public: 2, loopback: 0 });
  });
});
