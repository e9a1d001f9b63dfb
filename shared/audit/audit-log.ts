/**
 * AuditLog: where audit records go on one side (worker or sidecar). Each record becomes one JSON
 * line in the structured-log format (`time`, `level`, `msg: "audit"`, `component`, then the
 * record), written by `write`: stderr beside the structured logs unless the operator named a
 * file. Allowed calls and requests without any credential are `info`; refusals, denials and
 * refused credentials `warn`. On stderr a
 * line follows the log level like every other line (so `npm start`, quiet at `warn`, shows only
 * refusals); a file gets every line (`stderrAuditWriter`, and the runtimes' file writers).
 *
 * A record with a trace id is also handed to `spans` (the OTLP exporter, when configured) and
 * every record to `onRecord` (the worker's recent-calls buffer). Nothing here throws into a call:
 * a failing sink is counted and skipped, and a line that cannot be written (a full disk) is said
 * on `log` at the 1st, 10th, 100th, … of a streak, and again when lines are written again.
 *
 * @module
 */
import type { AuditRecord } from './audit-record.ts';
import { isLogWorthy, type Logger } from '../log.ts';

/** A finished span, as the OTLP exporter takes it. */
export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  /** Epoch milliseconds. */
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  error: string | null;
}

export interface SpanSink {
  export(span: FinishedSpan): void;
}

export type AuditLevel = 'info' | 'warn';
/**
 * Writes one audit line. `drops`, when the writer has one, says which lines it would throw away,
 * so they are never built: serializing the line of every allowed call for a writer at `warn` was
 * a fifth of an audit record's cost (issue 17).
 */
export type AuditWrite = ((line: string, level: AuditLevel) => void) & { readonly drops?: (level: AuditLevel) => boolean };

/** A writer to a log stream that drops `info` lines when the log level is above it. */
export function levelFilteredWriter(write: (line: string) => void, logLevel: string): AuditWrite {
  const quiet = logLevel === 'warn' || logLevel === 'error';
  const onlyErrors = logLevel === 'error';
  const drops = (level: AuditLevel) => onlyErrors || (quiet && level === 'info');
  return Object.assign(
    (line: string, level: AuditLevel) => {
      if (drops(level)) return;
      write(line);
    },
    { drops },
  );
}

export interface AuditLogOptions {
  /** `worker` or `sidecar`: the `component` of every line. */
  component: string;
  /** Writes one line (no newline) of `level`. */
  write: AuditWrite;
  /** Fields on every line (the sidecar's `entity-id`). */
  fields?: Record<string, unknown>;
  /** Keep argument values in records (`include-arguments`); off by default. */
  includeArguments?: boolean;
  spans?: SpanSink;
  onRecord?: (record: AuditRecord & { time: string }) => void;
  /** The clock calls are timed with and lines dated by (tests); by default the monotonic clock times them and the wall clock dates them. */
  now?: () => number;
  /** Where a line that cannot be written is said. */
  log?: Logger;
}

export class AuditLog {
  /** Set again by a config reload: the one audit setting that applies without a restart. */
  includeArguments: boolean;
  readonly #options: AuditLogOptions;
  /**
   * The keys every line has after `time` and `level`, serialized once (`"msg":"audit",…`); null
   * with `fields`, whose keys may repeat one of the line's, which one object of them all would
   * overwrite in place.
   */
  readonly #head: string | null;
  #failedWrites = 0;
  /** Lines lost since the last one written. */
  #lostInStreak = 0;

  constructor(options: AuditLogOptions) {
    this.#options = options;
    this.includeArguments = options.includeArguments === true;
    this.#head = options.fields === undefined || Object.keys(options.fields).length === 0 ? `"msg":"audit","component":${JSON.stringify(options.component)}` : null;
  }

  /**
   * Epoch milliseconds on the monotonic clock, sub-millisecond (durations of fast calls are not all
   * 0): what calls are timed with, so a clock step during a call is not its duration. A record's
   * times are put on the wall clock when it is written (`record`).
   */
  now(): number {
    return this.#options.now?.() ?? performance.timeOrigin + performance.now();
  }

  get failedWrites(): number {
    return this.#failedWrites;
  }

  record(record: AuditRecord, monotonicStartMs = this.now() - record.durationMs): void {
    const durationMs = roundDuration(record.durationMs);
    // The monotonic clock stops while a laptop sleeps and never follows a clock set right (review s22).
    const startMs = this.#options.now === undefined ? monotonicStartMs + wallClockMs() - this.now() : monotonicStartMs;
    const time = isoTime(startMs + durationMs);
    const level = record.decision === 'allowed' || record.reason === 'no-credential' ? 'info' : 'warn';
    const write = this.#options.write;
    if (write.drops?.(level) !== true) {
      try {
        write(this.#line(time, level, record, durationMs), level);
        if (this.#lostInStreak > 0) this.#written();
      } catch (error) {
        this.#failedWrites++;
        this.#lost(error);
      }
    }
    try {
      this.#options.onRecord?.(Object.assign({}, record, { durationMs, time }));
    } catch {
      this.#failedWrites++;
    }
    const spans = this.#options.spans;
    if (spans !== undefined && record.traceId !== undefined && record.spanId !== undefined) {
      spans.export({
        traceId: record.traceId,
        spanId: record.spanId,
        parentSpanId: record.parentSpanId ?? null,
        name: [record.method ?? record.event, record.tool ?? record.prompt ?? record.uri].filter((p) => p !== undefined).join(' '),
        startMs,
        endMs: startMs + durationMs,
        attributes: spanAttributes(this.#options.component, record),
        error: record.outcome === 'error' ? (record.reason ?? 'error') : null,
      });
    }
  }

  #lost(error: unknown): void {
    if (!isLogWorthy(++this.#lostInStreak)) return;
    // The log may share the audit's stream (stderr), which may be what fails: never into a call.
    try {
      this.#options.log?.error('Audit lines are being lost: the audit log cannot be written; calls go on, and this is said again at the 10th, 100th, … line lost until a line is written', {
        why: (error instanceof Error ? error.message : String(error)).slice(0, 200),
        lost: this.#lostInStreak,
      });
    } catch {}
  }

  #written(): void {
    const lost = this.#lostInStreak;
    this.#lostInStreak = 0;
    try {
      this.#options.log?.info('Audit lines are written again', { lost });
    } catch {}
  }

  /**
   * `{ time, level, msg: "audit", component, ...fields, ...record }` as JSON, `durationMs` rounded
   * in its place. The record's keys are fixed and name no secret (JSON.stringify drops the absent
   * ones), so the logger's key redaction has nothing to do here; argument values are the
   * operator's choice. Put together from the serialized head and the record's own JSON rather than
   * from one object of them all: the copy and the second serialization of the same keys were most
   * of a line's cost (issue 17).
   */
  #line(time: string, level: AuditLevel, record: AuditRecord, durationMs: number): string {
    const exact = record.durationMs === durationMs ? record : Object.assign({}, record, { durationMs });
    if (this.#head !== null) return `{"time":"${time}","level":"${level}",${this.#head},${JSON.stringify(exact).slice(1)}`;
    // `Object.assign` rather than spreads: the same keys in the same order (every key here is this
    // code's own, none is `__proto__`), but V8 built `{ ...a, ...b, k }` through its slow path.
    return JSON.stringify(Object.assign({ time, level, msg: 'audit', component: this.#options.component }, this.#options.fields, exact));
  }
}

/** The wall clock's offset from `performance.now()`, as last seen. */
let wallOffset = Date.now() - performance.now();

/**
 * Epoch milliseconds: the wall clock, with `performance.now()`'s fraction of a millisecond. The
 * monotonic clock alone (`timeOrigin + now()`) stops while a laptop sleeps and never follows a
 * clock set right, so a sidecar's lines fell hours behind its logs (review s22); the offset is
 * taken again whenever the wall clock has moved from it by more than its own millisecond steps.
 * Times of records only: durations are the monotonic clock's.
 */
export function wallClockMs(): number {
  const monotonic = performance.now();
  const offset = Date.now() - monotonic;
  if (offset - wallOffset > 1 || wallOffset - offset > 1) {
    // Taken again only from a reading the scheduler did not split: a pause between the two clocks
    // overstates the offset by its length, and the next true reading then took the time back.
    if (performance.now() - monotonic < 0.5) wallOffset = offset;
  }
  return wallOffset + monotonic;
}

/** A duration as records carry it: to a hundredth of a millisecond. */
export function roundDuration(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/** The last second's `toISOString()` up to its milliseconds: most lines of a second share it. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/** `new Date(ms).toISOString()`, from the cached second: the Date and its formatting were a microsecond or more a line. */
export function isoTime(ms: number): string {
  const whole = Math.trunc(ms); // as `new Date` takes a time value
  const second = Math.floor(whole / 1000);
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4); // `…T19:46:07.`: the milliseconds and `Z` follow
    isoSecond = second;
  }
  const milli = whole - second * 1000;
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/** OpenTelemetry attributes of a record (semantic conventions for MCP where they exist). */
function spanAttributes(component: string, record: AuditRecord): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean | undefined | null> = {
    'switchyard.component': component,
    'switchyard.decision': record.decision,
    'switchyard.agent': record.agent,
    'switchyard.server': record.server,
    'switchyard.host': record.host,
    'mcp.method.name': record.method,
    'gen_ai.tool.name': record.tool,
    'gen_ai.prompt.name': record.prompt,
    'mcp.resource.uri': record.uri,
    'error.type': record.outcome === 'error' ? record.reason : undefined,
  };
  return Object.fromEntries(Object.entries(attributes).filter((entry): entry is [string, string | number | boolean] => entry[1] !== undefined && entry[1] !== null));
}

/** An audit log that writes nothing (in-process tests and callers with no audit configured). */
export const silentAuditLog = new AuditLog({ component: 'none', write: () => {} });
