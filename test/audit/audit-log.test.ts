/**
 * The audit log of a scripted session through the real stack (worker under Deno, the sidecar
 * CLI, server-everything over stdio): every tools/call, resources/read and prompts/get of both
 * eras and every endpoint is on the record on both sides, with agent, tool, decision and duration,
 * never an argument value, under one trace id across the worker's and the sidecar's lines; a call
 * denied by a trust profile, a refused session (a stale profile revision, which the host decides)
 * and a refused credential are logged at warn where they happen. Both sides export their spans to
 * a real OTLP/HTTP collector started here, which decodes the OTLP JSON.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import type { LogLine } from '../support/line-log.ts';
import { everythingServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { startOtlpCollector, type OtlpCollector } from '../support/otlp-collector.ts';
import { modernPost } from '../modern/modern-client.ts';
import { RogueLink } from '../resilience/rogue-link.ts';
import { hostCredential } from '../support/configs.ts';
import { HOST_A } from '../support/stack.ts';

const SECRET_ARGUMENT = `audit-argument-${Math.random().toString(36).slice(2)}`;
const AGENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const AGENT_TRACEPARENT = `00-${AGENT_TRACE}-00f067aa0ba902b7-01`;
const NO_ECHO = { 'restricted-mcp-tool-call-schemas': [{ type: 'object', properties: { toolName: { const: 'echo' } }, required: ['toolName'] }] };

let stack: Stack;
let collector: OtlpCollector;
let alice: Client;
let aggregate: Client;
const wrongToken = `res-wrong-token-${Math.random().toString(36).slice(2)}`;

type Audit = Record<string, any> & { level: string; traceId: string; spanId: string };
const audits = (lines: readonly LogLine[]): Audit[] => lines.filter((l) => l.json.msg === 'audit').map((l) => l.json as Audit);
const workerAudits = () => audits(stack.worker.err.lines);
const sidecarAudits = () => audits(stack.sidecar.err.lines);

/** Waits for the audit line `match` of one side, and returns it. */
async function auditLine(side: 'worker' | 'sidecar', match: (a: Audit) => boolean, what: string): Promise<Audit> {
  const log = side === 'worker' ? stack.worker.err : stack.sidecar.err;
  const line = await log.waitFor((l) => l.json.msg === 'audit' && match(l.json as Audit), `${side} audit line: ${what}`, { timeoutMs: 20_000 });
  return line.json as Audit;
}

beforeAll(async () => {
  collector = await startOtlpCollector();
  const otlp = { endpoint: collector.endpoint, headers: { 'x-collector-key': 'collector-key-1' } };
  stack = await startStack({
    servers: { everything: everythingServer() },
    agents: [{ name: 'bob', servers: ['everything'], trust: { ref: 'no-echo' } }],
    profiles: { 'no-echo': NO_ECHO },
    worker: { audit: { otlp } },
    sidecar: { audit: { otlp } },
  });
  alice = await connectClient(`${stack.url}/servers/everything/mcp`, stack.tokens.alice!, {}, { traceparent: AGENT_TRACEPARENT });
  aggregate = await connectClient(`${stack.url}/mcp`, stack.tokens.alice!);
}, 90_000);

afterAll(async () => {
  if (alice) await closeClient(alice);
  if (aggregate) await closeClient(aggregate);
  await stack?.stop();
  await collector?.close();
});

describe('the audit log of a scripted session', () => {
  it('records every legacy passthrough call on both sides, without arguments, under the agent\'s trace', async () => {
    const echo = await alice.callTool({ name: 'echo', arguments: { message: SECRET_ARGUMENT } });
    expect(JSON.stringify(echo)).toContain(SECRET_ARGUMENT);
    await alice.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    const [resource] = (await alice.listResources()).resources;
    await alice.readResource({ uri: resource!.uri });
    const prompt = (await alice.listPrompts()).prompts.find((p) => (p.arguments ?? []).every((a) => !a.required));
    await alice.getPrompt({ name: prompt!.name });

    const subjects: Array<[string, Record<string, string>]> = [
      ['tools/call', { tool: 'echo' }],
      ['tools/call', { tool: 'get-sum' }],
      ['resources/read', { uri: resource!.uri }],
      ['prompts/get', { prompt: prompt!.name }],
    ];
    for (const [method, subject] of subjects) {
      const is = (a: Audit) => a.method === method && Object.entries(subject).every(([k, v]) => a[k] === v) && a.agent === 'alice' && a.route !== 'aggregate';
      const worker = await auditLine('worker', (a) => is(a) && a.route === 'passthrough', `${method} ${JSON.stringify(subject)}`);
      const sidecar = await auditLine('sidecar', (a) => is(a) && a.traceId === worker.traceId, `${method} ${JSON.stringify(subject)}`);
      for (const line of [worker, sidecar]) {
        expect(line).toMatchObject({ level: 'info', event: 'call', agent: 'alice', server: 'everything', host: 'res-host-a', decision: 'allowed', outcome: 'ok', era: 'legacy' });
        expect(typeof line.durationMs).toBe('number');
        expect(line.durationMs).toBeGreaterThanOrEqual(0);
        expect(line.arguments).toBeUndefined();
      }
      expect(worker.component).toBe('worker');
      expect(sidecar.component).toBe('sidecar');
      // The agent's trace, one span per hop: the sidecar's span is the worker's child.
      expect(worker.traceId).toBe(AGENT_TRACE);
      expect(worker.parentSpanId).toBe('00f067aa0ba902b7');
      expect(sidecar.parentSpanId).toBe(worker.spanId);
    }
  });

  it('exports each hop\'s span to the OpenTelemetry collector: one trace, the sidecar\'s span a child of the worker\'s', async () => {
    const worker = await collector.waitFor((s) => s.service === 'switchyard-worker' && s.traceId === AGENT_TRACE && s.name === 'tools/call echo', 'the worker\'s echo span');
    const sidecar = await collector.waitFor((s) => s.service === 'switchyard-sidecar' && s.parentSpanId === worker.spanId, 'the sidecar\'s echo span');
    expect(worker).toMatchObject({ parentSpanId: '00f067aa0ba902b7', status: { code: 1 }, attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'echo', 'switchyard.agent': 'alice', 'switchyard.server': 'everything', 'switchyard.host': 'res-host-a', 'switchyard.decision': 'allowed' } });
    expect(sidecar).toMatchObject({ traceId: AGENT_TRACE, name: 'tools/call echo', attributes: { 'switchyard.component': 'sidecar' } });
    expect(BigInt(worker.endTimeUnixNano) >= BigInt(worker.startTimeUnixNano)).toBe(true);
    expect(collector.requests.every((h) => h['x-collector-key'] === 'collector-key-1')).toBe(true);
    expect(JSON.stringify(collector.spans)).not.toContain(SECRET_ARGUMENT);
  });

  it('records calls through the /mcp aggregate, with a new trace when the agent sent none', async () => {
    await aggregate.callTool({ name: 'everything__echo', arguments: { message: SECRET_ARGUMENT } });
    const worker = await auditLine('worker', (a) => a.route === 'aggregate' && a.tool === 'echo', 'aggregate echo');
    expect(worker).toMatchObject({ agent: 'alice', server: 'everything', decision: 'allowed', outcome: 'ok', parentSpanId: null });
    expect(worker.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(worker.traceId).not.toBe(AGENT_TRACE);
    const sidecar = await auditLine('sidecar', (a) => a.traceId === worker.traceId, 'aggregate echo');
    expect(sidecar).toMatchObject({ agent: 'alice', tool: 'echo', decision: 'allowed', parentSpanId: worker.spanId });
  });

  it('records a modern (2026-07-28) request on both sides, its traceparent header carried through', async () => {
    const trace = 'aaaabbbbccccddddeeeeffff00001111';
    const answer = await modernPost(`${stack.url}/servers/everything/mcp`, stack.tokens.alice!, 'tools/call', { name: 'echo', arguments: { message: SECRET_ARGUMENT } }, {
      headers: { traceparent: `00-${trace}-1111222233334444-01` },
    });
    expect(answer.response.result).toBeDefined();
    const worker = await auditLine('worker', (a) => a.era === 'modern' && a.traceId === trace, 'modern echo');
    expect(worker).toMatchObject({ agent: 'alice', server: 'everything', tool: 'echo', decision: 'allowed', outcome: 'ok', parentSpanId: '1111222233334444' });
    const sidecar = await auditLine('sidecar', (a) => a.era === 'modern' && a.traceId === trace, 'modern echo');
    expect(sidecar).toMatchObject({ agent: 'alice', tool: 'echo', decision: 'allowed', outcome: 'ok', parentSpanId: worker.spanId });
  });

  it('logs a call the trust profile denies at warn on both sides', async () => {
    const bob = await connectClient(`${stack.url}/servers/everything/mcp`, stack.tokens.bob!);
    try {
      const denied = await bob.callTool({ name: 'echo', arguments: { message: SECRET_ARGUMENT } }).catch((error: unknown) => error);
      expect((denied as { data?: { reason?: string } }).data?.reason).toBe('denied-by-policy');
      const sidecar = await auditLine('sidecar', (a) => a.agent === 'bob' && a.tool === 'echo', 'denied echo');
      expect(sidecar).toMatchObject({ level: 'warn', decision: 'denied-by-policy', outcome: 'error', reason: 'denied-by-policy', server: 'everything' });
      const worker = await auditLine('worker', (a) => a.agent === 'bob' && a.tool === 'echo', 'denied echo');
      expect(worker).toMatchObject({ level: 'warn', decision: 'denied-by-policy', reason: 'denied-by-policy', traceId: sidecar.traceId });
    } finally {
      await closeClient(bob);
    }
  });

  it('logs a refused session (stale trust profile) at warn on both sides, with the agent, the reason and one trace', async () => {
    // The host's profile changes under the revision the worker pins: the host refuses, before anything starts.
    writeFileSync(join(stack.dir, 'sidecar', 'trust-profiles', 'no-echo.json'), JSON.stringify({ ...NO_ECHO, 'restricted-mcp-tool-call-schemas': [...NO_ECHO['restricted-mcp-tool-call-schemas'], false] }));
    const trace = '0123456789abcdef0123456789abcdef';
    const refused = await connectClient(`${stack.url}/servers/everything/mcp`, stack.tokens.bob!, {}, { traceparent: `00-${trace}-0123456789abcdef-01` }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    const sidecar = await auditLine('sidecar', (a) => a.event === 'open' && a.traceId === trace, 'stale open');
    expect(sidecar).toMatchObject({ level: 'warn', agent: 'bob', server: 'everything', decision: 'refused', reason: 'trust-profile-stale' });
    const worker = await auditLine('worker', (a) => a.event === 'open' && a.traceId === trace, 'stale open');
    expect(worker).toMatchObject({ level: 'warn', agent: 'bob', server: 'everything', host: 'res-host-a', method: 'initialize', decision: 'refused', reason: 'trust-profile-stale' });
  });

  it('logs a server the agent may not use (decided on the worker) at warn', async () => {
    const refused = await connectClient(`${stack.url}/servers/not-here/mcp`, stack.tokens.alice!).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    const worker = await auditLine('worker', (a) => a.event === 'open' && a.server === 'not-here', 'server-not-found');
    expect(worker).toMatchObject({ level: 'warn', agent: 'alice', decision: 'refused', reason: 'server-not-found' });
  });

  it('logs a refused credential at warn with a fingerprint, never the token', async () => {
    const response = await fetch(`${stack.url}/servers/everything/mcp`, { method: 'POST', headers: { authorization: `Bearer ${wrongToken}`, 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
    const worker = await auditLine('worker', (a) => a.event === 'credential', 'refused credential');
    expect(worker).toMatchObject({ level: 'warn', agent: null, decision: 'refused', reason: 'unauthorized', fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
    expect(stack.worker.err.text).not.toContain(wrongToken);
  });

  it('records the host that linked, and each link request refused with the test it failed, never in the recent calls', async () => {
    const linked = await auditLine('worker', (a) => a.event === 'link' && a.decision === 'allowed', 'host linked');
    expect(linked).toMatchObject({ level: 'info', host: HOST_A, agent: null, server: null, outcome: 'ok' });
    expect(linked.probe).toBeUndefined();
    // Host A's name with a key that is not A's, then a name the config does not know: each on the record.
    await expect(RogueLink.connect(stack.url, HOST_A, hostCredential(HOST_A))).rejects.toMatchObject({ status: 401 });
    const wrongKey = await auditLine('worker', (a) => a.event === 'link' && a.check === 'bad-signature', 'link with another key');
    expect(wrongKey).toMatchObject({ level: 'warn', host: HOST_A, decision: 'refused', outcome: 'error', reason: 'unauthorized' });
    await expect(RogueLink.connect(stack.url, 'res-stranger', hostCredential('res-stranger'))).rejects.toMatchObject({ status: 401 });
    expect(await auditLine('worker', (a) => a.event === 'link' && a.check === 'unknown-host', 'unknown host')).toMatchObject({ host: null, unknownHost: 'res-stranger', decision: 'refused' });
    const health = await (await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.admin}` } })).json() as { recentCalls?: Array<{ agent: string | null; host: string | null }> };
    expect(health.recentCalls).toBeDefined();
    expect(health.recentCalls!.filter((c) => c.agent === null)).toEqual([]);
  });

  it('records each session that opened and its end, with why and for how long', async () => {
    const client = await connectClient(`${stack.url}/servers/everything/mcp`, stack.tokens.alice!);
    const id = (client.transport as { sessionId?: string }).sessionId!;
    const opened = await auditLine('worker', (a) => a.event === 'session' && a.session === id, 'session opened');
    expect(opened).toMatchObject({ level: 'info', agent: 'alice', server: 'everything', host: HOST_A, route: 'passthrough', era: 'legacy', decision: 'allowed', outcome: 'ok' });
    expect(opened.ended).toBeUndefined();
    await closeClient(client);
    const ended = await auditLine('worker', (a) => a.event === 'session' && a.session === id && a.ended !== undefined, 'session ended');
    expect(ended).toMatchObject({ agent: 'alice', ended: 'closed', durationMs: expect.any(Number) });
    // Sessions are no calls: the status page's recent calls hold none of their lines.
    const health = await (await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.admin}` } })).json() as { recentCalls: Array<{ method: string | null; decision: string }> };
    expect(health.recentCalls.filter((c) => c.method === null && c.decision === 'allowed')).toEqual([]);
  });

  it('never writes an argument value or a credential, and shows the recent calls on /healthz without arguments', async () => {
    const everything = `${stack.worker.err.text}\n${stack.sidecar.err.text}`;
    expect(everything).not.toContain(SECRET_ARGUMENT);
    expect(stack.leakedSecrets()).toEqual([]);
    // Every audited worker line names its agent (or is a credential refusal or a link request), decision and duration.
    for (const line of workerAudits()) {
      expect(line.decision).toMatch(/^(allowed|denied-by-policy|refused)$/);
      expect(typeof line.durationMs).toBe('number');
      if (line.event !== 'credential' && line.event !== 'link') expect(typeof line.agent).toBe('string');
    }
    expect(sidecarAudits().length).toBeGreaterThanOrEqual(7);

    const health = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.admin}` } }).then((r) => r.json() as Promise<{ recentCalls: Array<Record<string, unknown>> }>);
    expect(health.recentCalls.length).toBeGreaterThanOrEqual(7);
    expect(health.recentCalls).toEqual(expect.arrayContaining([
      expect.objectContaining({ agent: 'alice', server: 'everything', method: 'tools/call', name: 'echo', decision: 'allowed', outcome: 'ok', traceId: AGENT_TRACE }),
      expect.objectContaining({ agent: 'bob', name: 'echo', decision: 'denied-by-policy' }),
    ]));
    expect(JSON.stringify(health)).not.toContain(SECRET_ARGUMENT);
    const bobsView = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.bob}` } }).then((r) => r.json() as Promise<{ recentCalls: Array<{ agent: string }> }>);
    expect(bobsView.recentCalls.length).toBeGreaterThan(0);
    expect(bobsView.recentCalls.every((c) => c.agent === 'bob')).toBe(true);
  });

  it('records each link that ends, with why and for how long, on both sides: the host stopping, and the worker', async () => {
    const linked = await auditLine('worker', (a) => a.event === 'link' && a.decision === 'allowed', 'host linked');
    const hostLinked = await auditLine('sidecar', (a) => a.event === 'link' && a.ended === undefined, 'link up, the host\'s side');
    expect(hostLinked).toMatchObject({ level: 'info', host: HOST_A, agent: null, server: null, decision: 'allowed', outcome: 'ok', durationMs: 0 });
    const first = stack.sidecar;
    await first.process.stop();
    const closed = await auditLine('worker', (a) => a.event === 'link' && a.ended !== undefined, 'link ended');
    expect(closed).toMatchObject({ level: 'info', host: HOST_A, agent: null, server: null, decision: 'allowed', outcome: 'ok', ended: 'closed' });
    // Up from its handshake to the sidecar's stop, which came after every test above: about the
    // time between the two lines (each written a few ms after what it records).
    expect(Math.abs(closed.durationMs - (Date.parse(closed.time) - Date.parse(linked.time)))).toBeLessThan(100);
    const stopped = audits(first.err.lines).filter((a) => a.event === 'link' && a.ended !== undefined);
    expect(stopped).toEqual([expect.objectContaining({ level: 'info', host: HOST_A, ended: 'shutdown' })]);
    expect(Math.abs(stopped[0]!.durationMs - (Date.parse(stopped[0]!.time) - Date.parse(hostLinked.time)))).toBeLessThan(100);
    stack.startSidecar();
    await stack.waitLinked();
    const before = stack.worker;
    const second = stack.sidecar;
    await stack.restartWorker('SIGTERM');
    const lines = audits(before.err.lines).filter((a) => a.event === 'link' && a.ended !== undefined);
    expect(lines.map((a) => a.ended)).toEqual(['closed', 'shutdown']);
    await stack.waitLinked();
    // The host's side: up, told of the worker's stop, up again once it dialled the new worker.
    const isLink = (l: LogLine) => l.json.msg === 'audit' && l.json.event === 'link';
    const told = await second.err.waitFor((l) => isLink(l) && l.json.ended !== undefined, 'the host\'s side of the worker\'s stop');
    await second.err.waitFor((l) => isLink(l) && l.json.ended === undefined, 'the host\'s link up again', { from: second.err.lines.indexOf(told) });
    const hostSide = audits(second.err.lines).filter((a) => a.event === 'link').map((a) => a.ended ?? 'up');
    expect(hostSide).toEqual(['up', 'closed', 'up']);
  });
});
