/**
 * The link's flow control end to end (`shared/link/link-flow.ts`): one agent's servers write far
 * faster than the worker reads, and neither the link nor another agent's session on that host
 * suffers. Before it, the sidecar read every server's output as fast as it came and queued it on
 * the link's socket without bound, until the socket's write failed (`ENOBUFS` at about 2 GB) and
 * the link dropped with every session on the host (review isolation.md, finding 1).
 *
 * The worker is the real one under Deno; the sidecar is the production composition in this
 * process, so its budgets can be made small (a few hundred KiB, so the test moves tens of MB, not
 * GBs) and what it queues on its socket can be read: `ws`'s `bufferedAmount` after each send, the
 * very queue that grew. The worker is stopped (SIGSTOP) while alice's floods run, so that it
 * reads nothing at all: a consumer slower than any producer, without depending on how fast
 * either is. What is asserted is a bound on that queue, not a time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { createSidecarComposition, type SidecarComposition } from '../../sidecar/host/composition.ts';
import { loadHostKey } from '../../sidecar/link/host-key.ts';
import { createLogger } from '../../sidecar/log.ts';
import { agentEntry, hostCredential, randomCredential, workerHostEntry, writeSidecarDir } from '../support/configs.ts';
import { fixtureServer } from '../support/paths.ts';
import { ProcessSet, waitUntil } from '../support/processes.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process.ts';
import { RawSession } from '../resilience/raw-client.ts';

const HOST = hostCredential('flood-host');
const TOKENS = { alice: randomCredential('alice'), bob: randomCredential('bob'), carol: randomCredential('carol'), dave: randomCredential('dave') };
/**
 * Small budgets, so a few MB show what GBs did. The link's is below one channel's, so the link
 * fills whichever flood leads: below two channels' worth only, one flood could be held by its own
 * budget and drain into the kernel's buffers while the other filled its own, and the link's was
 * never passed (once on a loaded CI box). A quiet channel's share is as far below the channel
 * budget as the default's (256 KiB of 8 MiB): equal to it, two floods each under their own budget
 * but over the link's together read as quiet, and the link held every channel, bob's too.
 */
const FLOW = { channelBytes: 256 * 1024, channelResumeBytes: 64 * 1024, linkBytes: 192 * 1024, linkResumeBytes: 64 * 1024, quietBytes: 8 * 1024 };
/** What the sidecar may queue at most: the link's budget, plus per flood what the chunk it was reading when held still carries. */
const QUEUE_BOUND = 1024 * 1024;
/** Each flood notification; several fit in one pipe read. */
const NOTIFICATION_BYTES = 16 * 1024;

const procs = new ProcessSet();
const lines: Record<string, unknown>[] = [];
const endpoints: LinkEndpoint[] = [];
let worker: WorkerProcess;
let sidecar: SidecarComposition;
let dir: string;

/** The largest `bufferedAmount` any `ws` socket of this process had right after a send: the sidecar's is the only one. */
let peakBuffered = 0;
const originalSend = WebSocket.prototype.send;

beforeAll(async () => {
  WebSocket.prototype.send = function (this: WebSocket, ...args: unknown[]) {
    (originalSend as (...a: unknown[]) => void).apply(this, args);
    if (this.bufferedAmount > peakBuffered) peakBuffered = this.bufferedAmount;
  };
  const onHost = { type: 'user-computer-profile', 'entity-id': HOST.entityId, target: { type: 'local' } };
  worker = await startWorkerProcess(procs, {
    agents: [
      agentEntry({ name: 'alice', token: TOKENS.alice, servers: ['flood'] }),
      agentEntry({ name: 'bob', token: TOKENS.bob, servers: ['echo'] }),
      agentEntry({ name: 'carol', token: TOKENS.carol, servers: ['flood'] }),
      agentEntry({ name: 'dave', token: TOKENS.dave, servers: ['flood'] }),
    ],
    hosts: [workerHostEntry(HOST)],
    servers: { flood: { executor: onHost }, echo: { executor: onHost } },
  });
  dir = mkdtempSync(join(tmpdir(), 'switchyard-flow-'));
  writeSidecarDir(dir, { worker: worker.url, host: HOST, servers: { flood: fixtureServer('bulk-server.mjs'), echo: fixtureServer('raw-echo-server.mjs') } });
  sidecar = createSidecarComposition({
    configDir: dir,
    entityId: HOST.entityId,
    user: 'tester',
    worker: worker.url,
    key: await loadHostKey(join(dir, 'host.key')),
    log: createLogger({ level: 'info', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    trust: { allowUncontained: true },
    link: { endpoint: { flow: FLOW }, onLinked: (endpoint) => endpoints.push(endpoint) },
  });
  sidecar.start();
  await waitUntil(() => endpoints.length > 0, 'the sidecar linking');
});

afterAll(async () => {
  WebSocket.prototype.send = originalSend;
  worker?.process.child.kill('SIGCONT'); // a stopped worker would not hear the SIGTERM that ends it
  await sidecar?.stop();
  await procs.stopAll();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('the link\'s flow control', () => {
  it('holds a flooding agent\'s servers at their pipes: the sidecar\'s queue stays bounded, the link stays up, another agent\'s session keeps working', async () => {
    const url = (server: string) => `${worker.url}/servers/${server}/mcp`;
    const bob = await RawSession.open(url('echo'), TOKENS.bob);
    const alice = [await RawSession.open(url('flood'), TOKENS.alice), await RawSession.open(url('flood'), TOKENS.alice)];
    const endpoint = endpoints[0]!;
    const flooding = new Set<string>();
    /** Each flood's last notification, by channel: why it ended, and what it wrote. */
    const ended = new Map<string, { why: string; bytes: number }>();
    endpoint.onFrame = (direction, text) => {
      if (direction !== 'out' || !text.includes('"notifications/message"')) return;
      const channel = /"channel":(\d+)/.exec(text)?.[1] ?? '?';
      const end = /stream ended: (\w+) after (\d+) bytes/.exec(text);
      if (end === null) flooding.add(channel);
      else ended.set(channel, { why: end[1]!, bytes: Number(end[2]) });
    };

    const streamCalls: number[] = [];
    for (const session of alice) {
      expect(await session.request('tools/call', { name: 'stream', arguments: { bytes: NOTIFICATION_BYTES } })).toMatchObject({ result: { content: [{ text: 'flooding' }] } });
      streamCalls.push(session.lastRequestId);
    }
    await waitUntil(() => flooding.size === 2, 'both floods reaching the link', 15_000);

    // The worker reads nothing now. Both floods are held once their budgets are full, or, without
    // flow control, the queue passes any bound: whichever comes first.
    worker.process.child.kill('SIGSTOP');
    try {
      await waitUntil(() => endpoint.stats.heldChannels >= 2 || peakBuffered > QUEUE_BOUND, 'the floods being held', 15_000);
      expect(peakBuffered).toBeLessThanOrEqual(QUEUE_BOUND);
      // alice's two; not bob's, with nothing waiting: past the link's budget only busy channels hold their server.
      expect(endpoint.stats.heldChannels).toBe(2);
    } finally {
      worker.process.child.kill('SIGCONT');
    }
    expect(lines.some((line) => line.msg === 'Link is full: its busy channels hold their server\'s output until it drains')).toBe(true);

    // The floods go on, as fast as the worker reads them; bob's calls cross the same link meanwhile.
    for (let i = 0; i < 5; i++) {
      expect(await bob.request('tools/call', { name: 'echo', arguments: { message: `hi ${i}` } })).toMatchObject({ result: { content: [{ type: 'text', text: `Echo: hi ${i}` }] } });
    }
    // Stopped by cancelling the `stream` calls, not by another call: one in flight would carry the
    // flood still on its way on its own stream (a server's log while it runs), as much as the link
    // and the kernel's buffers hold, and a reader as busy as this process is (it is the sidecar
    // too) could leave more of it unread than the worker keeps for a stream, which ends it.
    for (const [i, session] of alice.entries()) {
      expect(await session.notify('notifications/cancelled', { requestId: streamCalls[i], reason: 'enough' })).toBe(202);
    }
    await waitUntil(() => ended.size === 2, 'both floods ending', 15_000);
    // Still flooding when cancelled: bob's calls ran during the floods.
    expect([...ended.values()].map((end) => end.why)).toEqual(['cancelled', 'cancelled']);
    console.log(`flooded ${[...ended.values()].map((end) => (end.bytes / 1024 / 1024).toFixed(1)).join(' + ')} MiB; the sidecar's socket queue peaked at ${(peakBuffered / 1024).toFixed(0)} KiB, its flow count at ${(endpoint.stats.peakQueuedBytes / 1024).toFixed(0)} KiB`);

    expect(peakBuffered).toBeLessThanOrEqual(QUEUE_BOUND);
    expect(endpoint.stats.peakQueuedBytes).toBeLessThanOrEqual(QUEUE_BOUND);
    // Every hold ended once the floods did: nothing is left paused.
    await waitUntil(() => endpoint.stats.heldChannels === 0 && endpoint.stats.queuedBytes === 0, 'the holds ending', 15_000);
    // One link throughout: never dropped on either end.
    expect(endpoints).toHaveLength(1);
    expect(endpoint.closed).toBe(false);
    expect(lines.filter((line) => String(line.msg).startsWith('Link to worker dropped'))).toEqual([]);
    expect(worker.err.lines.filter((line) => line.json.msg === 'Link closed' || line.json.msg === 'Link socket failed')).toEqual([]);
    await bob.close();
    for (const session of alice) await session.close();
  });

  it('reads large answers in turns while the link is full, and every one arrives once it drains', async () => {
    const url = `${worker.url}/servers/flood/mcp`;
    const sessions = await Promise.all(Array.from({ length: 4 }, () => RawSession.open(url, TOKENS.alice)));
    const endpoint = endpoints[0]!;
    const gate = sidecar.lineGate;
    const bytes = 3_000_000; // each answer's line is a large one (over LARGE_LINE_BYTES)
    // The worker stops the moment the host has the last request, before any server answers: its
    // answers fill the link, which then lets no further large line read.
    let requests = 0;
    endpoint.onFrame = (direction, text) => {
      if (direction === 'in' && text.includes('"tools/call"') && ++requests === sessions.length) worker.process.child.kill('SIGSTOP');
    };
    let answers: Array<Record<string, unknown>>;
    try {
      const answering = Promise.all(sessions.map((session) => session.request('tools/call', { name: 'big', arguments: { bytes } })));
      // The lines let read are whole and on the link, the rest wait: for the link's room, since the
      // gate lets the next one read the moment one is whole while it has room.
      await waitUntil(() => gate.waitingCount > 0 && gate.readingCount === 0, 'a large answer waiting at the line gate', 15_000);
      expect(endpoint.full).toBe(true);
      worker.process.child.kill('SIGCONT');
      answers = await answering;
    } finally {
      endpoint.onFrame = undefined;
      worker.process.child.kill('SIGCONT');
    }
    // The link drained, said so (onRoom), and each line waiting was let read: none is lost or stuck.
    expect(answers.map((answer) => ((answer as { result: { content: [{ text: string }] } }).result.content[0].text).length)).toEqual([bytes, bytes, bytes, bytes]);
    expect([gate.readingCount, gate.waitingCount]).toEqual([0, 0]);
    expect(endpoints).toHaveLength(1);
    for (const session of sessions) await session.close();
  });

  it('reads another agent\'s large answer while two agents\' servers stall mid-line in both of the line gate\'s places, and theirs once they go on', async () => {
    const url = `${worker.url}/servers/flood/mcp`;
    const gate = sidecar.lineGate;
    const [alice, carol, dave] = await Promise.all([RawSession.open(url, TOKENS.alice), RawSession.open(url, TOKENS.carol), RawSession.open(url, TOKENS.dave)]);
    const stalled = 2_000_000; // past LARGE_LINE_BYTES: each takes a place, and stops there
    const aliceAnswer = alice.request('tools/call', { name: 'stall', arguments: { bytes: stalled } });
    const carolAnswer = carol.request('tools/call', { name: 'stall', arguments: { bytes: stalled } });
    await waitUntil(() => gate.readingCount === 2, 'both stalled lines reading at the gate', 15_000);
    // Dave's line waits for a place, and gets one once the gate sees a stalled line read nothing for a second or two.
    const daveAnswer = await dave.request('tools/call', { name: 'big', arguments: { bytes: 3_000_000 } });
    expect(((daveAnswer as { result: { content: [{ text: string }] } }).result.content[0].text).length).toBe(3_000_000);
    // The line that gave its place up took it back once dave's was whole: nothing else waited.
    expect([gate.readingCount, gate.waitingCount]).toEqual([2, 0]);
    const finished = await Promise.all([alice.request('tools/call', { name: 'finish', arguments: {} }), carol.request('tools/call', { name: 'finish', arguments: {} })]);
    expect(finished.map((answer) => (answer as { result: { content: [{ text: string }] } }).result.content[0].text)).toEqual(['finished', 'finished']);
    const answers = await Promise.all([aliceAnswer, carolAnswer]);
    expect(answers.map((answer) => ((answer as { result: { content: [{ text: string }] } }).result.content[0].text).length)).toEqual([stalled, stalled]);
    expect([gate.readingCount, gate.waitingCount]).toEqual([0, 0]);
    for (const session of [alice, carol, dave]) await session.close();
  });
});
