/**
 * Client ID Metadata Documents fetched for real: a local https server (a certificate from a
 * throwaway CA, `test/support/test-certificates.ts`) plays the client's host. The name resolves
 * (through the injected resolver) to a public address, and the worker's Node network
 * (`cli/node-document-network.ts`, the test's CA trusted besides Node's roots) connects to it,
 * here sent on to 127.0.0.1 with that name for TLS, so the whole fetch runs as in production: the
 * connection to the checked address, TLS, HTTP/1.1, status, size and time limits, redirects, the
 * client_id check and the cache. A resolver answering a loopback or private address is refused
 * before any connection, and one that answers differently the second time (DNS rebinding) is
 * never asked twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeConnectTls } from '../../cli/node-document-network.ts';
import { issueTestCertificates } from '../support/test-certificates.ts';
import { MetadataDocumentClients, type DocumentNetwork } from '../../worker/auth/oauth/clients/metadata-document.ts';

const HOST = 'client.example.com';
const BASE = `https://${HOST}`;
const REDIRECT = 'http://127.0.0.1:43117/callback';

let server: Server;
let port: number;
/** A port nothing listens on: a connection there is refused. */
let closedPort: number;
/** A port that takes connections and never says a word: a TLS handshake there waits for ever. */
let silentPort: number;
const silent = createTcpServer(() => {});
let ca: string;
const hits: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'switchyard-cimd-'));

beforeAll(async () => {
  const issued = issueTestCertificates(dir, HOST);
  ca = issued.ca;
  server = createServer({ key: issued.key, cert: issued.cert }, (req, res) => {
    hits.push(req.url ?? '');
    const doc = (id: string) => JSON.stringify({ client_id: id, client_name: 'Example app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    switch (req.url) {
      case '/client.json':
        return void res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' }).end(doc(`${BASE}/client.json`));
      case '/other-id.json':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(doc(`${BASE}/client.json`));
      case '/big.json':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(`{"pad":"${'x'.repeat(10_000)}"}`);
      case '/chunked.json': {
        // Written in two pieces: Node frames the body with Transfer-Encoding: chunked.
        res.writeHead(200, { 'content-type': 'application/json' });
        const text = doc(`${BASE}/chunked.json`);
        res.write(text.slice(0, 20));
        return void setImmediate(() => res.end(text.slice(20)));
      }
      case '/late.json':
        // Answered after a first address's share of a 2 s deadline has passed.
        return void setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(doc(`${BASE}/late.json`)), 1_200);
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
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentPort = (silent.address() as { port: number }).port;
});

afterAll(async () => {
  silent.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const PUBLIC = '93.184.215.14';
const PUBLIC_TOO = '93.184.215.15';

/**
 * Node's network as the worker has it, with the test's certificate trusted; each connection is
 * noted by the address asked for and sent to the local server (or, for `refused`, to a port where
 * nothing listens, and for `silent`, to one that never answers).
 */
function network(resolve: (hostname: string) => Promise<string[]>, options: { refused?: string[]; silent?: string[] } = {}): DocumentNetwork & { asked: string[] } {
  const asked: string[] = [];
  const connect = nodeConnectTls({ ca });
  return {
    asked,
    resolve,
    connectTls: (o) => {
      asked.push(o.address);
      return connect({ ...o, address: '127.0.0.1', port: options.refused?.includes(o.address) ? closedPort : options.silent?.includes(o.address) ? silentPort : port });
    },
  };
}

const publicResolver = async () => [PUBLIC];

describe('Client ID Metadata Document fetch over real https', () => {
  it('fetches, validates and caches a document over a connection to the address it checked (one request for two lookups)', async () => {
    const net = network(publicResolver);
    const clients = new MetadataDocumentClients({ network: net });
    const before = hits.length;
    const client = await clients.get(`${BASE}/client.json`);
    expect(client).toEqual({ clientId: `${BASE}/client.json`, clientName: 'Example app', redirectUris: [REDIRECT], authMethod: 'none', source: 'metadata-document' });
    await clients.get(`${BASE}/client.json`);
    expect(hits.slice(before)).toEqual(['/client.json']);
    expect(net.asked).toEqual([PUBLIC]);
  });

  it('reads a chunked body', async () => {
    const clients = new MetadataDocumentClients({ network: network(publicResolver) });
    expect((await clients.get(`${BASE}/chunked.json`)).clientId).toBe(`${BASE}/chunked.json`);
  });

  it('refuses a document naming another client_id, one over the size limit, a redirect and a server that does not answer in time', async () => {
    const clients = new MetadataDocumentClients({ network: network(publicResolver), timeoutMs: 500 });
    await expect(clients.get(`${BASE}/other-id.json`)).rejects.toThrow(`The client metadata document names client_id "${BASE}/client.json", not the URL it was fetched from`);
    await expect(clients.get(`${BASE}/big.json`)).rejects.toThrow('The client metadata document is larger than 5120 bytes');
    await expect(clients.get(`${BASE}/moved.json`)).rejects.toThrow('Cannot fetch the client metadata document: it answered 302 (redirects are not followed)');
    await expect(clients.get(`${BASE}/slow.json`)).rejects.toThrow('Cannot fetch the client metadata document: no answer within 500 ms');
  });

  it('refuses a name that resolves to loopback or a private address, without connecting', async () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '::1', '169.254.169.254']) {
      const before = hits.length;
      const net = network(async () => [PUBLIC, address]);
      const clients = new MetadataDocumentClients({ network: net });
      await expect(clients.get(`${BASE}/client.json`)).rejects.toThrow(`Client metadata document refused: "${HOST}" resolves to ${address}, a loopback, private or reserved address`);
      expect(hits.length).toBe(before);
      expect(net.asked).toEqual([]);
    }
  });

  it('asks the resolver once and connects to what it checked, so a name that answers loopback the second time (DNS rebinding) never reaches loopback', async () => {
    const answers = [[PUBLIC], ['127.0.0.1']];
    let lookups = 0;
    const net = network(async () => answers[Math.min(lookups++, 1)]!);
    const clients = new MetadataDocumentClients({ network: net });
    expect((await clients.get(`${BASE}/client.json`)).clientName).toBe('Example app');
    expect(lookups).toBe(1);
    expect(net.asked).toEqual([PUBLIC]);
  });

  it('tries the next checked address when one refuses the connection, at most four, IPv6 and IPv4 in turns, and names the first failure when none takes it', async () => {
    const net = network(async () => [PUBLIC, PUBLIC_TOO], { refused: [PUBLIC] });
    expect((await new MetadataDocumentClients({ network: net }).get(`${BASE}/client.json`)).clientName).toBe('Example app');
    expect(net.asked).toEqual([PUBLIC, PUBLIC_TOO]);
    const none = network(async () => [PUBLIC, PUBLIC_TOO], { refused: [PUBLIC, PUBLIC_TOO] });
    await expect(new MetadataDocumentClients({ network: none }).get(`${BASE}/client.json`)).rejects.toThrow(`Cannot fetch the client metadata document: cannot connect to "${HOST}" port 443 (ECONNREFUSED)`);
    // However many addresses a stranger's DNS names, one sign-in tries four.
    const many = Array.from({ length: 10 }, (_, i) => `93.184.215.${20 + i}`);
    const capped = network(async () => many, { refused: many });
    await expect(new MetadataDocumentClients({ network: capped }).get(`${BASE}/client.json`)).rejects.toThrow('(ECONNREFUSED)');
    expect(capped.asked).toEqual(many.slice(0, 4));
    // IPv6 and IPv4 take turns: four IPv6 addresses without a route do not keep IPv4 out.
    const v6 = Array.from({ length: 4 }, (_, i) => `2606:2800:220:1:248:1893:25c8:${1940 + i}`);
    const dual = network(async () => [...v6, PUBLIC], { refused: v6 });
    expect((await new MetadataDocumentClients({ network: dual }).get(`${BASE}/client.json`)).clientName).toBe('Example app');
    expect(dual.asked).toEqual([v6[0], PUBLIC]);
  });

  it('gives a silent address its share of the deadline, not all of it, and the next address the rest', async () => {
    const net = network(async () => [PUBLIC, PUBLIC_TOO], { silent: [PUBLIC] });
    expect((await new MetadataDocumentClients({ network: net, timeoutMs: 1_000 }).get(`${BASE}/client.json`)).clientName).toBe('Example app');
    expect(net.asked).toEqual([PUBLIC, PUBLIC_TOO]);
    const none = network(async () => [PUBLIC, PUBLIC_TOO], { silent: [PUBLIC], refused: [PUBLIC_TOO] });
    await expect(new MetadataDocumentClients({ network: none, timeoutMs: 1_000 }).get(`${BASE}/client.json`)).rejects.toThrow(`Cannot fetch the client metadata document: cannot connect to "${HOST}" port 443 (no answer within 500 ms)`);
  });

  it('keeps a connection made within an address\'s share open past that share, for the whole deadline', async () => {
    const net = network(async () => [PUBLIC, PUBLIC_TOO]);
    expect((await new MetadataDocumentClients({ network: net, timeoutMs: 2_000 }).get(`${BASE}/late.json`)).clientId).toBe(`${BASE}/late.json`);
    expect(net.asked).toEqual([PUBLIC]);
  });

  it('checks the certificate against the name in the URL, whatever address it connects to', async () => {
    const other = 'other.example.com';
    const clients = new MetadataDocumentClients({ network: network(publicResolver) });
    await expect(clients.get(`https://${other}/client.json`)).rejects.toThrow(`Cannot fetch the client metadata document: the TLS handshake with "${other}" failed (ERR_TLS_CERT_ALTNAME_INVALID)`);
  });
});
