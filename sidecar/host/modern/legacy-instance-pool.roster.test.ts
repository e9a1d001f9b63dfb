/**
 * The pool told that the worker no longer routes an agent and server here (`keepOnly`, from the
 * worker's roster): its instances end, an idle one at once and a busy one as its last call ends.
 * Each server is a scripted legacy server over an in-memory channel pair.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryChannelPair, type ChannelTransport } from '../../../shared/channel-transport.ts';
import { rosterCheck } from '../../../shared/link/host-roster.ts';
import { silentLogger } from '../../log.ts';
import { LegacyInstancePool } from './legacy-instance-pool.ts';

const pools: LegacyInstancePool[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.dispose();
});

/** A legacy server that answers `initialize` and holds every other request until the test answers it. */
function scripted(name: string) {
  const [hostEnd, server] = createInMemoryChannelPair();
  const held: Array<{ id: string | number }> = [];
  let closed = false;
  server.onmessage = (raw: JSONRPCMessage) => {
    const message = raw as { id?: string | number; method?: string };
    if (message.method === 'initialize') void server.send({ jsonrpc: '2.0', id: message.id!, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name, version: '1' } } });
    else if (message.id !== undefined) held.push({ id: message.id });
  };
  server.onclose = () => (closed = true);
  void server.start();
  return { hostEnd, server: server as ChannelTransport, held, closed: () => closed };
}

describe('LegacyInstancePool.keepOnly', () => {
  it('ends the instances of agents and servers no longer routed here, an idle one at once and a busy one after its call, and starts afresh', async () => {
    const pool = new LegacyInstancePool({ idleMs: 60_000, log: silentLogger });
    pools.push(pool);
    const servers = new Map<string, ReturnType<typeof scripted>[]>();
    const acquire = (agent: string, server: string) =>
      pool.acquire({ agent, server, revision: 'uncontained' }, async () => {
        const made = scripted(`${agent}-${server}`);
        servers.set(`${agent}/${server}`, [...(servers.get(`${agent}/${server}`) ?? []), made]);
        return { server, transport: made.hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger };
      });
    const aliceFiles = await acquire('alice', 'files');
    const bobFiles = await acquire('bob', 'files');
    const aliceNotes = await acquire('alice', 'notes');
    const call = aliceNotes.call({ method: 'tools/call', params: { name: 'slow' } }, { logLevel: null, notify: () => {} });
    const answered = call.outcome.then((r) => r, (e: unknown) => e);
    while (servers.get('alice/notes')![0]!.held.length === 0) await new Promise((r) => setTimeout(r, 1));

    expect(pool.keepOnly(rosterCheck([{ agent: 'bob', servers: ['files'] }]))).toBe(2);
    await aliceFiles.closed;
    expect(servers.get('alice/files')![0]!.closed()).toBe(true);
    expect(aliceNotes.ended).toBe(false);
    expect(bobFiles.ended).toBe(false);
    // Still counted while it serves its call.
    expect(pool.instances()).toEqual([bobFiles, aliceNotes]);

    // The busy one ends once its last call is answered: its agent still gets the answer.
    const notes = servers.get('alice/notes')![0]!;
    await notes.server.send({ jsonrpc: '2.0', id: notes.held[0]!.id, result: { content: [] } });
    expect(await answered).toMatchObject({ result: { content: [] } });
    await aliceNotes.closed;
    expect(notes.closed()).toBe(true);

    // Routed here again later: a fresh instance.
    expect(pool.keepOnly(rosterCheck([{ agent: 'alice', servers: ['files'] }, { agent: 'bob', servers: ['files'] }]))).toBe(0);
    const again = await acquire('alice', 'files');
    expect(again).not.toBe(aliceFiles);
    expect(servers.get('alice/files')).toHaveLength(2);
    expect(pool.instances()).toEqual([bobFiles, again]);
  });

  it('lets an instance still starting when the roster comes serve the request it was started for, and every request waiting on it, before it ends (review s32)', async () => {
    const pool = new LegacyInstancePool({ idleMs: 60_000, log: silentLogger });
    pools.push(pool);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const made = scripted('alice-files');
    const key = { agent: 'alice', server: 'files', revision: 'uncontained' };
    const start = async () => {
      await held;
      return { server: 'files', transport: made.hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger };
    };
    const first = pool.acquire(key, start);
    const second = pool.acquire(key, start);
    expect(pool.keepOnly(rosterCheck([]))).toBe(1);
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toBe(b);
    const answers = [a.call({ method: 'tools/call', params: { name: 'one' } }, { logLevel: null, notify: () => {} }), b.call({ method: 'tools/call', params: { name: 'two' } }, { logLevel: null, notify: () => {} })];
    while (made.held.length < 2) await new Promise((r) => setTimeout(r, 1));
    for (const { id } of made.held) await made.server.send({ jsonrpc: '2.0', id, result: { content: [] } });
    expect(await Promise.all(answers.map((call) => call.outcome))).toEqual([expect.objectContaining({ result: { content: [] } }), expect.objectContaining({ result: { content: [] } })]);
    await a.closed;
    expect(made.closed()).toBe(true);
  });

  it('serves requests of a pair the roster removed, ones that overtook it, with one start and keeps nothing for them; keeps a pair just added; forgets the roster with its link', async () => {
    const pool = new LegacyInstancePool({ idleMs: 60_000, log: silentLogger });
    pools.push(pool);
    const before = rosterCheck([{ agent: 'alice', servers: ['files'] }, { agent: 'bob', servers: ['files'] }]);
    const now = rosterCheck([{ agent: 'bob', servers: ['files'] }]);
    pool.keepOnly(now, (agent, server) => before(agent, server) && !now(agent, server));
    const key = { agent: 'alice', server: 'files', revision: 'uncontained' };
    const made: ReturnType<typeof scripted>[] = [];
    const start = async () => {
      const server = scripted('alice-files');
      made.push(server);
      return { server: 'files', transport: server.hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger };
    };
    // Two requests at once: one start between them.
    const [served, also] = await Promise.all([pool.acquire(key, start), pool.acquire(key, start)]);
    expect(also).toBe(served);
    expect(made).toHaveLength(1);
    const call = served.call({ method: 'tools/call', params: { name: 'one' } }, { logLevel: null, notify: () => {} });
    while (made[0]!.held.length < 1) await new Promise((r) => setTimeout(r, 1));
    await made[0]!.server.send({ jsonrpc: '2.0', id: made[0]!.held[0]!.id, result: { content: [] } });
    expect(await call.outcome).toMatchObject({ result: { content: [] } });
    await served.closed;
    expect(pool.instances()).toEqual([]);
    // Carol, added with her roster still on its way: kept.
    const carol = await pool.acquire({ ...key, agent: 'carol' }, start);
    expect(await pool.acquire({ ...key, agent: 'carol' }, start)).toBe(carol);
    expect(carol.ended).toBe(false);
    // The link that told the roster ended: kept again, as before any roster.
    pool.forgetRoster();
    const kept = await pool.acquire(key, start);
    expect(made).toHaveLength(3);
    expect(await pool.acquire(key, start)).toBe(kept);
    expect(kept.ended).toBe(false);
  });
});
