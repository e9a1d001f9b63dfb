/**
 * Client ID Metadata Documents fetched for real: a local https server (a throwaway certificate
 * from openssl) plays the client's host. The name resolves (through the injected resolver) to a
 * public address while the injected fetch connects to 127.0.0.1 with that name for TLS, so the
 * whole fetch runs as in production: TLS, status, size and time limits, redirects, the client_id
 * check and the cache. A resolver answering a loopback or private address is refused before any
 * connection (DNS rebinding).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetadataDocumentClients } from '../../worker/auth/oauth/clients/metadata-document.ts';

const HOST = 'client.example.com';
const BASE = `https://${HOST}`;
const REDIRECT = 'http://127.0.0.1:43117/callback';

let server: Server;
let port: number;
let ca: string;
const hits: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'switchyard-cimd-'));

beforeAll(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=DNS:${HOST}`, '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: ca }, (req, res) => {
    hits.push(req.url ?? '');
    const doc = (id: string) => JSON.stringify({ client_id: id, client_name: 'Example app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    switch (req.url) {
      case '/client.json':
        return void res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' }).end(doc(`${BASE}/client.json`));
      case '/other-id.json':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(doc(`${BASE}/client.json`));
      case '/big.json':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(`{"pad":"${'x'.repeat(10_000)}"}`);
      case '/moved.json':
        return void res.writeHead(302, { location: 'http://127.0.0.1/admin' }).end();
      case '/slow.json':
        return; // never answers
      default:
        return void res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A fetch that reaches the local server for any name, verifying TLS against the test certificate. */
function localHttpsFetch(url: string, init: RequestInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      { host: '127.0.0.1', port, servername: target.hostname, path: target.pathname, method: 'GET', headers: { host: target.host, ...(init.headers as Record<string, string>) }, ca, ...(init.signal ? { signal: init.signal } : {}) },
      (res) => resolve(new Response(Readable.toWeb(res) as ReadableStream, { status: res.statusCode ?? 500, headers: res.headers as Record<string, string> })),
    );
    req.on('error', reject);
    req.end();
  });
}

const publicResolver = async () => ['93.184.215.14'];

describe('Client ID Metadata Document fetch over real https', () => {
  it('fetches, validates and caches a document (one request for two lookups)', async () => {
    const clients = new MetadataDocumentClients({ fetch: localHttpsFetch, resolve: publicResolver });
    const before = hits.length;
    const client = await clients.get(`${BASE}/client.json`);
    expect(client).toEqual({ clientId: `${BASE}/client.json`, clientName: 'Example app', redirectUris: [REDIRECT], authMethod: 'none', source: 'metadata-document' });
    await clients.get(`${BASE}/client.json`);
    expect(hits.slice(before)).toEqual(['/client.json']);
  });

  it('refuses a document naming another client_id, one over the size limit, a redirect and a server that does not answer in time', async () => {
    const clients = new MetadataDocumentClients({ fetch: localHttpsFetch, resolve: publicResolver, timeoutMs: 500 });
    await expect(clients.get(`${BASE}/other-id.json`)).rejects.toThrow(`The client metadata document names client_id "${BASE}/client.json", not the URL it was fetched from`);
    await expect(clients.get(`${BASE}/big.json`)).rejects.toThrow('The client metadata document is larger than 5120 bytes');
    await expect(clients.get(`${BASE}/moved.json`)).rejects.toThrow('Cannot fetch the client metadata document: it answered 302 (redirects are not followed)');
    await expect(clients.get(`${BASE}/slow.json`)).rejects.toThrow('Cannot fetch the client metadata document: no answer within 500 ms');
  });

  it('refuses a name that resolves to loopback or a private address, without connecting', async () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '::1', '169.254.169.254']) {
      const before = hits.length;
      const clients = new MetadataDocumentClients({ fetch: localHttpsFetch, resolve: async () => ['93.184.215.14', address] });
      await expect(clients.get(`${BASE}/client.json`)).rejects.toThrow(`Client metadata document refused: "${HOST}" resolves to ${address}, a loopback, private or reserved address`);
      expect(hits.length).toBe(before);
    }
  });
});
