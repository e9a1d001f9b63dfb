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
});
