/**
 * Deno's connector for Client ID Metadata Documents (`worker/adapters/deno/deno-document-network.ts`)
 * under the real Deno binary, against local servers: a document read over TLS checked against the
 * name the connection was asked for, not the address; a wrong name, a refused port and a silent
 * one each named by kind; header bytes read as ISO-8859-1 (Deno's 'latin1' decoder is
 * windows-1252); and an attempt's deadline that fires once the connection is made leaves
 * it usable (one address's share of the time must not end the exchange).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect as connectTcp } from 'node:net';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DENO, REPO } from '../support/paths.ts';
import { ProcessSet } from '../support/processes.ts';
import { issueTestCertificates } from '../support/test-certificates.ts';

const NAME = 'apps.example.com';
const dir = mkdtempSync(join(tmpdir(), 'switchyard-deno-network-'));
const procs = new ProcessSet();
let https: Server;
let silent: TcpServer;
let proxy: HttpServer;
const ports = { https: 0, refused: 0, silent: 0, proxy: 0 };
/** What the proxy was asked: each CONNECT's target and Proxy-Authorization. */
const connects: Array<{ target: string; authorization: string | undefined }> = [];

const listen = (server: Server | TcpServer | HttpServer) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));

beforeAll(async () => {
  const { key, cert } = issueTestCertificates(dir, NAME);
  https = createServer({ key, cert }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url, host: req.headers.host }));
  });
  ports.https = await listen(https);
  silent = createTcpServer(() => {});
  ports.silent = await listen(silent);
  // An egress proxy that tunnels every CONNECT to the https server, whatever it names.
  proxy = createHttpServer((_req, res) => res.writeHead(405).end());
  proxy.on('connect', (req, socket, head) => {
    connects.push({ target: req.url ?? '', authorization: req.headers['proxy-authorization'] });
    const upstream = connectTcp(ports.https, '127.0.0.1', () => {
      socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  ports.proxy = await listen(proxy);
  const probe = createTcpServer();
  ports.refused = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
});

afterAll(async () => {
  await procs.stopAll();
  https.closeAllConnections();
  https.close();
  proxy.closeAllConnections();
  proxy.close();
  silent.close();
  rmSync(dir, { recursive: true, force: true });
});

const PROBE = join(REPO, 'test/oauth/deno-document-network-probe.ts');

describe('the Deno connector for client metadata documents', () => {
  it('reads over TLS checked against the name, and names a wrong name, a refusal and silence by kind', { timeout: 30_000 }, async () => {
    const proc = procs.spawn(DENO, ['run', '--quiet', '--allow-net', '--allow-env', PROBE, String(ports.https), String(ports.refused), String(ports.silent), NAME], { DENO_CERT: join(dir, 'ca.pem'), NO_COLOR: '1', HTTPS_PROXY: '', https_proxy: '' });
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
      'header bytes': { ok: [0x80, 0x9f, 0xe9] },
      'deadline after connect': { ok: document },
    });
  });

  it('goes through HTTPS_PROXY as Deno\'s fetch would, asking CONNECT for the checked address with the proxy\'s credentials', { timeout: 30_000 }, async () => {
    const proc = procs.spawn(DENO, ['run', '--quiet', '--allow-net', '--allow-env', PROBE, String(ports.https), String(ports.refused), String(ports.silent), NAME, 'through-proxy'], {
      DENO_CERT: join(dir, 'ca.pem'),
      NO_COLOR: '1',
      HTTPS_PROXY: `http://probe:s%3Acret@127.0.0.1:${ports.proxy}`,
      NO_PROXY: 'other.example.com',
    });
    expect(await proc.exited).toBe(0);
    const { label, ok } = JSON.parse(proc.stdout().trim()) as { label: string; ok: string };
    expect({ label, ok }).toEqual({ label: 'document', ok: `200 ${JSON.stringify({ path: '/client.json', host: `${NAME}:${ports.https}` })}` });
    expect(connects).toEqual([{ target: `127.0.0.1:${ports.https}`, authorization: `Basic ${Buffer.from('probe:s:cret').toString('base64')}` }]);
  });
});
