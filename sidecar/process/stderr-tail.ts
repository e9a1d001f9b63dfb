/**
 * StderrTail: the last lines a server wrote to stderr, bounded by count and bytes, kept to
 * explain a premature exit. A server can write gigabytes of stderr; the tail never holds more
 * than its limits, and its text is sanitized before it goes into the exit's log line (never into
 * the error sent over the link, which a server's environment printed to stderr must not reach).
 *
 * @module
 */

export interface StderrTailLimits {
  /** Most lines kept. */
  readonly lines: number;
  /** Most UTF-8 bytes kept, over all lines. */
  readonly bytes: number;
}

const DEFAULT_LIMITS: StderrTailLimits = { lines: 64, bytes: 8192 };
/** Longest sanitized tail put into a log line, in characters. */
const MESSAGE_CHARS = 1024;

// CSI / OSC / two-character escape sequences, then C0 and C1 controls, DEL, zero-width and bidi controls.
const ANSI_ESCAPE = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-_]/g;
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** A rolling buffer of stderr lines. */
export class StderrTail {
  readonly #limits: StderrTailLimits;
  readonly #lines: string[] = [];
  #bytes = 0;

  constructor(limits: StderrTailLimits = DEFAULT_LIMITS) {
    this.#limits = limits;
  }

  /** Longest line worth reading at all: a longer one could not fit in the tail anyway. */
  get maxLineLength(): number {
    return this.#limits.bytes;
  }

  push(line: string): void {
    let kept = line;
    let size = Buffer.byteLength(kept);
    if (size > this.#limits.bytes) {
      kept = Buffer.from(kept).subarray(0, this.#limits.bytes).toString('utf8').replace(/\ufffd+$/, ''); // no split character
      size = Buffer.byteLength(kept);
    }
    this.#lines.push(kept);
    this.#bytes += size;
    while (this.#lines.length > 0 && (this.#lines.length > this.#limits.lines || this.#bytes > this.#limits.bytes)) {
      this.#bytes -= Buffer.byteLength(this.#lines.shift() ?? '');
    }
  }

  /** The kept lines as written (control characters included), oldest first. */
  lines(): string[] {
    return [...this.#lines];
  }

  /** The kept lines on one line, escapes and control characters removed, at most 1 KiB of the end. */
  sanitized(): string {
    return sanitizeStderr(this.#lines, MESSAGE_CHARS);
  }
}

/**
 * Makes untrusted stderr safe to put in a message: ANSI escapes and control characters
 * (including bidi overrides) removed, lines joined with " | ", the end kept within `maxChars`.
 */
export function sanitizeStderr(lines: readonly string[], maxChars: number): string {
  const text = lines
    .map((line) => line.replace(ANSI_ESCAPE, '').replace(CONTROL, '').trim())
    .filter((line) => line.length > 0)
    .join(' | ');
  if (text.length <= maxChars) return text;
  return `…${text.slice(text.length - maxChars + 1).replace(/^[\udc00-\udfff]/, '')}`;
}
