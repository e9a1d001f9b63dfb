import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { startOtlpCollector, type OtlpCollector } from '../../test/support/otlp-collector.ts';
import type { FinishedSpan } from './audit-log.ts';
import { OtlpTraceExporter, retryAfterMs } from './otlp-exporter.ts';

let collector: OtlpCollector | undefined;
afterEach(async () => {
  await collector?.close();
  collector = undefined;
});

function span(n: number, error: string | null = null): FinishedSpan {
  const hex = n.toString(16).padStart(16, '0');
  return { traceId: `${'a'.repeat(16)}${hex}`, spanId: hex, parentSpanId: n % 2 === 0 ? null : 'b'.repeat(16), name: `tools/call t${n}`, startMs: 1_700_000_000_000 + n, endMs: 1_700_000_000_000.5 + n + 2, attributes: { 'gen_ai.tool.name': `t${n}`, 'switchyard.n': n, ok: error === null }, error };
}

function logs() {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, log: createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line)) }) };
}

describe('OtlpTraceExporter against a real local collector', () => {
  it('sends batches of OTLP JSON the collector decodes: ids, names, nanosecond times, attributes, status, headers', async () => {
    collector = await startOtlpCollector();
    const { log } = logs();
    const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, headers: { 'x-api-key': 'k-123' }, serviceName: 'switchyard-worker', log, maxBatch: 2, flushMs: 10 });
    for (let n = 1; n <= 5; n++) exporter.export(span(n, n === 3 ? 'host-offline' : null));
    await exporter.flush();
    expect(collector.spans.map((s) => s.name)).toEqual(['tools/call t1', 'tools/call t2', 'tools/call t3', 'tools/call t4', 'tools/call t5']);
    expect(collector.requests.length).toBe(3); // batches of 2, 2, 1
    expect(collector.requests[0]!['x-api-key']).toBe('k-123');
    const [first, second, third] = collector.spans;
    expect(first).toMatchObject({ service: 'switchyard-worker', traceId: span(1).traceId, spanId: span(1).spanId, parentSpanId: 'b'.repeat(16), startTimeUnixNano: '1700000000001000000', endTimeUnixNano: '1700000000003500000', status: { code: 1 } });
    expect(first!.attributes).toEqual({ 'gen_ai.tool.name': 't1', 'switchyard.n': 1, ok: true });
    expect(second!.parentSpanId).toBeNull();
    expect(third!.status).toEqual({ code: 2, message: 'host-offline' });
    expect(exporter.sent).toBe(5);
    expect(exporter.dropped).toBe(0);
  });

  it('never blocks a call and drops with one counted warning while the collector is down, then resumes', async () => {
    collector = await startOtlpCollector();
    collector.failing = true;
    const { lines, log } = logs();
    const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, serviceName: 'switchyard-sidecar', log, maxBatch: 2, flushMs: 10 });
    for (let n = 1; n <= 4; n++) expect(exporter.export(span(n))).toBeUndefined(); // synchronous: nothing to await
    await exporter.flush();
    expect(exporter.dropped).toBe(4);
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: expect.stringContaining('OTLP spans dropped'), why: 'the collector answered HTTP 503', endpoint: collector.endpoint });

    collector.failing = false;
    exporter.export(span(5));
    await exporter.flush();
    expect(collector.spans.map((s) => s.name)).toEqual(['tools/call t5']);
    expect(lines.filter((l) => l.msg === 'OTLP exports resumed')).toEqual([expect.objectContaining({ dropped: 4 })]);
  });

  it('drops past the bounded queue and when nothing listens, counting every span', async () => {
    collector = await startOtlpCollector();
    const endpoint = collector.endpoint;
    await collector.close();
    collector = undefined;
    const { lines, log } = logs();
    const exporter = new OtlpTraceExporter({ endpoint, serviceName: 'switchyard-worker', log, maxQueue: 3, maxBatch: 100, flushMs: 5 });
    for (let n = 1; n <= 5; n++) exporter.export(span(n));
    expect(exporter.dropped).toBe(2); // the queue holds 3
    await exporter.flush();
    expect(exporter.dropped).toBe(5);
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
  });

  it('names the collector without the credentials its URL carries, and keeps them out of why the export failed', async () => {
    collector = await startOtlpCollector();
    collector.failing = true;
    const base = new URL(collector.endpoint);
    const withQuery = `${collector.endpoint}?api_key=QUERY-SECRET#FRAGMENT-SECRET`;
    const withUser = `http://svc:USER-SECRET@${base.host}${base.pathname}?api_key=QUERY-SECRET`;
    const warnings: Array<Record<string, unknown>> = [];
    for (const endpoint of [withQuery, withUser]) {
      const { lines, log } = logs();
      const exporter = new OtlpTraceExporter({ endpoint, serviceName: 'switchyard-worker', log, flushMs: 5 });
      exporter.export(span(1));
      await exporter.flush();
      expect(exporter.dropped).toBe(1);
      warnings.push(...lines.filter((l) => l.level === 'warn'));
    }
    expect(warnings).toEqual([
      expect.objectContaining({ endpoint: `${collector.endpoint}?[redacted]#[redacted]`, why: 'the collector answered HTTP 503' }),
      expect.objectContaining({ endpoint: `http://[redacted]@${base.host}${base.pathname}?[redacted]` }),
    ]);
    for (const secret of ['QUERY-SECRET', 'FRAGMENT-SECRET', 'USER-SECRET']) expect(JSON.stringify(warnings)).not.toContain(secret);
  });

  it('keeps a header value fetch refuses out of why the export failed (review s19: a key pasted with a line break was quoted whole)', async () => {
    collector = await startOtlpCollector();
    const warned: Array<Record<string, unknown>> = [];
    for (const value of ['sk-SECRET123\r\nX: y', 'sk-SECRET\u0000789']) {
      const { lines, log } = logs();
      const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, headers: { 'x-api-key': value }, serviceName: 'switchyard-worker', log, flushMs: 5 });
      exporter.export(span(1));
      await exporter.flush();
      expect(exporter.dropped).toBe(1);
      warned.push(...lines.filter((l) => l.level === 'warn'));
    }
    expect(warned).toHaveLength(2);
    expect(JSON.stringify(warned)).not.toContain('SECRET');
  });

  it('warns again at the 10th failure of a streak with the running count, and says the total on close', async () => {
    collector = await startOtlpCollector();
    collector.failing = true;
    const { lines, log } = logs();
    const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, serviceName: 'switchyard-worker', log, maxBatch: 1, flushMs: 5 });
    for (let n = 1; n <= 12; n++) exporter.export(span(n));
    await exporter.flush(); // every batch tried: close's own bound is another test's
    await exporter.close();
    expect(lines.filter((l) => l.level === 'warn' && String(l.msg).startsWith('OTLP spans dropped')).map((l) => l.dropped)).toEqual([1, 10]);
    expect(lines.filter((l) => l.msg === 'OTLP exporter closed: spans were dropped')).toEqual([expect.objectContaining({ sent: 0, dropped: 12 })]);
  });

  it('sends a batch again once when the collector sheds load (429), and counts it sent (review s22: dropped at once)', async () => {
    collector = await startOtlpCollector();
    collector.throttled = 1;
    const { lines, log } = logs();
    const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, serviceName: 'switchyard-worker', log, flushMs: 5 });
    exporter.export(span(1));
    await exporter.flush();
    expect([collector.requests.length, exporter.sent, exporter.dropped]).toEqual([2, 1, 0]);
    expect(collector.spans.map((s) => s.name)).toEqual(['tools/call t1']);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('waits what Retry-After says before its retry, within 0.1 to 2 s', () => {
    expect([retryAfterMs('1'), retryAfterMs('0'), retryAfterMs('120'), retryAfterMs(null), retryAfterMs('Wed, 21 Oct 2026 07:28:00 GMT')]).toEqual([1000, 100, 2000, 500, 500]);
  });

  it('lets a collector that never answers hold its close only for the time it is given, dropping what is left, counted', async () => {
    collector = await startOtlpCollector();
    collector.hanging = true;
    const { lines, log } = logs();
    // Each request may wait 60 s: a close that waited for every batch would take 20 minutes.
    const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, serviceName: 'switchyard-sidecar', log, maxBatch: 1, flushMs: 5, timeoutMs: 60_000 });
    for (let n = 1; n <= 20; n++) exporter.export(span(n));
    await exporter.close(100);
    expect(exporter.dropped).toBe(20);
    expect(exporter.sent).toBe(0);
    expect(collector.requests.length).toBeLessThanOrEqual(1);
    expect(lines.filter((l) => l.msg === 'OTLP exporter closed: spans were dropped')).toEqual([expect.objectContaining({ dropped: 20 })]);
  });

  it('never follows a redirect to another origin, which would hand it the collector key (review s22)', async () => {
    collector = await startOtlpCollector();
    const elsewhere = await startOtlpCollector();
    try {
      collector.redirectTo = elsewhere.endpoint.replace('127.0.0.1', 'localhost');
      const { lines, log } = logs();
      const exporter = new OtlpTraceExporter({ endpoint: collector.endpoint, headers: { 'x-honeycomb-team': 'HC-SECRET-KEY' }, serviceName: 'switchyard-worker', log, flushMs: 5 });
      exporter.export(span(1));
      await exporter.flush();
      expect(elsewhere.requests).toEqual([]);
      expect(exporter.dropped).toBe(1);
      expect(lines.find((l) => l.level === 'warn')).toMatchObject({ why: "the collector answered HTTP 307 (a redirect out of the server's origin, not followed)" });
    } finally {
      await elsewhere.close();
    }
  });
});
