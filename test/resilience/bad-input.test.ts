/**
 * Bad input at the worker's two doors, against the real stack: agent HTTP requests (a corpus of
 * known-nasty bodies and headers, then fast-check) on `/servers/echo/mcp` and `/mcp`, with and
 * without a session; and link frames from a rogue sidecar (a raw `ws` client authenticated as
 * host B) on `/link`.
 *
 * Every input must end in a clear outcome (see `corpus.ts`: refused with a reason, answered,
 * accepted; for frames: ignored with the link still up, or the link closed with a reason) and
 * nothing may crash. A canary session on host A's echo server calls throughout; it must never
 * fail, and no frame sent by host B may reach it.
 */
import fc from 'fast-check';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FRAME_BYTES } from '../../shared/frames.ts';
import { readFrame } from '../../shared/link/frame-reader.ts';
import { isFailureReason } from '../../shared/errors.ts';
import { REPO } from '../support/paths.ts';
import { Canary } from './canary.ts';
import { agentBody, classify, FRAME_CASES, IN_SESSION_CASES, linkFrame, NO_SESSION_CASES, type AgentCase, type AgentOutcome } from './corpus.ts';
import { Figures, SLOW_MS } from './figures.ts';
import { exchange, RawSession } from './raw-client.ts';
import { RogueLink, type LinkOutcome } from './rogue-link.ts';
import { alive } from './proc-stats.ts';
import { HOST_B, startStack, type Stack } from '../support/stack.ts';

const FUZZ_RUNS = 100;
const ENDPOINTS = ['/servers/echo/mcp', '/mcp'] as const;

const figures = new Figures('bad-input');
let stack: Stack;
let canary: Canary;

beforeAll(async () => {
  stack = await startStack({ servers: { echo: { command: process.execPath, args: [join(REPO, 'test/fixtures/raw-echo-server.mjs')] } } });
  canary = await Canary.start(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!);
  figures.sessions++;
});

afterAll(async () => {
  const leaked = stack?.leakedSecrets() ?? [];
  figures.failures += leaked.length;
  figures.report();
  await canary?.stop();
  await stack?.stop();
  expect(leaked).toEqual([]);
});

/** Sends one agent request; a session it happens to create is closed again and counted. */
async function send(path: string, input: AgentCase | string, session?: RawSession): Promise<AgentOutcome> {
  const c: AgentCase = typeof input === 'string' ? { name: 'fuzz', body: input, expect: 'refused' } : input;
  const headers: Record<string, string> = { authorization: `Bearer ${stack.tokens.alice}` };
  if (session !== undefined) Object.assign(headers, { 'mcp-session-id': session.id, 'mcp-protocol-version': session.protocolVersion });
  for (const [k, v] of Object.entries(c.headers ?? {})) if (v === null) headers[k] = ''; else headers[k] = v;
  const method = c.method ?? 'POST';
  const answer = await exchange(`${stack.url}${path}`, { method, headers, ...(method === 'GET' || method === 'DELETE' ? {} : { body: c.body }) });
  figures.inputs++;
  const created = answer.headers['mcp-session-id'];
  if (session === undefined && typeof created === 'string' && answer.status === 200) {
    figures.sessions++;
    await exchange(`${stack.url}${path}`, { method: 'DELETE', headers: { authorization: headers.authorization!, 'mcp-session-id': created } });
  }
  const outcome = classify(answer);
  if (outcome === 'unclear') throw new Error(`${c.name} on ${path}: unclear answer ${answer.status} ${answer.body.slice(0, 300)}`);
  return outcome;
}

function stillRunning(): void {
  expect(alive([stack.worker.pid, stack.sidecar.pid])).toEqual([stack.worker.pid, stack.sidecar.pid]);
  expect(canary.report.errors).toEqual([]);
}

describe('agent HTTP input', { timeout: SLOW_MS }, () => {
  it.each(ENDPOINTS)('the corpus without a session on %s: refused with a reason before any server starts', async (path) => {
    const spawned = stack.serverPids().length;
    for (const c of NO_SESSION_CASES) expect([c.name, await send(path, c)]).toEqual([c.name, c.expect]);
    expect(stack.serverPids().length - spawned).toBe(NO_SESSION_CASES.filter((c) => c.expect === 'answered').length);
    stillRunning();
  });

  it.each(ENDPOINTS)('the corpus inside a session on %s: a clear outcome for each, and the session still works', async (path) => {
    const session = await RawSession.open(`${stack.url}${path}`, stack.tokens.alice!);
    figures.sessions++;
    for (const c of IN_SESSION_CASES) expect([c.name, await send(path, c, session)]).toEqual([c.name, c.expect]);
    const tool = path === '/mcp' ? 'echo__echo' : 'echo';
    // Batch abuse within the limit: 100 calls in one POST, each answer carrying its own payload.
    const batch = Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: 500 + i, method: 'tools/call', params: { name: tool, arguments: { message: `batch-${i}` } } }));
    const answer = await exchange(`${stack.url}${path}`, { headers: { authorization: `Bearer ${stack.tokens.alice}`, 'mcp-session-id': session.id, 'mcp-protocol-version': session.protocolVersion }, body: batch });
    expect(batch.map((_, i) => (answer.messages.find((m) => m.id === 500 + i)?.result as { content?: Array<{ text?: string }> } | undefined)?.content?.[0]?.text)).toEqual(batch.map((_, i) => `Echo: batch-${i}`));
    expect(await session.request('tools/call', { name: tool, arguments: { message: 'after the corpus' } })).toMatchObject({ result: { content: [{ text: 'Echo: after the corpus' }] } });
    figures.calls += 101;
    figures.inputs++;
    expect(await session.close()).toBe(200);
    stillRunning();
  });

  it.each(ENDPOINTS)(`${FUZZ_RUNS} random bodies with and without a session on %s: never an unclear answer`, async (path) => {
    const session = await RawSession.open(`${stack.url}${path}`, stack.tokens.alice!);
    figures.sessions++;
    await fc.assert(
      fc.asyncProperty(agentBody, fc.boolean(), async (body, inSession) => {
        await send(path, body, inSession ? session : undefined);
      }),
      { numRuns: FUZZ_RUNS },
    );
    await session.close();
    stillRunning();
    await expect.poll(async () => (await stack.health()).sessions, { timeout: 5_000 }).toBe(1); // the canary's
  });
});

/** Asserts a link outcome is one of the clear ones: alive, or closed by the worker saying why. */
function expectClear(outcome: LinkOutcome, input: string | Buffer): void {
  if (outcome.kind === 'alive') return;
  const closedByRequest = typeof input === 'string' && (() => {
    const read = readFrame(input, MAX_FRAME_BYTES);
    return read.kind === 'frame' && read.frame.type === 'link-close';
  })();
  if (closedByRequest) return;
  // The link-close frame is the answer; the WebSocket close code may be lost to a TCP reset when
  // the probe's keepalive crosses the worker's close, so it is not what this checks.
  expect(isFailureReason(outcome.linkClose?.reason), `closed without a reason: ${JSON.stringify(outcome)}`).toBe(true);
}

describe('link frames from a rogue sidecar', { timeout: SLOW_MS }, () => {
  it('the corpus: each bad frame ignored or the link closed with a reason; host A never sees any of it', async () => {
    let rogue = await RogueLink.connect(stack.url, HOST_B, stack.hostKeys.b);
    for (const c of FRAME_CASES) {
      rogue.send(c.frame);
      const outcome = await rogue.probe();
      figures.inputs++;
      expect([c.name, outcome.kind]).toEqual([c.name, c.expect]);
      expectClear(outcome, c.frame);
      if (c.name === 'a channel-open sent to the worker') {
        expect(rogue.traffic().at(-1)).toMatchObject({ type: 'channel-open-error', channel: 5, reason: 'invalid-request', message: 'This end of the link does not accept channels' });
      }
      if (outcome.kind === 'closed') {
        if (c.name === 'a frame over 16 MiB') expect(outcome.linkClose).toMatchObject({ reason: 'invalid-request', message: 'Incoming link frame exceeds the 16777216 byte limit' });
        rogue = await RogueLink.connect(stack.url, HOST_B, stack.hostKeys.b);
      }
    }
    // Host B's link carries only its own channels: forged answers and closes for every channel id
    // host A's link might be using change nothing there.
    for (let channel = 1; channel <= 64; channel++) {
      rogue.send(JSON.stringify({ v: 1, type: 'channel-message', channel, message: { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'forged' }] } } }));
      rogue.send(JSON.stringify({ v: 1, type: 'channel-close', channel, reason: 'server-exited', message: 'forged close' }));
      figures.inputs += 2;
    }
    expect((await rogue.probe()).kind).toBe('alive');
    expect(rogue.traffic().filter((f) => f.type !== 'channel-open-error')).toEqual([]);
    await rogue.close();
    stillRunning();
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === 'res-host-a')).toMatchObject({ linked: true, channels: 1 });
  });

  it(`${FUZZ_RUNS * 2} random frames: each ignored or answered by closing the link with a reason`, async () => {
    let rogue = await RogueLink.connect(stack.url, HOST_B, stack.hostKeys.b);
    await fc.assert(
      fc.asyncProperty(linkFrame, async (frame) => {
        rogue.send(frame);
        const outcome = await rogue.probe();
        figures.inputs++;
        expectClear(outcome, frame);
        if (outcome.kind === 'closed') {
          figures.faults++;
          rogue = await RogueLink.connect(stack.url, HOST_B, stack.hostKeys.b);
        }
      }),
      { numRuns: FUZZ_RUNS * 2 },
    );
    await rogue.close();
    stillRunning();
  });

  it('the canary on host A never failed', async () => {
    const report = await canary.stop();
    figures.calls += report.calls;
    figures.failures += report.failures;
    figures.note('canary calls', report.calls);
    expect(report.errors).toEqual([]);
    expect(report.calls).toBeGreaterThan(10);
  });
});
