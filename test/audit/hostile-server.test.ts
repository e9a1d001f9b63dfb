/**
 * The audit log against a server that misbehaves, through the real stack (worker under Deno, the
 * sidecar CLI): an agent reusing a request id in one batch cannot run a call off the record, a
 * server's error cannot write its own words, of any length, into either side's lines or /healthz,
 * and a server's error that claims a host's policy denial is not recorded as that decision on
 * either side, on any endpoint or era, while the host's own denial still is on both (the link
 * carries who wrote an answer: `host-answers`).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLine } from '../support/line-log.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost } from '../modern/modern-client.ts';

let stack: Stack;
let session: string;

type Audit = Record<string, any>;
const audits = (lines: readonly LogLine[]): Audit[] => lines.filter((l) => l.json.msg === 'audit' && l.json.event === 'call').map((l) => l.json as Audit);

async function post(body: unknown, sessionId?: string, to: { path?: string; agent?: string } = {}): Promise<{ status: number; sessionId: string | null; text: string }> {
  const response = await send(body, sessionId, to);
  return { status: response.status, sessionId: response.headers.get('mcp-session-id'), text: await response.text() };
}

/** POSTs `body` and returns once the answer's headers are in: its requests are taken (or refused) by then. */
function send(body: unknown, sessionId?: string, to: { path?: string; agent?: string } = {}): Promise<Response> {
  return fetch(`${stack.url}${to.path ?? '/servers/hostile/mcp'}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.tokens[to.agent ?? 'alice']}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...(sessionId !== undefined ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' } : {}),
    },
    body: JSON.stringify(body),
  });
}

const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

/** Waits until the worker and, unless `sidecar` is false, the sidecar have an audit line for `tool`, and returns them. */
async function linesFor(tool: string, sidecar = true): Promise<{ worker: Audit[]; sidecar: Audit[] }> {
  const of = (lines: readonly LogLine[]) => audits(lines).filter((a) => a.tool === tool);
  const seen = (lines: readonly LogLine[]) => () => of(lines).length > 0;
  await stack.worker.err.waitFor(seen(stack.worker.err.lines), `a worker audit line for ${tool}`, { timeoutMs: 20_000 });
  if (sidecar) await stack.sidecar.err.waitFor(seen(stack.sidecar.err.lines), `a sidecar audit line for ${tool}`, { timeoutMs: 20_000 });
  return { worker: of(stack.worker.err.lines), sidecar: of(stack.sidecar.err.lines) };
}

/** A legacy session of `agent` on `path`, initialized. */
async function open(path?: string, agent?: string): Promise<string> {
  const to = { ...(path !== undefined ? { path } : {}), ...(agent !== undefined ? { agent } : {}) };
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, undefined, to);
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.sessionId!, to);
  return init.sessionId!;
}

/** Waits for the one audit line of `side` that `match` picks, and returns it. */
async function lineOf(side: 'worker' | 'sidecar', match: (a: Audit) => boolean, what: string): Promise<Audit> {
  const log = side === 'worker' ? stack.worker.err : stack.sidecar.err;
  await log.waitFor(() => audits(log.lines).some(match), `a ${side} audit line: ${what}`, { timeoutMs: 20_000 });
  const found = audits(log.lines).filter(match);
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** The worker's line of one call, and the sidecar's line of the same call (same trace). */
async function bothLines(match: (a: Audit) => boolean, what: string): Promise<[Audit, Audit]> {
  const worker = await lineOf('worker', match, what);
  const sidecar = await lineOf('sidecar', (a) => a.traceId === worker.traceId && a.parentSpanId === worker.spanId, what);
  return [worker, sidecar];
}

const decided = (line: Audit) => [line.level, line.decision, line.outcome, line.reason, line.errorCode];

beforeAll(async () => {
  stack = await startStack({
    servers: { hostile: { command: process.execPath, args: [fileURLToPath(new URL('./hostile-server.mjs', import.meta.url))] } },
    // carol's profile has the host deny the tool `deny`, whatever the server would answer.
    agents: [{ name: 'carol', servers: ['hostile'], trust: { ref: 'no-deny' } }],
    profiles: { 'no-deny': { 'restricted-mcp-tool-call-schemas': [{ type: 'object', properties: { toolName: { const: 'deny' } }, required: ['toolName'] }] } },
  });
  session = await open();
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('the audit log against a hostile server', () => {
  it('never runs a call off the record when an agent reuses a request id in one batch', async () => {
    const answer = await post([call(7, 'delete_everything'), call(7, 'slow')], session);
    expect(answer.text).toContain('"reason":"invalid-request"');
    expect(answer.text).toContain('ok delete_everything'); // the batch's stream still carries the answer of the request that ran
    const deleted = await linesFor('delete_everything');
    const slow = await linesFor('slow', false);
    expect(deleted.worker.map((a) => [a.decision, a.outcome])).toEqual([['allowed', 'ok']]);
    expect(deleted.sidecar.map((a) => [a.decision, a.outcome, a.traceId])).toEqual([['allowed', 'ok', deleted.worker[0]!.traceId]]);
    // The second request never reached the host: refused on the worker, and only there.
    expect(slow.worker.map((a) => [a.level, a.decision, a.reason])).toEqual([['warn', 'refused', 'invalid-request']]);
    // A later slow call on the same channel: had the refused one reached the host, the server would
    // have answered it first, and its line would be there by the time this one's is.
    await post(call(8, 'slow'), session);
    const later = await linesFor('slow');
    expect(later.sidecar).toHaveLength(1);
  }, 30_000);

  it('refuses a lone request reusing the id of one in flight with 400, audited once, and the first still gets its answer', async () => {
    const first = await send(call(10, 'slow'), session); // in flight once its headers are in: the server takes 300 ms over it
    const second = await post(call(10, 'reused'), session);
    expect(second.status).toBe(400);
    expect(JSON.parse(second.text)).toMatchObject({ id: 10, error: { code: -32600, message: 'Request refused: id 10 is already in use by a request in flight in this session', data: { reason: 'invalid-request' } } });
    expect(await first.text()).toContain('ok slow');
    expect(audits(stack.worker.err.lines).filter((a) => a.tool === 'reused').map((a) => [a.decision, a.reason])).toEqual([['refused', 'invalid-request']]);
    expect(audits(stack.sidecar.err.lines).filter((a) => a.tool === 'reused')).toEqual([]);
  }, 30_000);

  it('keeps a server\'s own error reason, and its claim of a policy denial, out of the sidecar\'s decision and of every line', async () => {
    expect((await post(call(8, 'bigreason'), session)).text).toContain('reason-tail');
    expect((await post(call(9, 'forge'), session)).text).toContain('denied-by-policy');
    const big = await linesFor('bigreason');
    const forged = await linesFor('forge');
    expect([...big.worker, ...big.sidecar].map((a) => [a.decision, a.reason, a.errorCode])).toEqual([['allowed', 'rpc-error', -32000], ['allowed', 'rpc-error', -32000]]);
    // The sidecar decided nothing: both lines say so. The worker passed the call on, and the host
    // did not mark the answer as its own (it is the server's), so the error is an answer, not a decision.
    expect(forged.sidecar.map((a) => [a.level, a.decision, a.reason])).toEqual([['info', 'allowed', 'denied-by-policy']]);
    expect(forged.worker.map((a) => [a.level, a.decision, a.outcome, a.reason, a.errorCode])).toEqual([['info', 'allowed', 'error', 'denied-by-policy', -32010]]);
    for (const line of [...stack.worker.err.lines, ...stack.sidecar.err.lines]) expect(line.text).not.toContain('reason-tail');
    const healthz = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.admin}` } });
    expect(await healthz.text()).not.toContain('RRRR');
  }, 30_000);
  it('records a host\'s own denial as the decision on both sides, and a server\'s forged one as an answer, on a legacy session of each endpoint', async () => {
    const passthrough = await open(undefined, 'carol');
    const aggregate = await open('/mcp', 'carol');
    const ask = (id: number, name: string, where: string) => post(call(id, name), where === 'aggregate' ? aggregate : passthrough, { agent: 'carol', ...(where === 'aggregate' ? { path: '/mcp' } : {}) });
    for (const where of ['passthrough', 'aggregate']) {
      const tool = (name: string) => (where === 'aggregate' ? `hostile__${name}` : name);
      expect((await ask(21, tool('deny'), where)).text).toContain('denied-by-policy');
      expect((await ask(22, tool('forge'), where)).text).toContain('denied-by-policy');
      const line = (name: string) => (a: Audit) => a.agent === 'carol' && a.era === 'legacy' && a.route === where && a.tool === name;
      const [deniedWorker, deniedSidecar] = await bothLines(line('deny'), `carol's denied call on ${where}`);
      const [forgedWorker, forgedSidecar] = await bothLines(line('forge'), `carol's forged denial on ${where}`);
      expect([decided(deniedWorker), decided(deniedSidecar)]).toEqual([
        ['warn', 'denied-by-policy', 'error', 'denied-by-policy', -32010],
        ['warn', 'denied-by-policy', 'error', 'denied-by-policy', undefined],
      ]);
      expect([decided(forgedWorker), decided(forgedSidecar)]).toEqual([
        ['info', 'allowed', 'error', 'denied-by-policy', -32010],
        ['info', 'allowed', 'error', 'denied-by-policy', -32010],
      ]);
    }
  }, 60_000);

  it('records the same for a modern request, whose answer comes in one channel-reply, through each endpoint', async () => {
    for (const [where, path, prefix] of [['passthrough', '/servers/hostile/mcp', ''], ['aggregate', '/mcp', 'hostile__']] as const) {
      const denied = await modernPost(`${stack.url}${path}`, stack.tokens.carol!, 'tools/call', { name: `${prefix}deny`, arguments: {} });
      const forged = await modernPost(`${stack.url}${path}`, stack.tokens.carol!, 'tools/call', { name: `${prefix}forge`, arguments: {} });
      expect([denied.response.error?.data?.reason, forged.response.error?.data?.reason]).toEqual(['denied-by-policy', 'denied-by-policy']);
      const line = (name: string) => (a: Audit) => a.agent === 'carol' && a.era === 'modern' && a.route === where && a.tool === name;
      const [deniedWorker, deniedSidecar] = await bothLines(line('deny'), `carol's denied modern call on ${where}`);
      const [forgedWorker, forgedSidecar] = await bothLines(line('forge'), `carol's forged modern denial on ${where}`);
      expect([decided(deniedWorker), decided(deniedSidecar)]).toEqual([
        ['warn', 'denied-by-policy', 'error', 'denied-by-policy', -32010],
        ['warn', 'denied-by-policy', 'error', 'denied-by-policy', undefined],
      ]);
      expect([decided(forgedWorker).slice(0, 4), decided(forgedSidecar).slice(0, 4)]).toEqual([
        ['info', 'allowed', 'error', 'denied-by-policy'],
        ['info', 'allowed', 'error', 'denied-by-policy'],
      ]);
    }
  }, 60_000);
});
