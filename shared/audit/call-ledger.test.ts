import { describe, expect, it, vi } from 'vitest';
import { AuditLog, levelFilteredWriter, type FinishedSpan } from './audit-log.ts';
import { CallLedger } from './call-ledger.ts';
import { hostAnswer } from './host-answers.ts';
import { parseTraceparent } from '../trace-context.ts';

function harness(options: { includeArguments?: boolean } = {}, cancelGraceMs?: number) {
  const lines: Array<Record<string, any>> = [];
  const spans: FinishedSpan[] = [];
  let now = 1_000_000;
  const log = new AuditLog({
    component: 'sidecar',
    write: (line) => lines.push(JSON.parse(line)),
    spans: { export: (span) => spans.push(span) },
    now: () => now,
    ...options,
  });
  const ledger = new CallLedger(log, { agent: 'alice', server: 'files', host: 'laptop', era: 'legacy', session: 's1', parent: parseTraceparent('00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01') }, cancelGraceMs === undefined ? {} : { cancelGraceMs });
  return { lines, spans, ledger, tick: (ms: number) => (now += ms) };
}

const call = (id: number, name = 'read_file', args: unknown = { path: '/secret/plan.txt' }) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

describe('CallLedger', () => {
  it('ends a cancelled call as cancelled, timed to the cancellation, once its grace passes without an answer, or at once when its channel ends', async () => {
    const { lines, ledger, tick } = harness({}, 10);
    ledger.request(call(1));
    ledger.request(call(2));
    tick(4);
    ledger.cancel(1);
    ledger.cancel(2);
    tick(500); // the grace runs on the real clock; the records' times on the harness's
    expect(lines).toEqual([]);
    ledger.fail(2, 'channel-closed'); // a withdrawn call whose channel ends is still the agent's cancellation
    expect(lines.map((l) => [l.tool, l.outcome, l.reason, l.durationMs])).toEqual([['read_file', 'error', 'cancelled', 4]]);
    await vi.waitFor(() => expect(lines).toHaveLength(2));
    expect([lines[1]!.outcome, lines[1]!.reason, lines[1]!.durationMs]).toEqual(['error', 'cancelled', 4]);
    expect(ledger.inFlight).toBe(0);
  });

  it('records the answer of a cancelled call that comes within the grace, marked cancelRequested: the call ran', () => {
    const { lines, ledger } = harness({}, 60_000);
    ledger.request(call(1));
    ledger.cancel(1);
    ledger.answer({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    expect(lines.map((l) => [l.outcome, l.reason, l.cancelRequested])).toEqual([['ok', undefined, true]]);
    expect(ledger.inFlight).toBe(0);
  });

  it('ends a cancelled call as cancelled when its id comes again, so the answer is the new call\'s (review s19)', () => {
    const { lines, ledger } = harness({}, 60_000);
    ledger.request(call(7, 'delete_all'));
    ledger.cancel(7);
    ledger.request(call(7, 'read_file'));
    ledger.answer({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    expect(lines.map((l) => [l.tool, l.outcome, l.reason, l.cancelRequested])).toEqual([
      ['delete_all', 'error', 'cancelled', undefined],
      ['read_file', 'ok', undefined, undefined],
    ]);
    expect(ledger.inFlight).toBe(0);
  });

  it('records a call from request to answer: agent, server, host, tool, decision, duration, outcome, no arguments', () => {
    const { lines, ledger, tick } = harness();
    const forwarded = ledger.request(call(1));
    tick(12.5);
    ledger.answer({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'audit', component: 'sidecar', event: 'call', agent: 'alice', server: 'files', host: 'laptop', method: 'tools/call', tool: 'read_file', decision: 'allowed', outcome: 'ok', durationMs: 12.5, session: 's1' });
    expect(JSON.stringify(lines[0])).not.toContain('/secret/plan.txt');
    // The forwarded request names this hop's span, in the scope's trace.
    expect(lines[0]!.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(lines[0]!.parentSpanId).toBe('00f067aa0ba902b7');
    expect((forwarded.params as { _meta?: unknown })._meta).toEqual({ traceparent: `00-0af7651916cd43dd8448eb211c80319c-${lines[0]!.spanId}-01` });
  });

  it('writes a line\'s keys in one fixed order: the log fields, the scope, the call, its trace, its outcome, its duration', () => {
    const texts: string[] = [];
    const log = new AuditLog({ component: 'sidecar', write: (line) => texts.push(line), fields: { 'entity-id': 'laptop' }, now: () => 1_000_000 });
    const ledger = new CallLedger(log, { agent: 'alice', server: 'files', host: 'laptop', era: 'legacy', session: 's1', parent: null });
    ledger.request(call(1));
    ledger.answer({ jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'no', data: { reason: 'server-exited' } } });
    expect(Object.keys(JSON.parse(texts[0]!))).toEqual([
      'time', 'level', 'msg', 'component', 'entity-id', 'event', 'agent', 'server', 'host', 'era', 'session', 'method', 'tool',
      'traceId', 'spanId', 'parentSpanId', 'decision', 'outcome', 'reason', 'errorCode', 'durationMs',
    ]);
  });

  it('prefers the trace context the request arrived with, then its own _meta, then the scope', () => {
    const { lines, ledger } = harness();
    ledger.request(call(1), parseTraceparent('00-11111111111111111111111111111111-2222222222222222-01'));
    ledger.request({ ...call(2), params: { name: 'x', _meta: { traceparent: '00-33333333333333333333333333333333-4444444444444444-01' } } });
    ledger.answer({ id: 1, result: {} });
    ledger.answer({ id: 2, result: {} });
    expect(lines.map((l) => [l.traceId, l.parentSpanId])).toEqual([
      ['11111111111111111111111111111111', '2222222222222222'],
      ['33333333333333333333333333333333', '4444444444444444'],
    ]);
  });

  it('writes a resource URI without its userinfo, query or fragment, where credentials ride', () => {
    const { lines, ledger } = harness();
    ledger.request({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'https://bob:hunter2@api.example.com/doc?token=abc#part' } });
    ledger.answer({ id: 1, result: {} });
    expect(lines[0]!.uri).toBe('https://[redacted]@api.example.com/doc?[redacted]#[redacted]');
  });

  it('keeps argument values only when include-arguments is on', () => {
    const { lines, ledger } = harness({ includeArguments: true });
    ledger.request(call(1));
    ledger.answer({ id: 1, result: {} });
    expect(lines[0]!.arguments).toEqual({ path: '/secret/plan.txt' });
  });

  it('tells errors apart: a stable reason, a peer\'s denied-by-policy (a reason, not this side\'s decision), a tool error, any other JSON-RPC error', () => {
    const { lines, ledger } = harness();
    for (let id = 1; id <= 5; id++) ledger.request(call(id));
    ledger.answer({ id: 1, error: { code: -32003, message: 'x', data: { reason: 'host-offline' } } });
    ledger.answer({ id: 2, error: { code: -32010, message: 'x', data: { reason: 'denied-by-policy' } } });
    ledger.answer({ id: 3, result: { isError: true, content: [] } });
    ledger.answer({ id: 4, error: { code: -32602, message: 'x' } });
    ledger.answer({ id: 5, error: { code: -32000, message: 'x', data: { reason: 'made-up' } } });
    expect(lines.map((l) => [l.level, l.decision, l.outcome, l.reason, l.errorCode])).toEqual([
      ['info', 'allowed', 'error', 'host-offline', -32003],
      ['info', 'allowed', 'error', 'denied-by-policy', -32010],
      ['info', 'allowed', 'error', 'tool-error', undefined],
      ['info', 'allowed', 'error', 'rpc-error', -32602],
      ['info', 'allowed', 'error', 'rpc-error', -32000],
    ]);
  });

  it('takes a host\'s policy denial as the decision on a channel through that host, and the same error from its server as an answer', () => {
    const lines: Array<Record<string, any>> = [];
    const log = new AuditLog({ component: 'worker', write: (line) => lines.push(JSON.parse(line)) });
    const ledger = new CallLedger(log, { agent: 'alice', server: 'files', host: 'laptop' }, { peerDecides: true });
    ledger.request(call(1));
    ledger.request(call(2));
    ledger.answer(hostAnswer({ id: 1, error: { code: -32010, message: 'x', data: { reason: 'denied-by-policy', tool: 'read_file' } } }));
    ledger.answer({ id: 2, error: { code: -32010, message: 'x', data: { reason: 'denied-by-policy', tool: 'read_file' } } });
    expect(lines.map((l) => [l.level, l.decision, l.reason, l.errorCode])).toEqual([['warn', 'denied-by-policy', 'denied-by-policy', -32010], ['info', 'allowed', 'denied-by-policy', -32010]]);
  });

  it('records every call of a reused id: answers end them oldest first', () => {
    const { lines, ledger, tick } = harness();
    ledger.request(call(1, 'a'));
    tick(1);
    ledger.request(call(1, 'b'));
    ledger.request(call(1, 'c'));
    expect(ledger.inFlight).toBe(3);
    ledger.answer({ id: 1, result: {} });
    ledger.answer({ id: 1, result: { isError: true } });
    expect(ledger.inFlight).toBe(1);
    ledger.failAll('session-closed');
    expect(ledger.inFlight).toBe(0);
    ledger.answer({ id: 1, result: {} });
    expect(lines.map((l) => [l.tool, l.outcome, l.reason, l.durationMs])).toEqual([
      ['a', 'ok', undefined, 1],
      ['b', 'error', 'tool-error', 0],
      ['c', 'error', 'session-closed', 0],
    ]);
    expect(new Set(lines.map((l) => l.spanId)).size).toBe(3);
  });

  it('records a refusal at warn at once, and ends every call in flight when the channel goes', () => {
    const { lines, ledger } = harness();
    ledger.refuse(call(9, 'rm'), 'denied-by-policy', 'denied-by-policy');
    ledger.request(call(1));
    ledger.request({ jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'file:///a' } });
    expect(ledger.inFlight).toBe(2);
    ledger.failAll('server-exited');
    expect(ledger.inFlight).toBe(0);
    expect(lines.map((l) => [l.level, l.tool ?? l.uri, l.decision, l.reason])).toEqual([
      ['warn', 'rm', 'denied-by-policy', 'denied-by-policy'],
      ['info', 'read_file', 'allowed', 'server-exited'],
      ['info', 'file:///a', 'allowed', 'server-exited'],
    ]);
  });

  it('passes other messages unchanged and records nothing for them', () => {
    const { lines, ledger } = harness();
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    expect(ledger.request(list)).toBe(list);
    const notification = { jsonrpc: '2.0', method: 'notifications/cancelled', params: {} };
    expect(ledger.request(notification)).toBe(notification);
    ledger.answer({ id: 1, result: {} });
    ledger.answer({ id: 77, result: {} });
    expect(lines).toEqual([]);
  });

  it('exports one span per record, named by method and subject, with its status', () => {
    const { spans, ledger, tick } = harness();
    ledger.request(call(1));
    tick(5);
    ledger.answer({ id: 1, error: { code: -32003, message: 'x', data: { reason: 'host-offline' } } });
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({ name: 'tools/call read_file', traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: '00f067aa0ba902b7', error: 'host-offline', endMs: spans[0]!.startMs + 5 });
    expect(spans[0]!.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'read_file', 'switchyard.agent': 'alice', 'switchyard.decision': 'allowed' });
  });

  it('writes every line to a file but follows the log level on stderr', () => {
    const written: string[] = [];
    const quiet = levelFilteredWriter((line) => written.push(line), 'warn');
    quiet('info-line', 'info');
    quiet('warn-line', 'warn');
    levelFilteredWriter((line) => written.push(line), 'info')('info-2', 'info');
    levelFilteredWriter((line) => written.push(line), 'error')('warn-2', 'warn');
    expect(written).toEqual(['warn-line', 'info-2']);
  });

  it('never builds a line its writer would drop, and still hands the record on', () => {
    let built = 0;
    const onRecord: unknown[] = [];
    const record = { event: 'call', agent: 'a', server: 's', host: null, method: 'tools/call', decision: 'allowed', outcome: 'ok', durationMs: 1.234, arguments: { toJSON: () => ++built } } as const;
    new AuditLog({ component: 'worker', write: levelFilteredWriter(() => {}, 'warn'), onRecord: (r) => void onRecord.push(r), now: () => 0 }).record(record, 0);
    expect([built, onRecord]).toEqual([0, [expect.objectContaining({ durationMs: 1.23, time: '1970-01-01T00:00:00.001Z' })]]);
    const lines: string[] = [];
    new AuditLog({ component: 'worker', write: levelFilteredWriter((line) => void lines.push(line), 'info'), now: () => 0 }).record(record, 0);
    expect([built, JSON.parse(lines[0]!).durationMs]).toEqual([1, 1.23]);
  });

  it('never throws into a call when its sink fails', () => {
    const log = new AuditLog({ component: 'worker', write: () => { throw new Error('disk full'); } });
    const ledger = new CallLedger(log, { agent: 'a', server: 's', host: null });
    ledger.request(call(1));
    expect(() => ledger.answer({ id: 1, result: {} })).not.toThrow();
    expect(log.failedWrites).toBe(1);
  });
});
