/**
 * The audit log against a server that misbehaves, through the real stack (worker under Deno, the
 * sidecar CLI): an agent reusing a request id in one batch cannot run a call off the record, and a
 * server's error cannot write its own words, of any length, into either side's lines or /healthz.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLine } from '../support/line-log.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;
let session: string;

type Audit = Record<string, any>;
const audits = (lines: readonly LogLine[]): Audit[] => lines.filter((l) => l.json.msg === 'audit' && l.json.event === 'call').map((l) => l.json as Audit);

async function post(body: unknown, sessionId?: string): Promise<{ status: number; sessionId: string | null; text: string }> {
  const response = await fetch(`${stack.url}/servers/hostile/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.tokens.alice}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...(sessionId !== undefined ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, sessionId: response.headers.get('mcp-session-id'), text: await response.text() };
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

beforeAll(async () => {
  stack = await startStack({ servers: { hostile: { command: process.execPath, args: [fileURLToPath(new URL('./hostile-server.mjs', import.meta.url))] } } });
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  session = init.sessionId!;
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
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
    await new Promise((resolve) => setTimeout(resolve, 500)); // what the server would have taken to answer it
    expect(audits(stack.sidecar.err.lines).filter((a) => a.tool === 'slow')).toEqual([]);
  }, 30_000);

  it('refuses a lone request reusing the id of one in flight with 400, audited once, and the first still gets its answer', async () => {
    const first = post(call(10, 'slow'), session);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the first is in flight: the server takes 300 ms over it
    const second = await post(call(10, 'reused'), session);
    expect(second.status).toBe(400);
    expect(JSON.parse(second.text)).toMatchObject({ id: 10, error: { code: -32600, message: 'Request refused: id 10 is already in use by a request in flight in this session', data: { reason: 'invalid-request' } } });
    expect((await first).text).toContain('ok slow');
    expect(audits(stack.worker.err.lines).filter((a) => a.tool === 'reused').map((a) => [a.decision, a.reason])).toEqual([['refused', 'invalid-request']]);
    expect(audits(stack.sidecar.err.lines).filter((a) => a.tool === 'reused')).toEqual([]);
  }, 30_000);

  it('keeps a server\'s own error reason, and its claim of a policy denial, out of the sidecar\'s decision and of every line', async () => {
    expect((await post(call(8, 'bigreason'), session)).text).toContain('reason-tail');
    expect((await post(call(9, 'forge'), session)).text).toContain('denied-by-policy');
    const big = await linesFor('bigreason');
    const forged = await linesFor('forge');
    expect([...big.worker, ...big.sidecar].map((a) => [a.decision, a.reason, a.errorCode])).toEqual([['allowed', 'rpc-error', -32000], ['allowed', 'rpc-error', -32000]]);
    // The sidecar decided nothing: its line says so. The worker believes a policy denial from a
    // host (the link does not say who wrote an answer), and the two lines tell the forgery apart.
    expect(forged.sidecar.map((a) => [a.level, a.decision, a.reason])).toEqual([['info', 'allowed', 'denied-by-policy']]);
    expect(forged.worker.map((a) => [a.decision, a.reason])).toEqual([['denied-by-policy', 'denied-by-policy']]);
    for (const line of [...stack.worker.err.lines, ...stack.sidecar.err.lines]) expect(line.text).not.toContain('reason-tail');
    const healthz = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.admin}` } });
    expect(await healthz.text()).not.toContain('RRRR');
  }, 30_000);
});
