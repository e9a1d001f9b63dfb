/**
 * A real OTLP/HTTP trace collector on 127.0.0.1 for tests: it takes `POST /v1/traces` with the
 * JSON encoding, decodes every `ExportTraceServiceRequest` into flat spans (with the resource's
 * `service.name`), and can be told to fail (answer 503), to hang (never answer), to redirect, or to
 * be down (closed) to test what an exporter does then. Waiting is event-driven: `waitFor` resolves when a matching span arrives.
 *
 * @module
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
}

export interface OtlpCollector {
  /** The traces endpoint, `http://127.0.0.1:<port>/v1/traces`. */
  readonly endpoint: string;
  readonly spans: CollectedSpan[];
  /** Headers of every export request, in order. */
  readonly requests: IncomingHttpHeaders[];
  /** While true, every export is answered 503 (with `Retry-After: 0`: an exporter's one retry waits its least). */
  failing: boolean;
  /** Exports still to be answered 429 (`Retry-After: 0`) before any other answer. */
  throttled: number;
  /** While true, every export is read and never answered (until `close`). */
  hanging: boolean;
  /** While set, every export is answered `307 Location: redirectTo`. */
  redirectTo: string | undefined;
  waitFor(match: (span: CollectedSpan) => boolean, what: string, timeoutMs?: number): Promise<CollectedSpan>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string; boolValue?: boolean; doubleValue?: number };

function decodeValue(value: AnyValue): unknown {
  return value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue ?? value.doubleValue);
}

function decode(body: unknown): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  for (const resourceSpans of (body as { resourceSpans?: any[] }).resourceSpans ?? []) {
    const resource = Object.fromEntries(((resourceSpans.resource?.attributes ?? []) as Array<{ key: string; value: AnyValue }>).map((a) => [a.key, decodeValue(a.value)]));
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        out.push({
          service: String(resource['service.name']),
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? null,
          name: span.name,
          startTimeUnixNano: span.startTimeUnixNano,
          endTimeUnixNano: span.endTimeUnixNano,
          attributes: Object.fromEntries(((span.attributes ?? []) as Array<{ key: string; value: AnyValue }>).map((a) => [a.key, decodeValue(a.value)])),
          status: span.status ?? {},
        });
      }
    }
  }
  return out;
}

/** Starts a collector on a free port (or on `port`, to bring one back up where it was). */
export async function startOtlpCollector(port = 0): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const requests: IncomingHttpHeaders[] = [];
  const waiters = new Set<{ match: (span: CollectedSpan) => boolean; resolve: (span: CollectedSpan) => void }>();
  const collector: { failing: boolean; throttled: number; hanging: boolean; redirectTo: string | undefined } = { failing: false, throttled: 0, hanging: false, redirectTo: undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push(req.headers);
      if (collector.throttled > 0) {
        collector.throttled--;
        return void res.writeHead(429, { 'retry-after': '0' }).end();
      }
      if (collector.failing) return void res.writeHead(503, { 'retry-after': '0' }).end();
      if (collector.hanging) return;
      if (collector.redirectTo !== undefined) return void res.writeHead(307, { location: collector.redirectTo }).end();
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !(req.headers['content-type'] ?? '').startsWith('application/json')) return void res.writeHead(400).end();
      let decoded: CollectedSpan[];
      try {
        decoded = decode(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        return void res.writeHead(400).end();
      }
      spans.push(...decoded);
      for (const span of decoded) {
        for (const waiter of waiters) {
          if (waiter.match(span)) {
            waiters.delete(waiter);
            waiter.resolve(span);
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as AddressInfo;
  return Object.assign(collector, {
    endpoint: `http://127.0.0.1:${bound}/v1/traces`,
    spans,
    requests,
    waitFor(match: (span: CollectedSpan) => boolean, what: string, timeoutMs = 15_000): Promise<CollectedSpan> {
      const seen = spans.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<CollectedSpan>((resolve, reject) => {
        const waiter = { match, resolve: (span: CollectedSpan) => (clearTimeout(timer), resolve(span)) };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`The collector never received ${what}; it has ${spans.length} spans: ${spans.map((s) => `${s.service} ${s.name}`).join(', ')}`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  });
}
