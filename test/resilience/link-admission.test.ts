/**
 * What a dialler can make the worker (under Deno, as users run it) hold at `/link`. Deno buffers
 * a whole WebSocket message, up to 64 MiB, before the worker sees it, so what counts is who gets
 * a socket at all:
 *
 * - nobody without a configured host's key: an upgrade with no proof (a sidecar older than the
 *   worker), a proof by another key, a stale one, or one for an unknown host is answered HTTP 401
 *   with the reason, and no WebSocket opens, so no frame of any size can be sent;
 * - a key holder's socket, before it answers the challenge: a frame over 8 KiB is refused
 *   (link-close `invalid-request`, close 1009) and the link closed, before it is parsed;
 * - at most 64 handshakes are pending at once (4 per entity id): the 65th gets HTTP 429
 *   `limit-reached` without an upgrade, and a slot frees as soon as its socket goes; a fifth for
 *   one id takes the place of that id's oldest, which is closed (1013);
 * - a host already linked keeps its link and serves calls throughout.
 *
 * Seventeen extra hosts are configured because the per-host limit is 4: 64 pending needs 16 ids.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { agentEntry, hostCredential, hostSigner, randomCredential, tokenSha256, workerHostEntry, writeSidecarDir, writeWorkerConfig } from '../support/configs.ts';
import { originOfUrl } from '../../shared/link/link-identity.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER } from '../../shared/link/link-upgrade-proof.ts';
import { fixtureServer } from '../support/paths.ts';
import { freePort, ProcessSet } from '../support/processes.ts';
import { startSidecar, type SidecarProcess } from '../support/sidecar-process.ts';
import { fetchHealth, waitHostLinked } from '../support/stack.ts';
import { startWorkerProcessFromFile, type WorkerProcess } from '../support/worker-process.ts';
import { msg } from '../support/line-log.ts';
import { SLOW_MS } from './figures.ts';
import { RogueLink, type LinkRefusal } from './rogue-link.ts';

const HOST = 'adm-host';
/** Hosts whose keys this test holds, dialling as key holders that never answer the challenge. */
const HOLDERS = Array.from({ length: 17 }, (_, i) => hostCredential(`adm-holder-${i}`));
const ids = HOLDERS.map((h) => h.entityId);
const procs = new ProcessSet();
const dir = mkdtempSync(join(tmpdir(), 'switchyard-admission-'));
const adminToken = randomCredential('admin-token');
const aliceToken = randomCredential('alice-token');
let worker: WorkerProcess;
let sidecar: SidecarProcess;
let alice: Client;

beforeAll(async () => {
  const host = hostCredential(HOST);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configFile = writeWorkerConfig(dir, {
    agents: [agentEntry({ name: 'alice', token: aliceToken, servers: ['echo'] })],
    hosts: [workerHostEntry(host), ...HOLDERS.map(workerHostEntry)],
    servers: { echo: { executor: { type: 'user-computer-profile', 'entity-id': HOST, target: { type: 'local' } } } },
    'admin-token-sha256': tokenSha256(adminToken),
  });
  const configDir = join(dir, 'sidecar');
  writeSidecarDir(configDir, { worker: url, host, servers: { echo: fixtureServer('echo-server.mjs') } });
  sidecar = startSidecar(procs, configDir);
  worker = await startWorkerProcessFromFile(procs, configFile, { port });
  await waitHostLinked(url, adminToken, HOST, true, sidecar);
  alice = await connectClient(`${url}/servers/echo/mcp`, aliceToken);
}, SLOW_MS);

afterAll(async () => {
  if (alice !== undefined) await closeClient(alice);
  await procs.stopAll();
  rmSync(dir, { recursive: true, force: true });
});

/** The linked host answers a call: its link is still the one it had. */
async function hostServes(): Promise<void> {
  const result = await alice.callTool({ name: 'echo', arguments: { message: 'still here' } });
  expect(result.content).toEqual([{ type: 'text', text: 'Echo: still here' }]);
  expect((await fetchHealth(worker.url, adminToken)).hosts.find((h) => h['entity-id'] === HOST)?.linked).toBe(true);
}

/** The refusal of a dial that must never get a socket. */
async function refusedDial(entityId: string, options: Parameters<typeof RogueLink.dial>[2]): Promise<{ status: number | undefined; error: Record<string, unknown> }> {
  const refusal = (await RogueLink.dial(worker.url, entityId, options).then(
    async (rogue) => {
      await rogue.close();
      throw new Error(`upgraded ${entityId} without a valid proof`);
    },
    (error: unknown) => error,
  )) as LinkRefusal;
  return { status: refusal.status, error: (JSON.parse(refusal.body ?? '{}') as { error: Record<string, unknown> }).error };
}

describe('link admission before the upgrade', { timeout: SLOW_MS }, () => {
  it('upgrades nobody without a configured host\'s key: 401 with the reason, and never a socket to send a frame on', async () => {
    const origin = originOfUrl(worker.url);
    const stale = await createLinkProofHeader(await hostSigner(HOLDERS[0]!), { origin, entityId: ids[0]!, nowMs: Date.now() - 3_600_000 });
    const cases = [
      [ids[0]!, {}, 'no-proof', /^A link request naming host "adm-holder-0" carries no X-Switchyard-Link-Proof: a sidecar older than this worker sends none, .*update Switchyard on that host and restart its sidecar$/],
      [ids[0]!, { key: hostCredential(ids[0]!) }, 'bad-signature', /^The worker does not know this host's key \(entity "adm-holder-0"\)/],
      [ids[0]!, { headers: { [LINK_PROOF_HEADER]: stale } }, 'clock-skew', /^The clock of host "adm-holder-0" is 360[01] s behind the worker's/],
      ['adm-nobody', { key: hostCredential('adm-nobody') }, 'unknown-host', /^The worker does not know host "adm-nobody"/],
    ] as const;
    for (const [entityId, options, check, message] of cases) {
      expect(await refusedDial(entityId, options)).toMatchObject({ status: 401, error: { reason: 'unauthorized', check, message: expect.stringMatching(message) } });
    }
    await expect.poll(() => worker.err.filter(msg('Refused a host link')).map((l) => l.json.check)).toEqual(['no-proof', 'bad-signature', 'clock-skew', 'unknown-host']);
    await hostServes();
  });
});

describe('link admission of key holders before the challenge\'s proof', { timeout: SLOW_MS }, () => {
  it('answers a key holder\'s upgrade that Deno cannot take (no Sec-WebSocket-Key) 400 with the reason, not an unhandled 500 (review s21)', async () => {
    const proof = await createLinkProofHeader(await hostSigner(HOLDERS[1]!), { origin: originOfUrl(worker.url), entityId: ids[1]! });
    const answer = await new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
      const req = httpRequest(`${worker.url}/link`, { headers: { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-version': '13', 'x-switchyard-entity-id': ids[1]!, [LINK_PROOF_HEADER]: proof } });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('upgrade', () => reject(new Error('upgraded without a Sec-WebSocket-Key')));
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { reason: 'invalid-request', message: expect.stringMatching(/^Not a WebSocket upgrade Deno can take: /) } });
    expect(worker.err.filter(msg('Unhandled error in a worker route'))).toEqual([]);
    await hostServes();
  });

  it('refuses a key holder\'s 1 MiB frame before the challenge\'s proof with 1009 and a link-close, and closes that link only', async () => {
    const rogue = await RogueLink.dial(worker.url, ids[0]!, { key: HOLDERS[0]! });
    await rogue.next('link-challenge');
    rogue.send(JSON.stringify({ v: 1, type: 'link-proof', origin: 'o'.repeat(1024 * 1024), signature: 'A'.repeat(86) }));
    const outcome = await rogue.probe();
    expect(outcome).toMatchObject({
      kind: 'closed',
      linkClose: { type: 'link-close', reason: 'invalid-request', message: 'Incoming link frame exceeds the 8192 byte limit before the host is verified' },
    });
    // 1009 as the worker sends it; or, when the worker closes while the rest of the 1 MiB is still
    // on its way, a connection reset before the close frame is read (1006): the link-close said why.
    expect([1009, 1006]).toContain((outcome as { code: number }).code);
    await hostServes();
  });

  it('answers the 65th pending handshake 429 limit-reached, and admits one again once a pending one goes', async () => {
    const pending: RogueLink[] = [];
    try {
      for (const holder of HOLDERS.slice(0, 16)) for (let i = 0; i < 4; i++) pending.push(await RogueLink.dial(worker.url, holder.entityId, { key: holder }));
      await Promise.all(pending.map((rogue) => rogue.next('link-challenge')));
      const refused = (await RogueLink.dial(worker.url, ids[16]!, { key: HOLDERS[16]! }).then(
        (rogue) => (pending.push(rogue), null),
        (error: unknown) => error,
      )) as LinkRefusal | null;
      expect(refused).toMatchObject({ status: 429 });
      expect(JSON.parse(refused!.body!)).toMatchObject({ error: { reason: 'limit-reached', limit: 'total', max: 64, message: 'This worker already has 64 link handshakes pending: retry in a few seconds' } });
      await hostServes();

      await pending.pop()!.close();
      // Polled: the worker frees the slot when it sees the close, a moment after the client did.
      const dialled = () => RogueLink.dial(worker.url, ids[16]!, { key: HOLDERS[16]! }).then((rogue) => (pending.push(rogue), 101), (error: LinkRefusal) => error.status);
      await expect.poll(dialled, { timeout: 10_000 }).toBe(101);
      // A fifth for one id takes the place of that id's oldest (the first dialled), which is closed.
      const fifth = await RogueLink.dial(worker.url, ids[0]!, { key: HOLDERS[0]! });
      pending.push(fifth);
      await fifth.next('link-challenge');
      expect(await pending[0]!.closedWith()).toMatchObject({ code: 1013 });
    } finally {
      await Promise.all(pending.map((rogue) => rogue.close()));
    }
    await hostServes();
    expect(sidecar.lines().filter((l) => l.msg === 'Link to worker dropped')).toEqual([]);
  });
});
