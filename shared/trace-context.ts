/**
 * W3C Trace Context (`traceparent`, version 00) as Switchyard carries it: from the agent's HTTP
 * header (or a new trace when it sent none), over the link in the channel-open request, and into
 * every forwarded request's `params._meta.traceparent`, the key MCP 2026-07-28 reserves for
 * OpenTelemetry trace context (basic/index.mdx, "OpenTelemetry trace context"). Each hop keeps
 * the trace id and names its own span as the parent of the next, so the worker's and the
 * sidecar's audit lines share one trace id.
 *
 * A malformed or all-zero header is ignored, as the W3C spec says a receiver must, and a new trace
 * is started in its place. Web-standard only (`crypto.getRandomValues`).
 *
 * @module
 */
import * as z from './zod.ts';

/** The `_meta` key of 2026-07-28 (and the HTTP header name) for the trace context. */
export const TRACEPARENT_KEY = 'traceparent';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A `traceparent` value of version 00 with non-zero ids; for the channel request (zod at every boundary). */
export const TraceparentSchema = z.string().check(
  z.regex(TRACEPARENT, { message: 'must be a W3C traceparent: "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lowercase', abort: true }),
  z.refine((value) => parseTraceparent(value) !== null, 'must not have an all-zero trace id or parent id'),
);

/** What `TraceparentSchema` accepts, without a zod parse (the worker checks its own traceparents per call). */
export function isTraceparent(value: unknown): boolean {
  return typeof value === 'string' && TRACEPARENT.test(value) && parseTraceparent(value) !== null;
}

export interface TraceContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** The span the next hop is a child of: 16 lowercase hex digits. */
  spanId: string;
  /** Trace flags, 2 hex digits (`01` = sampled). */
  flags: string;
}

/** A span of this hop: its own id, and the id of the span it is a child of (null for a new trace). */
export interface Span extends TraceContext {
  parentSpanId: string | null;
}

/** Parses a `traceparent` value; null when it is absent, malformed or has a zero id. */
export function parseTraceparent(value: unknown): TraceContext | null {
  if (typeof value !== 'string') return null;
  const match = TRACEPARENT.exec(value.trim());
  if (match === null) return null;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, flags };
}

export function formatTraceparent(context: TraceContext): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`;
}

/** A child span of `parent`, or the root span of a new (sampled) trace when there is none. */
export function childSpan(parent: TraceContext | null): Span {
  return parent === null
    ? { traceId: randomHex(16), spanId: randomHex(8), flags: '01', parentSpanId: null }
    : { traceId: parent.traceId, spanId: randomHex(8), flags: parent.flags, parentSpanId: parent.spanId };
}

/** The request's `params._meta.traceparent`, parsed; null when there is none or it is malformed. */
export function traceparentOfParams(params: unknown): TraceContext | null {
  if (typeof params !== 'object' || params === null) return null;
  const meta = (params as { _meta?: unknown })._meta;
  return typeof meta === 'object' && meta !== null ? parseTraceparent((meta as Record<string, unknown>)[TRACEPARENT_KEY]) : null;
}

/** A copy of `message` (a JSON-RPC request) whose `params._meta.traceparent` names `span`. */
export function withTraceparent<M extends { params?: unknown }>(message: M, span: TraceContext): M {
  const params = typeof message.params === 'object' && message.params !== null ? (message.params as Record<string, unknown>) : {};
  const meta = typeof params._meta === 'object' && params._meta !== null ? (params._meta as Record<string, unknown>) : {};
  return { ...message, params: { ...params, _meta: { ...meta, [TRACEPARENT_KEY]: formatTraceparent(span) } } };
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** Random bytes drawn 4 KiB at a time: one `getRandomValues` per call is most of a span's cost. */
const pool = new Uint8Array(4096);
let used = pool.length;

function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  let hex = HEX[pool[used]! | 1]!; // never all zero
  for (let i = 1; i < bytes; i++) hex += HEX[pool[used + i]!]!;
  used += bytes;
  return hex;
}
