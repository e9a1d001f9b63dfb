/**
 * Runs inside its own network and mount namespaces (`unshare --net --mount`, as root; see
 * `dns-rebinding.test.ts`): a DNS rebinding attack on the Client ID Metadata Document fetch, with
 * nothing faked but the internet.
 *
 * - A "public" address (93.184.215.14) on this namespace's loopback interface, where the client's
 *   https server answers with its document.
 * - A loopback https service (127.0.0.1:443) with a document of its own: what an attacker wants
 *   the worker to reach.
 * - A DNS server on 127.0.0.1:53 (this namespace's `/etc/resolv.conf`, bind-mounted) that answers
 *   the client's name with the public address the first time and with 127.0.0.1 every time after,
 *   with a TTL of 0: a rebinding name.
 * - The worker, under Deno (the production launcher) and under Node (its production OAuth
 *   runtime), asked for the sign-in page of a client whose `client_id` is a URL under that name.
 *
 * Prints one JSON line: per runtime, the sign-in page's status and which document it showed, and
 * how many requests each https service saw.
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { nodeOAuthRuntime } from '../../cli/oauth-state.ts';
import { startDenoWorker } from '../../cli/deno-worker-process.ts';
import { startNodeWorker } from '../../worker/adapters/node/node-worker.ts';
import { parseWorkerConfig } from '../../worker/config/worker-config.ts';

const HOST = 'apps.example.com';
const PUBLIC = '93.184.215.14';
const REDIRECT = 'http://127.0.0.1:43117/callback';

/** The scratch dir, holding the certificate the test made for `HOST` (`cert.pem`, `key.pem`) and its CA (`ca.pem`). */
const dir = process.argv[2]!;
execFileSync('ip', ['link', 'set', 'lo', 'up']);
execFileSync('ip', ['addr', 'add', `${PUBLIC}/32`, 'dev', 'lo']);
writeFileSync(join(dir, 'resolv.conf'), 'nameserver 127.0.0.1\noptions attempts:1 timeout:2\n');
execFileSync('mount', ['--bind', join(dir, 'resolv.conf'), '/etc/resolv.conf']);
const key = readFileSync(join(dir, 'key.pem'));
const cert = readFileSync(join(dir, 'cert.pem'));

/** The A queries for the client's name so far: the first is answered with the public address. */
let aQueries = 0;
const dns = createSocket('udp4');
dns.on('message', (query, peer) => dns.send(answer(query), peer.port, peer.address));
await new Promise<void>((resolve) => dns.bind(53, '127.0.0.1', resolve));

/** A DNS answer to `query`: the client's name's A record (rebinding), nothing else. */
function answer(query: Buffer): Buffer {
  let offset = 12;
  const labels: string[] = [];
  while (query[offset]! > 0) {
    labels.push(query.subarray(offset + 1, offset + 1 + query[offset]!).toString('ascii'));
    offset += 1 + query[offset]!;
  }
  const type = query.readUInt16BE(offset + 1);
  const question = query.subarray(12, offset + 5);
  const name = labels.join('.').toLowerCase();
  const records: Buffer[] = [];
  if (name === HOST && type === 1) {
    const address = aQueries++ === 0 ? PUBLIC : '127.0.0.1';
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0);
    record.writeUInt16BE(1, 2);
    record.writeUInt16BE(1, 4);
    record.writeUInt32BE(0, 6);
    record.writeUInt16BE(4, 10);
    address.split('.').forEach((part, i) => record.writeUInt8(Number(part), 12 + i));
    records.push(record);
  }
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  // A response, recursion desired as asked, recursion available; NXDOMAIN for any other name.
  header.writeUInt16BE(0x8080 | (query.readUInt16BE(2) & 0x0100) | (name === HOST ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  return Buffer.concat([header, question, ...records]);
}

const hits = { public: 0, loopback: 0 };
function documentServer(address: string, name: string, counter: keyof typeof hits): Promise<Server> {
  const server = createServer({ key, cert }, (req, res) => {
    hits[counter]++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `https://${HOST}${req.url}`, client_name: name, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }));
  });
  return new Promise((resolve) => server.listen(443, address, () => resolve(server)));
}
const servers = [await documentServer(PUBLIC, 'Public app', 'public'), await documentServer('127.0.0.1', 'Loopback service', 'loopback')];

const config = { agents: [], servers: {}, oauth: { 'built-in': {} } };
const configFile = join(dir, 'worker.json');
writeFileSync(configFile, JSON.stringify(config));

/** Asks `base` for the sign-in page of the client at `path`, with a fresh DNS name's first answer. */
async function signIn(base: string, path: string): Promise<{ status: number; shows: string }> {
  aQueries = 0;
  const query = new URLSearchParams({ client_id: `https://${HOST}${path}`, redirect_uri: REDIRECT, response_type: 'code', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' });
  const response = await fetch(`${base}/oauth/authorize?${query}`);
  const text = await response.text();
  const page = text.replace(/<style[^>]*>[^]*?<\/style>/g, '').replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ');
  const shows = page.includes('Loopback service') ? 'loopback' : page.includes('Public app') ? 'public' : page.slice(0, 300);
  return { status: response.status, shows };
}

const result: Record<string, unknown> = {};
try {
  const deno = await startDenoWorker({ configFile, port: 0, stderr: 'pipe', stateDir: join(dir, 'deno-state'), env: { DENO_CERT: join(dir, 'ca.pem'), HTTPS_PROXY: '', https_proxy: '' } });
  try {
    result.deno = await signIn(await deno.listening, '/deno.json');
  } finally {
    await deno.stop();
  }
  // Node trusts the test certificate through NODE_EXTRA_CA_CERTS, set for this process by the test.
  const parsed = parseWorkerConfig(config, { runtime: 'edge' });
  const node = await startNodeWorker({ config: parsed, port: 0, oauth: await nodeOAuthRuntime(parsed, join(dir, 'node-state')) });
  try {
    result.node = await signIn(node.url, '/node.json');
  } finally {
    await node.close();
  }
} catch (error) {
  result.error = String((error as Error).stack ?? error);
}
result.hits = hits;
for (const server of servers) server.close();
dns.close();
process.stdout.write(JSON.stringify(result) + '\n');
process.exit(0);
