/**
 * What a stranger can make the worker (under Deno, as users run it) hold at `/link` before it has
 * proven anything: anyone who names a configured host may start a handshake, so
 *
 * - a frame over 8 KiB before the proof is refused (link-close `invalid-request`, close 1009)
 *   and the link closed, before it is parsed;
 * - at most 64 handshakes are pending at once (4 per entity id): the 65th gets HTTP 429
 *   `limit-reached` without an upgrade, and a slot frees as soon as its socket goes; a fifth for
 *   one id takes the place of that id's oldest, which is closed (1013), so silent sockets held for
 *   a host cannot lock its sidecar out;
 * - a host already linked keeps its link and serves calls throughout.
 *
 * Seventeen extra hosts are configured because the per-host limit is 4: 64 pending needs 16 ids.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeClient, connectClient } from '../support/clients.ts';
import { agentEntry, hostCredential, randomCredential, tokenSha256, workerHostEntry, writeSidecarDir, writeWorkerConfig } from '../support/configs.ts';
import { fixtureServer } from '../support/paths.ts';
import { freePort, ProcessSet } from '../support/processes.ts';
import { startSidecar, type SidecarProcess } from '../support/sidecar-process.ts';
import { fetchHealth, waitHostLinked } from '../support/stack.ts';
import { startWorkerProcessFromFile, type WorkerProcess } from '../support/worker-process.ts';
import { SLOW_MS } from './figures.ts';
import { RogueLink, type LinkRefusal } from './rogue-link.ts';

const HOST = 'adm-host';
const STRANGERS = Array.from({ length: 17 }, (_, i) => `adm-stranger-${i}`);
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
    // The strangers' keys are never used: nobody here can prove to be them.
    hosts: [workerHostEntry(host), ...STRANGERS.map((id) => workerHostEntry(hostCredential(id)))],
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

describe('link admission before the proof', { timeout: SLOW_MS }, () => {
  it('refuses a 1 MiB frame before the proof with 1009 and a link-close, and closes that link only', async () => {
    const rogue = await RogueLink.dial(worker.url, STRANGERS[0]!);
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
      for (const id of STRANGERS.slice(0, 16)) for (let i = 0; i < 4; i++) pending.push(await RogueLink.dial(worker.url, id));
      await Promise.all(pending.map((rogue) => rogue.next('link-challenge')));
      const refused = (await RogueLink.dial(worker.url, STRANGERS[16]!).then(
        (rogue) => (pending.push(rogue), null),
        (error: unknown) => error,
      )) as LinkRefusal | null;
      expect(refused).toMatchObject({ status: 429 });
      expect(JSON.parse(refused!.body!)).toMatchObject({ error: { reason: 'limit-reached', limit: 'total', max: 64, message: 'This worker already has 64 link handshakes pending: retry in a few seconds' } });
      await hostServes();

      await pending.pop()!.close();
      // Polled: the worker frees the slot when it sees the close, a moment after the client did.
      const dialled = () => RogueLink.dial(worker.url, STRANGERS[16]!).then((rogue) => (pending.push(rogue), 101), (error: LinkRefusal) => error.status);
      await expect.poll(dialled, { timeout: 10_000 }).toBe(101);
      // A fifth for one id takes the place of that id's oldest (the first dialled), which is closed.
      const fifth = await RogueLink.dial(worker.url, STRANGERS[0]!);
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
