/**
 * LineLog: the lines a child process writes on one stream, each stamped with when this test
 * process received it, parsed as JSON when they are JSON (the worker and the sidecar log JSON
 * lines). Waiting is event-driven, not polled, so a timestamp taken when a wait resolves is the
 * arrival time of the line: the liveness bounds of the resilience suite (2 s) are measured
 * between such arrival times and must not carry polling slack.
 *
 * @module
 */
import type { Readable } from 'node:stream';

export interface LogLine {
  /** `Date.now()` when the line arrived here. */
  at: number;
  text: string;
  /** The parsed JSON object, or `{}` for a line that is not a JSON object. */
  json: Record<string, unknown>;
}

export type LineMatch = (line: LogLine) => boolean;

/** Matches a JSON log line by its `msg`, optionally with more fields. */
export const msg = (text: string, fields: Record<string, unknown> = {}): LineMatch => (line) =>
  line.json.msg === text && Object.entries(fields).every(([k, v]) => line.json[k] === v);

export class LineLog {
  readonly lines: LogLine[] = [];
  readonly #waiters = new Set<{ match: LineMatch; resolve: (line: LogLine) => void }>();
  #partial = '';
  #ended = false;
  readonly #onEnd = new Set<() => void>();

  /** Starts collecting `stream` (already set to utf8 or not; both work). */
  constructor(stream: Readable) {
    stream.on('data', (chunk: string | Buffer) => this.#take(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
    stream.once('close', () => {
      this.#ended = true;
      for (const end of this.#onEnd) end();
    });
  }

  get text(): string {
    return this.lines.map((l) => l.text).join('\n') + (this.#partial === '' ? '' : `\n${this.#partial}`);
  }

  /** Lines matching `match` so far. */
  filter(match: LineMatch): LogLine[] {
    return this.lines.filter(match);
  }

  /**
   * The first line at or after index `from` matching `match`; waits for it up to `timeoutMs`.
   * Rejects when the stream ends or time runs out, quoting the end of the log.
   */
  waitFor(match: LineMatch, what: string, options: { from?: number; timeoutMs?: number } = {}): Promise<LogLine> {
    const from = options.from ?? 0;
    const seen = this.lines.slice(from).find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const fail = (why: string) => {
        cleanup();
        reject(new Error(`${what}: ${why}; the log ends with:\n${this.text.slice(-3000)}`));
      };
      const onEnd = () => fail('the process closed the stream first');
      const waiter = {
        match,
        resolve: (line: LogLine) => {
          cleanup();
          resolve(line);
        },
      };
      const timer = setTimeout(() => fail(`not seen within ${options.timeoutMs ?? 30_000} ms`), options.timeoutMs ?? 30_000);
      const cleanup = () => {
        clearTimeout(timer);
        this.#waiters.delete(waiter);
        this.#onEnd.delete(onEnd);
      };
      this.#waiters.add(waiter);
      if (this.#ended) onEnd();
      else this.#onEnd.add(onEnd);
    });
  }

  #take(chunk: string): void {
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    const at = Date.now();
    for (const text of parts) {
      const line: LogLine = { at, text, json: parseObject(text) };
      this.lines.push(line);
      for (const waiter of [...this.#waiters]) if (waiter.match(line)) waiter.resolve(line);
    }
  }
}

function parseObject(text: string): Record<string, unknown> {
  if (!text.startsWith('{')) return {};
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
