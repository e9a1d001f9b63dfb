/**
 * Deno's connector for Client ID Metadata Documents (`worker/adapters/deno/deno-document-network.ts`)
 * under the real Deno binary, against local servers: a document read over TLS checked against the
 * name the connection was asked for, not the address; a wrong name, a refused port and a silent
 * one each named by kind; and an attempt's deadline that fires once the connection is made leaves
 * it usable (one address's share of the time must not end the exchange).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DENO, REPO } from '../support/paths.ts';
import { ProcessSet } from '../support/processes.ts';

const NAME = 'apps.example.com';
const dir = mkdtempSync(join(tmpdir(), 'switchyard-deno-network-'));
const procs = new ProcessSet();
let https: Server;
let silent: TcpServer;
const ports = { https: 0, refused: 0, silent: 0 };

/** A throwaway CA and a certificate for `NAME` it signed (rustls refuses a CA certificate as a server's own). */
function certificates(): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=Switchyard test CA', '-keyout', 'ca-key.pem', '-out', 'ca.pem');
  openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${NAME}`, '-keyout', 'key.pem', '-out', 'leaf.csr');
  writeFileSync(join(dir, 'leaf.ext'), `basicConstraints=CA:FALSE\nsubjectAltName=DNS:${NAME}\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '1', '-extfile', 'leaf.ext', '-out', 'cert.pem');
}

const listen = (server: Server | TcpServer) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));

beforeAll(async () => {
  certificates();
  https = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url, host: req.headers.host }));
  });
  ports.https = await listen(https);
  silent = createTcpServer(() => {});
  ports.silent = await listen(silent);
  const probe = createTcpServer();
  ports.refused = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
});

afterAll(async () => {
  await procs.stopAll();
  https.closeAllConnections();
  https.close();
  silent.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Deno connector for client metadata documents', () => {
  it('reads over TLS checked against the name, and names a wrong name, a refusal and silence by kind', { timeout: 30_000 }, async () => {
    const proc = procs.spawn(DENO, ['run', '--quiet', '--allow-net', join(REPO, 'test/oauth/deno-document-network-probe.ts'), String(ports.https), String(ports.refused), String(ports.silent), NAME], { DENO_CERT: join(dir, 'ca.pem'), NO_COLOR: '1' });
    expect(await proc.exited).toBe(0);
    const lines = Object.fromEntries(proc.stdout().trim().split('\n').map((line) => {
      const { label, ms: _ms, ...rest } = JSON.parse(line) as { label: string; ms: number };
      return [label, rest];
    }));
    const document = `200 ${JSON.stringify({ path: '/client.json', host: `${NAME}:${ports.https}` })}`;
    expect(lines).toEqual({
      document: { ok: document },
      'other name': { stage: 'tls', detail: expect.stringMatching(/^invalid peer certificate/) },
      refused: { stage: 'connect', detail: 'ConnectionRefused' },
      silent: { error: 'TimeoutError' },
      'deadline after connect': { ok: document },
    });
  });
});
