/**
 * The OTLP trace exporter on Cloudflare's runtime: the Workers bundle under workerd with
 * `audit.otlp` naming a real collector on 127.0.0.1 (`test/support/otlp-collector.ts`), real
 * sidecars behind it. Each call's span must reach the collector from wherever the call was
 * served: a host's object (a modern request on /servers/:name/mcp), a legacy session's object,
 * and the edge isolate (the modern /mcp aggregate), whose invocation ends with its response.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { startOtlpCollector, type OtlpCollector } from '../support/otlp-collector.ts';
import { fixtureServer } from '../support/paths.ts';
import { startWorkerdStack, type WorkerdStack } from '../support/workerd-stack.ts';
import { modernPost } from '../modern/modern-client.ts';

let stack: WorkerdStack;
let collector: OtlpCollector;
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const traced = (n: number) => ({ traceparent: `00-${TRACE.slice(0, 30)}${String(n).padStart(2, '0')}-00f067aa0ba902b7-01` });
const traceOf = (n: number) => `${TRACE.slice(0, 30)}${String(n).padStart(2, '0')}`;

beforeAll(async () => {
  collector = await startOtlpCollector();
  stack = await startWorkerdStack({
    servers: { a: { 'pid-a': fixtureServer('pid-server.mjs') }, b: { 'pid-b': fixtureServer('pid-server.mjs') } },
    worker: { audit: { otlp: { endpoint: collector.endpoint, headers: { 'x-collector-key': 'k-1' } } } },
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await collector?.close();
});

describe('the OTLP exporter on workerd', () => {
  it("exports a modern call's span from its host's object", async () => {
    const answer = await modernPost(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!, 'tools/call', { name: 'pid', arguments: {} }, { headers: traced(1) });
    expect(answer.status).toBe(200);
    const span = await collector.waitFor((s) => s.traceId === traceOf(1), 'the host object\'s span', 20_000);
    expect(span).toMatchObject({ service: 'switchyard-worker', name: 'tools/call pid' });
  });

  it("exports a legacy session's span from its session's object", async () => {
    const client = await connectClient(`${stack.url}/servers/pid-b/mcp`, stack.tokens.alice!, {}, traced(2));
    try {
      await client.callTool({ name: 'pid' });
    } finally {
      await closeClient(client);
    }
    const span = await collector.waitFor((s) => s.traceId === traceOf(2) && s.name === 'tools/call pid', 'the session object\'s span', 20_000);
    expect(span.service).toBe('switchyard-worker');
  });

  it('exports the modern aggregate\'s spans from the edge isolate, after its response', async () => {
    const answer = await modernPost(`${stack.url}/mcp`, stack.tokens.alice!, 'tools/call', { name: 'pid-b__pid', arguments: {} }, { headers: traced(3) });
    expect(answer.status).toBe(200);
    const span = await collector.waitFor((s) => s.traceId === traceOf(3) && s.name === 'tools/call pid', 'the edge\'s span', 20_000);
    expect(span.service).toBe('switchyard-worker');
    expect(collector.requests.every((h) => h['x-collector-key'] === 'k-1')).toBe(true);
  });
});
