import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { ENTITY_ID_HEADER, REFUSAL_HEADER } from '../../shared/link/link-types.ts';
import type { ChannelOpenHandler } from '../../shared/link/link-endpoint.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentialTexts, hostCredential, type HostCredential } from '../../test/support/configs.ts';
import { startInProcessWorker, type InProcessWorker } from '../../test/support/node-worker.ts';
import { createLogger } from '../log.ts';
import { loadHostKey } from './host-key.ts';
import { backoffDelay, LinkClient, linkUrl } from './link-client.ts';
import { PART_CHARS } from '../../shared/link/link-sender.ts';
import { LINK_PROTOCOL_VERSION } from '../../shared/frames.ts';

const ALICE = hostCredential('alice-laptop');
const echo: ChannelOpenHandler = async (_request, channel) => {
  channel.onmessage = (m) => void channel.send(m);
  channel.start();
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function worker(): Promise<InProcessWorker> {
  const harness = await startInProcessWorker([ALICE]);
  cleanups.push(() => harness.stop());
  return harness;
}

/** The host's key as the sidecar loads it: from a 0600 key file. */
async function keyOf(host: HostCredential) {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-key-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'host.key'), host.privateKeyPem, { mode: 0o600 });
  return loadHostKey(join(dir, 'host.key'));
}

async function client(url: string, host: HostCredential) {
  const lines: string[] = [];
  const linkClient = new LinkClient({
    worker: url,
    entityId: 'alice-laptop',
    key: await keyOf(host),
    onOpen: echo,
    log: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
    backoff: { firstMs: 20, capMs: 100 },
  });
  cleanups.push(() => linkClient.stop());
  linkClient.start();
  return { linkClient, lines };
}

const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
};

/**
 * A TCP relay in front of a worker whose `public-url` is the relay's, so a test can put bytes into
 * the link's stream either way, as a broken network or a failed write would leave it.
 */
async function relayedWorker(): Promise<{ worker: InProcessWorker; url: string; toSidecar(bytes: Buffer): void; toWorker(bytes: Buffer): void }> {
  const pairs: { sidecar: Socket; worker: Socket }[] = [];
  let workerPort = 0;
  const relay = createServer((sidecar) => {
    const toWorker = connect(workerPort, '127.0.0.1');
    sidecar.pipe(toWorker).pipe(sidecar);
    sidecar.on('error', () => toWorker.destroy());
    toWorker.on('error', () => sidecar.destroy());
    pairs.push({ sidecar, worker: toWorker });
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
  const harness = await startInProcessWorker([ALICE], { 'public-url': url });
  workerPort = harness.port;
  cleanups.push(async () => {
    for (const pair of pairs) pair.sidecar.destroy();
    await new Promise((resolve) => relay.close(resolve));
    await harness.stop();
  });
  return { worker: harness, url, toSidecar: (bytes) => pairs.at(-1)!.sidecar.write(bytes), toWorker: (bytes) => pairs.at(-1)!.worker.write(bytes) };
}

/** A WebSocket frame with a reserved opcode: any WebSocket refuses it, and fails its socket. */
const BAD_FRAME = Buffer.from([0x83, 0x80, 0, 0, 0, 0]);

describe('link client backoff', () => {
  it('is full jitter under an exponential ceiling: first retry at most 1 s, capped at 30 s', () => {
    const table = [
      // attempt, random, expected delay (ms)
      [0, 0.999, 999],
      [0, 0.5, 500],
      [1, 0.5, 1000],
      [2, 0.5, 2000],
      [4, 0.999, 15984],
      [5, 0.999, 29970],
      [6, 0.999, 29970],
      [50, 0.5, 15000],
      [3, 0, 0],
    ] as const;
    for (const [attempt, random, expected] of table) expect(backoffDelay(attempt, {}, () => random)).toBe(expected);
    expect(backoffDelay(0, { firstMs: 200, capMs: 1000 }, () => 0.5)).toBe(100);
    // Until the sidecar has linked once, no retry waits more than 5 s: a worker brought up after it is found at once.
    expect([0, 2, 3, 5, 50].map((attempt) => backoffDelay(attempt, {}, () => 0.999, false))).toEqual([999, 3996, 4995, 4995, 4995]);
    expect(backoffDelay(5, { capMs: 2000 }, () => 0.999, false)).toBe(1998);
  });

  it('builds the link URL from the worker base URL', () => {
    expect(linkUrl('http://127.0.0.1:8787')).toBe('ws://127.0.0.1:8787/link');
    expect(linkUrl('https://edge.example.com/base/')).toBe('wss://edge.example.com/base/link');
    expect(linkUrl('ws://h:1/?x=1')).toBe('ws://h:1/link');
  });
});

describe('LinkClient', () => {
  it('links by answering the worker\'s challenge with the host key, and serves channels', async () => {
    const w = await worker();
    const { linkClient } = await client(w.url, ALICE);
    await until(() => linkClient.endpoint !== null && w.registry.status()[0]!.linked);
    // The handshake's round trip is the link window's first (`link-window.ts`).
    expect(linkClient.endpoint!.stats.roundTripMs).toEqual(expect.any(Number));
    const channel = await w.registry.openChannel('alice-laptop', {});
    const reply = new Promise((resolve) => (channel.onmessage = resolve));
    channel.start();
    await channel.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await reply).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping' });
  });

  it('announces open-first and open-reply when it dials, so the worker sends a channel\'s first message in the open\'s frame and asks for one reply frame', async () => {
    const w = await worker();
    const { linkClient } = await client(w.url, ALICE);
    await until(() => linkClient.endpoint !== null && w.registry.status()[0]!.linked);
    const seen: Array<[string, boolean, boolean]> = [];
    linkClient.endpoint!.onFrame = (direction, text) => {
      const frame = JSON.parse(text) as { type: string; reply?: unknown };
      if (direction === 'in' && frame.type.startsWith('channel')) seen.push([frame.type, 'first' in frame, frame.reply === true]);
    };
    const ping = { jsonrpc: '2.0' as const, id: 1, method: 'ping' };
    const channel = await w.registry.openChannel('alice-laptop', {}, { first: ping });
    const reply = new Promise((resolve) => (channel.onmessage = resolve));
    void channel.start();
    expect(await reply).toEqual(ping);
    expect(seen).toEqual([['channel-open', true, true]]);
  });

  it('is told by the worker that it reads pieces, and sends a large answer in pieces over ws that arrive whole', async () => {
    const w = await worker();
    const { linkClient } = await client(w.url, ALICE);
    await until(() => linkClient.endpoint !== null && w.registry.status()[0]!.linked);
    const out: string[] = [];
    linkClient.endpoint!.onFrame = (direction, text) => {
      if (direction === 'out') out.push((JSON.parse(text.split('\n', 1)[0]!) as { type: string }).type);
    };
    const channel = await w.registry.openChannel('alice-laptop', {});
    // Characters of two UTF-16 units, at both offsets: a piece cut between the halves of one would arrive as U+FFFD.
    const bigs = ['', 'x'].map((lead) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: `${lead}${'🦊'.repeat(300_000)}` } }));
    const replies: unknown[] = [];
    const both = new Promise((resolve) => (channel.onmessage = (m) => replies.push(m) === 2 && resolve(undefined)));
    void channel.start();
    for (const big of bigs) await channel.send(big);
    await both;
    expect(replies).toEqual(bigs);
    // 1.2 MB of UTF-8 each, in pieces of PART_CHARS bytes.
    expect(out.filter((type) => type === 'channel-part')).toHaveLength(2 * Math.ceil(1_200_100 / PART_CHARS));
  });

  it('logs a refused key clearly, with what to do and without the key, and keeps retrying', async () => {
    const w = await worker();
    const wrong = hostCredential('alice-laptop');
    const { lines } = await client(w.url, wrong);
    await until(() => lines.filter((l) => l.includes('refused the link')).length >= 2);
    const refusal = JSON.parse(lines.find((l) => l.includes('refused the link'))!) as Record<string, unknown>;
    expect(refusal).toMatchObject({
      level: 'error',
      msg: 'Worker refused the link of host "alice-laptop": The worker does not know this host\'s key (entity "alice-laptop"): if this host made a new key, give the worker config the line `sidecar host-entry` prints on it (switchyard host add --rekey)',
    });
    expect(lines.some((l) => l.includes('Dialling the worker again'))).toBe(true);
    for (const text of credentialTexts(wrong)) {
      expect(lines.join('\n')).not.toContain(text);
      expect(JSON.stringify(w.logs)).not.toContain(text);
    }
    expect(w.logs.some((l) => l.msg === 'Refused a host link' && l.reason === 'unauthorized')).toBe(true);
    expect(w.registry.status()[0]!.linked).toBe(false);
  });

  it('gives up reading a refusal whose body trickles in, logs it and dials again (review s20)', async () => {
    // A rogue worker (or proxy) refuses the upgrade and then writes its body a byte a second, for ever.
    const timers: NodeJS.Timeout[] = [];
    const sockets: Socket[] = [];
    let dials = 0;
    const server = createHttpServer();
    server.on('upgrade', (_request, socket: Socket) => {
      dials += 1;
      sockets.push(socket);
      socket.write('HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n');
      timers.push(setInterval(() => socket.write('1\r\n \r\n'), 1_000));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const timer of timers) clearInterval(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    const { lines } = await client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, hostCredential('alice-laptop'));
    await until(() => dials >= 2);
    expect(lines.some((l) => l.includes('refused the link'))).toBe(true);
  }, 20_000);

  it('keeps only a stable reason and check from a refusal\'s body: another server\'s words in their place are left out', async () => {
    const bodies = [
      { status: 429, error: { message: 'Later', reason: 'limit-reached', check: 'too-many-dials' } },
      { status: 502, error: { message: 'Bad gateway', reason: 'Upstream said: no!', check: 'DROP TABLE hosts' } },
    ];
    let dials = 0;
    const server = createHttpServer();
    server.on('upgrade', (_req, socket: Socket) => {
      const { status, error } = bodies[Math.min(dials++, bodies.length - 1)]!;
      const body = JSON.stringify({ error });
      socket.end(`HTTP/1.1 ${status} No\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const refusals: Array<{ reason: string; check: string | null }> = [];
    const linkClient = new LinkClient({ worker: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, entityId: 'alice-laptop', key: await keyOf(ALICE), onOpen: echo, log: createLogger({ level: 'error', write: () => {} }), backoff: { firstMs: 20, capMs: 40 }, onRefused: (r) => refusals.push(r) });
    cleanups.push(() => linkClient.stop());
    linkClient.start();
    await until(() => refusals.length >= 2);
    expect(refusals.slice(0, 2)).toEqual([{ reason: 'limit-reached', check: 'too-many-dials' }, { reason: 'http-502', check: null }]);
  });

  it('takes a link-close the worker sends during the handshake for a refusal, and neither a socket that closed nor a worker stopping', async () => {
    // A worker that upgrades every dial, then ends each handshake in turn: refused, stopping, gone.
    const endings = [
      (ws: WebSocket) => ws.send(JSON.stringify({ v: LINK_PROTOCOL_VERSION, type: 'link-close', reason: 'invalid-request', message: 'No' })),
      (ws: WebSocket) => ws.send(JSON.stringify({ v: LINK_PROTOCOL_VERSION, type: 'link-close', reason: 'host-offline', message: 'The worker is stopping' })),
      (ws: WebSocket) => ws.close(1011),
    ];
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    let dials = 0;
    server.on('connection', (ws) => endings[Math.min(dials++, endings.length - 1)]!(ws));
    await new Promise<void>((resolve) => server.once('listening', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const lines: string[] = [];
    const refusals: Array<{ reason: string; check: string | null }> = [];
    const linkClient = new LinkClient({ worker: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, entityId: 'alice-laptop', key: await keyOf(ALICE), onOpen: echo, log: createLogger({ level: 'debug', write: (line) => lines.push(line) }), backoff: { firstMs: 20, capMs: 40 }, onRefused: (r) => refusals.push(r) });
    cleanups.push(() => linkClient.stop());
    linkClient.start();
    await until(() => lines.filter((l) => l.includes('Link handshake failed')).length >= 4);
    expect(refusals).toEqual([{ reason: 'invalid-request', check: null }]);
  });

  it('logs a clock off from the worker\'s by how much, in the worker\'s words: refused before any socket opens', async () => {
    const w = await worker();
    const lines: string[] = [];
    const refusals: Array<{ reason: string; check: string | null }> = [];
    const skewed = new LinkClient({ worker: w.url, entityId: 'alice-laptop', key: await keyOf(ALICE), now: () => Date.now() - 412_000, onOpen: echo, log: createLogger({ level: 'debug', write: (line) => lines.push(line) }), backoff: { firstMs: 20, capMs: 100 }, onRefused: (r) => refusals.push(r) });
    cleanups.push(() => skewed.stop());
    skewed.start();
    await until(() => lines.some((l) => l.includes('refused the link')));
    const refusal = JSON.parse(lines.find((l) => l.includes('refused the link'))!) as Record<string, unknown>;
    expect(refusal).toMatchObject({ level: 'error', status: 401 });
    // What the host's audit record takes: the reason, and the check the worker names.
    expect(refusals[0]).toEqual({ reason: 'unauthorized', check: 'clock-skew' });
    // 412 s, or 413 when the second turned between the two clocks' readings.
    expect(refusal.msg).toMatch(/^Worker refused the link of host "alice-laptop": The clock of host "alice-laptop" is 41[23] s behind the worker's \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; at most 300 s apart\): set that host's clock right \(NTP\) and it links again$/);
    expect(w.logs.find((l) => l.msg === 'Refused a host link')).toMatchObject({ 'entity-id': 'alice-laptop', check: 'clock-skew' });
    expect(w.registry.status()[0]!.linked).toBe(false);
  });

  it('refuses a dial without an upgrade proof, as the previous sidecar sends it, with 401 and words telling to update it, in the header that sidecar reads', async () => {
    const w = await worker();
    const ws = new WebSocket(`${w.url.replace(/^http/, 'ws')}/link`, { headers: { [ENTITY_ID_HEADER]: 'alice-laptop' } });
    const refused = await new Promise<{ status: number | undefined; header: unknown }>((resolve, reject) => {
      ws.once('unexpected-response', (_request, response) => {
        resolve({ status: response.statusCode, header: response.headers[REFUSAL_HEADER.toLowerCase()] });
        ws.terminate();
      });
      ws.once('open', () => reject(new Error('upgraded without a proof')));
      ws.on('error', () => {}); // terminate() reports the cut connection; the refusal is what counts
    });
    expect(refused).toEqual({ status: 401, header: 'A link request naming host "alice-laptop" carries no X-Switchyard-Link-Proof: a sidecar older than this worker sends none, and this worker upgrades only a link request signed with the host key; update Switchyard on that host and restart its sidecar' });
  });

  it('logs an unknown entity id with the worker\'s own words (refused before the upgrade)', async () => {
    const w = await worker();
    const lines: string[] = [];
    const stranger = new LinkClient({ worker: w.url, entityId: 'stranger', key: await keyOf(ALICE), onOpen: echo, log: createLogger({ level: 'debug', write: (line) => lines.push(line) }), backoff: { firstMs: 20, capMs: 100 } });
    cleanups.push(() => stranger.stop());
    stranger.start();
    await until(() => lines.some((l) => l.includes('refused the link')));
    expect(JSON.parse(lines.find((l) => l.includes('refused the link'))!)).toMatchObject({
      msg: 'Worker refused the link of host "stranger": The worker does not know host "stranger": add this host to the worker config with the line `sidecar host-entry` prints on that host (switchyard host add)',
      status: 401,
    });
  });

  it('logs a Host the worker does not answer to without blaming the key, which was fine', async () => {
    const w = await startInProcessWorker([ALICE], { 'allowed-hosts': ['yard.example.com'] });
    cleanups.push(() => w.stop());
    const { lines } = await client(w.url, ALICE);
    await until(() => lines.some((l) => l.includes('"level":"error"')));
    const refusal = JSON.parse(lines.find((l) => l.includes('"level":"error"'))!) as Record<string, unknown>;
    expect(refusal).toMatchObject({ status: 401 });
    expect(refusal.msg).toMatch(/^Worker refused the link of host "alice-laptop": Host "127\.0\.0\.1:\d+" does not name this worker: /);
    expect(refusal.msg).not.toMatch(/key/);
  });

  it('logs the socket error that dropped a link, which the close code alone does not tell', async () => {
    const relayed = await relayedWorker();
    const { linkClient, lines } = await client(relayed.url, ALICE);
    await until(() => linkClient.endpoint !== null);
    relayed.toSidecar(BAD_FRAME);
    await until(() => lines.some((l) => l.includes('Link to worker dropped')));
    const drop = JSON.parse(lines.find((l) => l.includes('Link to worker dropped'))!) as Record<string, unknown>;
    expect(drop).toMatchObject({ level: 'warn', msg: 'Link to worker dropped: its socket failed', code: 1006, error: { name: 'RangeError', code: 'WS_ERR_INVALID_OPCODE' } });
    expect(String((drop.error as { message: string }).message)).toMatch(/^Invalid WebSocket frame: invalid opcode 3$/);
  });

  it('has the worker log the socket error that dropped a link', async () => {
    const relayed = await relayedWorker();
    const { linkClient } = await client(relayed.url, ALICE);
    await until(() => linkClient.endpoint !== null && relayed.worker.registry.status()[0]!.linked);
    relayed.toWorker(BAD_FRAME);
    await until(() => relayed.worker.logs.some((l) => l.msg === 'Link socket failed'));
    expect(relayed.worker.logs.find((l) => l.msg === 'Link socket failed')).toMatchObject({ level: 'warn', 'entity-id': 'alice-laptop', error: 'RangeError: Invalid WebSocket frame: invalid opcode 3' });
  });

  it('redials a worker that dropped its link within the short cap for a while, so a restarted or redeployed worker is found again in seconds', async () => {
    const w = await worker();
    const lines: string[] = [];
    const linkClient = new LinkClient({
      worker: w.url,
      entityId: 'alice-laptop',
      key: await keyOf(ALICE),
      onOpen: echo,
      log: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
      // The real shape, scaled down: a growing delay the short cap holds back.
      backoff: { firstMs: 20, capMs: 10_000, stableMs: 60_000, capBeforeLinkMs: 50 },
      random: () => 0.999,
    });
    cleanups.push(() => linkClient.stop());
    linkClient.start();
    await until(() => linkClient.endpoint !== null);
    await w.kill();
    const redials = () => lines.filter((l) => l.includes('"Dialling the worker again"')).map((l) => (JSON.parse(l) as { inMs: number }).inMs);
    await until(() => redials().length >= 5);
    // Uncapped, the fourth and fifth would wait 159 and 319 ms, and the delay would go on doubling to 10 s.
    expect(redials().slice(0, 5)).toEqual([19, 39, 49, 49, 49]);
    await w.restart();
    await until(() => w.registry.status()[0]!.linked);
  });

  it('dials again after the worker goes away and comes back', async () => {
    const w = await worker();
    const { linkClient, lines } = await client(w.url, ALICE);
    await until(() => linkClient.endpoint !== null);
    await w.kill();
    await until(() => linkClient.endpoint === null);
    await w.restart();
    await until(() => w.registry.status()[0]!.linked);
    // The worker may see the link a moment before the client's open event logs it.
    await until(() => lines.filter((l) => l.includes('"Linked to the worker"')).length >= 2);
    expect(lines.filter((l) => l.includes('"Linked to the worker"')).length).toBe(2);
    expect(lines.some((l) => l.includes('Link to worker dropped'))).toBe(true);
  });
});
