/**
 * OtlpTraceExporter: sends finished spans to an OpenTelemetry collector over OTLP/HTTP with the
 * JSON encoding (`POST <endpoint>`, `content-type: application/json`, an
 * `ExportTraceServiceRequest`: hex ids, nanosecond times as strings).
 *
 * It never holds a call up: `export` only queues. Spans are sent in batches (`maxBatch`, or
 * whatever is queued `flushMs` after the first), one request at a time; the queue is bounded
 * (`maxQueue`), and past it a span is dropped. A batch the collector does not take (unreachable,
 * an error status, after one retry of a retryable one, no answer within `timeoutMs`) is dropped too: a collector that is down must not
 * grow the worker's memory. Drops are counted (`dropped`) and warned about with the running count
 * at the 1st, 10th, 100th, … drop of a failure streak, not once per span; `close` says the total.
 * A redirect is followed only within the endpoint's origin: the headers carry the collector's key.
 * On shutdown `close` gives the collector a bounded time: one that hangs must not hold an exit.
 *
 * Web-standard (`fetch`, timers), so the worker on any runtime and the sidecar share it.
 *
 * @module
 */
import type { Logger } from '../log.ts';
import { unrefTimer } from '../unref-timer.ts';
import { redactUrl, redactUrlsIn } from '../url-redaction.ts';
import { withoutHeaderValues } from '../fetch-error-text.ts';
import { fetchWithinOrigin, redirectNote } from '../origin-bound-fetch.ts';
import { isLogWorthy } from '../log.ts';
import type { FinishedSpan, SpanSink } from './audit-log.ts';

export interface OtlpTraceExporterOptions {
  endpoint: string;
  headers?: Record<string, string>;
  /** `service.name` of the resource: `switchyard-worker` or `switchyard-sidecar`. */
  serviceName: string;
  log: Logger;
  fetch?: typeof fetch;
  /** Most spans queued; 2048 by default. */
  maxQueue?: number;
  /** Most spans per request; 256 by default. */
  maxBatch?: number;
  /** Longest a span waits for its batch, in ms; 1000 by default. */
  flushMs?: number;
  /** Longest wait for the collector, in ms; 10 000 by default. */
  timeoutMs?: number;
}

const SPAN_KIND_INTERNAL = 1;
/** How long `close` gives the collector by default: within every supervisor's grace before a SIGKILL. */
export const CLOSE_WITHIN_MS = 2000;
const STATUS_OK = 1;
const STATUS_ERROR = 2;

export class OtlpTraceExporter implements SpanSink {
  readonly #options: OtlpTraceExporterOptions;
  readonly #queue: FinishedSpan[] = [];
  readonly #maxQueue: number;
  readonly #maxBatch: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #sending: Promise<void> | null = null;
  #dropped = 0;
  #sent = 0;
  /** Drops in the current failure streak (0: exports go through). */
  #streak = 0;
  /** The request on its way, to cut short when `flush`'s time is up. */
  #inFlight: AbortController | undefined;

  constructor(options: OtlpTraceExporterOptions) {
    this.#options = options;
    this.#maxQueue = options.maxQueue ?? 2048;
    this.#maxBatch = options.maxBatch ?? 256;
  }

  /** Spans dropped so far (queue full, or a batch the collector did not take). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Spans the collector accepted so far. */
  get sent(): number {
    return this.#sent;
  }

  export(span: FinishedSpan): void {
    if (this.#queue.length >= this.#maxQueue) {
      this.#drop(1, 'the export queue is full');
      return;
    }
    this.#queue.push(span);
    if (this.#queue.length >= this.#maxBatch) this.#kick();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#kick(), this.#options.flushMs ?? 1000);
      unrefTimer(this.#timer);
    }
  }

  /**
   * Sends everything queued now; resolves when the queue is empty or its batches were dropped, or
   * after `withinMs`, when the request on its way is cut short and what is left is dropped, counted.
   */
  async flush(withinMs = Infinity): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<'late'>((resolve) => {
      if (Number.isFinite(withinMs)) timer = setTimeout(() => resolve('late'), withinMs);
    });
    try {
      while (this.#queue.length > 0 || this.#sending !== null) {
        if (this.#sending === null) this.#kick();
        if ((await Promise.race([this.#sending, late])) !== 'late') continue;
        const left = this.#queue.splice(0);
        if (left.length > 0) this.#drop(left.length, 'the collector did not take them before shutdown');
        this.#inFlight?.abort();
        await this.#sending;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** On shutdown: flushes for at most `withinMs`, then says how many spans were dropped in all, if any. */
  async close(withinMs = CLOSE_WITHIN_MS): Promise<void> {
    await this.flush(withinMs);
    if (this.#dropped > 0) this.#options.log.warn('OTLP exporter closed: spans were dropped', { sent: this.#sent, dropped: this.#dropped });
  }

  #kick(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#sending !== null || this.#queue.length === 0) return;
    const batch = this.#queue.splice(0, this.#maxBatch);
    this.#sending = this.#send(batch).finally(() => {
      this.#sending = null;
      if (this.#queue.length >= this.#maxBatch) this.#kick();
      else if (this.#queue.length > 0 && this.#timer === undefined) {
        this.#timer = setTimeout(() => this.#kick(), this.#options.flushMs ?? 1000);
        unrefTimer(this.#timer);
      }
    });
  }

  async #send(batch: FinishedSpan[]): Promise<void> {
    const doFetch = this.#options.fetch ?? fetch;
    const timeout = new AbortController();
    this.#inFlight = timeout;
    const timer = setTimeout(() => timeout.abort(), this.#options.timeoutMs ?? 10_000);
    unrefTimer(timer);
    try {
      const body = JSON.stringify(exportRequest(this.#options.serviceName, batch));
      let response: Response;
      for (let attempt = 0; ; attempt++) {
        response = await fetchWithinOrigin(doFetch, new URL(this.#options.endpoint), {
          method: 'POST',
          headers: { ...this.#options.headers, 'content-type': 'application/json' },
          body,
          signal: timeout.signal,
        });
        await response.body?.cancel().catch(() => {});
        // OTLP/HTTP's retryable answers (a collector shedding load): once more, after its Retry-After within bounds.
        if (attempt > 0 || !RETRYABLE.has(response.status)) break;
        await delay(retryAfterMs(response.headers.get('retry-after')), timeout.signal);
      }
      if (!response.ok) throw new Error(`the collector answered HTTP ${response.status}${redirectNote(response)}`);
      this.#sent += batch.length;
      if (this.#streak > 0) this.#options.log.info('OTLP exports resumed', { dropped: this.#dropped });
      this.#streak = 0;
    } catch (error) {
      const why = timeout.signal.aborted ? 'the collector did not answer in time' : error instanceof Error ? error.message : String(error);
      this.#drop(batch.length, why);
    } finally {
      clearTimeout(timer);
      this.#inFlight = undefined;
    }
  }

  #drop(count: number, why: string): void {
    this.#dropped += count;
    if (!isLogWorthy(++this.#streak)) return;
    // A collector's key may ride in its URL, and fetch's errors quote the URL whole.
    this.#options.log.warn('OTLP spans dropped: the trace collector is not taking them; calls go on, and this is said again at the 10th, 100th, … failure until exports resume', {
      endpoint: redactUrl(this.#options.endpoint),
      // fetch quotes a header value it refuses (a stray line break in a pasted key).
      why: withoutHeaderValues(redactUrlsIn(why), this.#options.headers).slice(0, 200),
      dropped: this.#dropped,
    });
  }
}

/** What OTLP/HTTP has a client retry: too many requests, and a gateway or collector that is briefly down. */
const RETRYABLE = new Set([429, 502, 503, 504]);

/** `Retry-After` in seconds, kept within 0.1 to 2 s (a retry must fit the request's time); 0.5 s without one. */
export function retryAfterMs(header: string | null): number {
  const seconds = header !== null && /^\d+(\.\d+)?$/.test(header.trim()) ? Number(header) : 0.5;
  return Math.min(Math.max(seconds * 1000, 100), 2000);
}

/** Resolves after `ms`, or rejects when `signal` aborts first. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    const aborted = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', aborted, { once: true });
  });
}

/** An OTLP `ExportTraceServiceRequest` in its JSON encoding. */
export function exportRequest(serviceName: string, spans: readonly FinishedSpan[]): unknown {
  return {
    resourceSpans: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: serviceName } }] },
      scopeSpans: [{
        scope: { name: 'switchyard' },
        spans: spans.map((span) => ({
          traceId: span.traceId,
          spanId: span.spanId,
          ...(span.parentSpanId !== null ? { parentSpanId: span.parentSpanId } : {}),
          name: span.name,
          kind: SPAN_KIND_INTERNAL,
          startTimeUnixNano: nanos(span.startMs),
          endTimeUnixNano: nanos(span.endMs),
          attributes: Object.entries(span.attributes).map(([key, value]) => ({ key, value: anyValue(value) })),
          status: span.error === null ? { code: STATUS_OK } : { code: STATUS_ERROR, message: span.error },
        })),
      }],
    }],
  };
}

function nanos(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString();
}

function anyValue(value: string | number | boolean): Record<string, unknown> {
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { stringValue: value };
}
