/**
 * One agent's large answer does not hold back another agent's answer on the same host's link
 * (`shared/link/link-sender.ts`), on the real stack: the worker under Deno, the sidecar CLI, and
 * `bulk-server.mjs` for both agents.
 *
 * The link runs through a relay this test can stop in the host-to-worker direction, as a slow
 * uplink would: while it is stopped, alice's 8 MB answer and then bob's echo are both on the
 * sidecar's side. Before, the sidecar handed its socket alice's answer whole and bob's behind it,
 * and the worker read them in that order; now it sends a window of alice's answer, then the
 * channels take turns, so the worker has bob's answer long before alice's last piece. What is
 * asserted is that order, in the worker's own audit lines, never a time.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msg } from '../support/line-log.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { RawSession } from '../resilience/raw-client.ts';
import { modernPost, type ModernAnswer } from '../modern/modern-client.ts';

let stack: Stack;
let relay: Server;
/** The sidecar's sockets into the relay: paused, the host's frames stop short of the worker. */
const fromSidecar: Socket[] = [];

beforeAll(async () => {
  let workerPort = 0;
  relay = createServer((sidecar) => {
    const worker = connect(workerPort, '127.0.0.1');
    sidecar.on('data', (chunk) => worker.write(chunk));
    worker.pipe(sidecar);
    sidecar.on('error', () => worker.destroy());
    worker.on('error', () => sidecar.destroy());
    sidecar.on('close', () => worker.destroy());
    fromSidecar.push(sidecar);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port } = relay.address() as { port: number };
  stack = await startStack({
    servers: { bulk: fixtureServer('bulk-server.mjs'), echo: fixtureServer('bulk-server.mjs') },
    agents: [{ name: 'bob', servers: ['echo'] }],
    linkUrl: (worker) => {
      workerPort = worker;
      return `http://127.0.0.1:${port}`;
    },
  });
});

afterAll(async () => {
  for (const socket of fromSidecar) socket.resume();
  await stack?.stop();
  await new Promise((resolve) => relay?.close(resolve));
});

describe('the link between two agents', () => {
  it('delivers an agent\'s small answer ahead of the rest of another agent\'s large one that was sent before it', async () => {
    const url = (server: string) => `${stack.url}/servers/${server}/mcp`;
    const alice = await RawSession.open(url('bulk'), stack.tokens.alice!);
    const bob = await RawSession.open(url('echo'), stack.tokens.bob!);
    expect(fromSidecar).toHaveLength(1);

    fromSidecar[0]!.pause();
    const big = alice.request('tools/call', { name: 'big', arguments: { bytes: 8_000_000 } });
    await stack.sidecar.err.waitFor(msg('audit', { agent: 'alice', method: 'tools/call' }), 'alice\'s answer on the host');
    const echo = bob.request('tools/call', { name: 'echo', arguments: { message: 'bob' } });
    await stack.sidecar.err.waitFor(msg('audit', { agent: 'bob', method: 'tools/call' }), 'bob\'s answer on the host');
    fromSidecar[0]!.resume();

    expect(await echo).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: bob' }] } });
    const answer = (await big) as { result: { content: [{ text: string }] } };
    expect(answer.result.content[0].text).toHaveLength(8_000_000);
    const answered = stack.worker.err.lines.filter((line) => line.json.msg === 'audit' && line.json.method === 'tools/call').map((line) => line.json.agent);
    expect(answered).toEqual(['bob', 'alice']);
  });

  it('carries an agent\'s large request and its large answer whole, each in pieces, and the link stays up', async () => {
    const alice = await RawSession.open(`${stack.url}/servers/bulk/mcp`, stack.tokens.alice!);
    // Characters of one, two, three and four UTF-8 bytes, so that pieces cut from text (the worker's, under Deno) and from bytes (the sidecar's) meet every width.
    const message = 'aé€🦊'.repeat(250_000);
    expect(await alice.request('tools/call', { name: 'echo', arguments: { message } })).toMatchObject({ result: { content: [{ type: 'text', text: `Echo: ${message}` }] } });
    expect(stack.sidecar.err.lines.filter((line) => String(line.json.msg).startsWith('Link to worker dropped'))).toEqual([]);
  });

  it('refuses an agent\'s requests with limit-reached once its messages to a host that reads nothing wait in the worker past its budget, and still takes another agent\'s', async () => {
    const url = (server: string) => `${stack.url}/servers/${server}/mcp`;
    const echo = (server: string, token: string, message: string) => modernPost(url(server), token, 'tools/call', { name: 'echo', arguments: { message } });
    // Each agent's instance on the host is up before the link stops.
    expect((await echo('bulk', stack.tokens.alice!, 'up')).response).toMatchObject({ result: { content: [{ text: 'Echo: up' }] } });
    expect((await echo('echo', stack.tokens.bob!, 'up')).response).toMatchObject({ result: { content: [{ text: 'Echo: up' }] } });

    fromSidecar[0]!.pause(); // the host's acks stop short of the worker: what the worker sends past its window waits there
    const message = 'a'.repeat(1_000_000);
    const settled: ModernAnswer[] = [];
    const alice = Array.from({ length: 24 }, () => echo('bulk', stack.tokens.alice!, message).then((answer) => (settled.push(answer), answer)));
    // 1 MB each against the agent's 16 MiB: the last few are refused at once, by the worker (nothing of the host's reaches it).
    await expect.poll(() => settled.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const early = settled.slice();
    expect(early.map((answer) => [answer.status, answer.response.error?.data?.reason])).toEqual(early.map(() => [429, 'limit-reached']));
    expect(early[0]!.response.error.message).toMatch(/^This agent's earlier messages to the host wait in the worker/);
    const bob = echo('echo', stack.tokens.bob!, 'bob');
    // Alice is still over her budget, the link still stopped: hers are refused on, bob's waits its turn (answered below).
    const aliceAgain = await echo('bulk', stack.tokens.alice!, 'still waiting');
    expect([aliceAgain.status, aliceAgain.response.error?.data?.reason]).toEqual([429, 'limit-reached']);
    fromSidecar[0]!.resume();

    expect((await bob).response).toMatchObject({ result: { content: [{ text: 'Echo: bob' }] } });
    // The rest are answered, or refused by the host: once the link moves again, the requests the
    // worker kept reach the server faster than it reads them while its answers wait on the link.
    const answers = await Promise.all(alice);
    const refused = answers.filter((answer) => answer.response.error?.data?.reason === 'limit-reached');
    const answered = answers.filter((answer) => answer.response.result?.content?.[0]?.text === `Echo: ${message}`);
    expect(refused.length + answered.length).toBe(24);
    expect(answered.length).toBeGreaterThan(0);
    // And once they drained, alice's requests go again.
    expect((await echo('bulk', stack.tokens.alice!, 'again')).response).toMatchObject({ result: { content: [{ text: 'Echo: again' }] } });
  });
});
