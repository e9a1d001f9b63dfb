/**
 * LargeLineGate: which servers' large stdout lines the sidecar reads now, host-wide.
 *
 * Why: a line is read whole before it can be checked and sent (`stdout-lines.ts`,
 * `readJsonRpcText`), and the link's flow control (`shared/link/link-flow.ts`) can hold a server
 * back only after that: a frame larger than its budget still goes, its channel holds after it.
 * With 32 sessions each answered with 15 MB, the sidecar read all 32 lines at once, in turns of a
 * pipe's 64 KiB, so none was whole before all were: the agent's first answer came after more than
 * 10 s, and every line, its text, its parse and its frame were in memory together, 1.2 GB of RSS
 * (`test/bench/link-fairness.ts --sessions 32`), however slowly the link took them.
 *
 * Now a line that passes `LARGE_LINE_BYTES` unfinished is read on only while fewer than
 * `LARGE_LINES_AT_ONCE` others are and the link has room (its flow is not past its budget): its
 * server is held (`holdReading`: the pipe fills and the server waits in its own write) until its
 * turn. Turns go by agent, as the link's do: one agent's many large answers do not make another
 * agent's wait behind all of them: the next line to read is of the agent whose last one was let
 * read longest ago. Lines under the threshold are never held here, so small answers go on as
 * ever. What waits costs the sidecar at most the threshold and a chunk per server; the link's
 * budget and the lines read at once bound the rest. Measured on the same run: 32 sessions of 15 MB
 * answers peaked at about 490 MiB of RSS and the link carried 24 MB/s (2–9 before); 16 sessions
 * at 470 MiB (780 before).
 *
 * @module
 */

/** An unfinished line past this many bytes is a large one, read only in its turn. */
export const LARGE_LINE_BYTES = 1024 * 1024;
/**
 * Large lines read at once. More than one, so a server that writes its line slowly does not stop
 * every other large answer; few, so the lines' copies (bytes, text, parse, frame) stay few.
 */
export const LARGE_LINES_AT_ONCE = 2;

/** What the gate holds while its line waits: a server's stdout (`ProcessExecutorBackedClientTransport`). */
export interface GatedReader {
  holdReading(): () => void;
}

/** A large line's place at the gate; `leave` (idempotent) when it is whole or its reader closed. */
export interface LineTicket {
  leave(): void;
}

export interface LargeLineGateOptions {
  lineBytes?: number;
  atOnce?: number;
  /** Whether the link takes another large message now (false while its flow is past its budget); true by default. */
  roomy?: () => boolean;
}

interface Entry {
  readonly group: string;
  /** The hold on its reader while it waits; null once it reads. */
  release: (() => void) | null;
  state: 'waiting' | 'reading' | 'left';
}

export class LargeLineGate {
  readonly lineBytes: number;
  readonly #atOnce: number;
  readonly #roomy: () => boolean;
  readonly #reading = new Set<Entry>();
  /** Each group's lines waiting, in the order they came; groups in the order they began to wait. */
  readonly #waiting = new Map<string, Entry[]>();
  /** When each group with a line reading or waiting last had one let read (a count of admissions). */
  readonly #served = new Map<string, number>();
  /** Lines reading or waiting per group, so `#served` forgets a group with none. */
  readonly #lines = new Map<string, number>();
  #admissions = 0;

  constructor(options: LargeLineGateOptions = {}) {
    this.lineBytes = options.lineBytes ?? LARGE_LINE_BYTES;
    this.#atOnce = options.atOnce ?? LARGE_LINES_AT_ONCE;
    this.#roomy = options.roomy ?? (() => true);
    if (!(this.lineBytes > 0) || !Number.isInteger(this.#atOnce) || this.#atOnce < 1) {
      throw new RangeError(`Cannot create a LargeLineGate: lineBytes must be positive and atOnce a positive integer, got ${this.lineBytes} and ${this.#atOnce}`);
    }
  }

  /** Large lines being read now. */
  get readingCount(): number {
    return this.#reading.size;
  }

  /** Large lines waiting for their turn. */
  get waitingCount(): number {
    let n = 0;
    for (const queue of this.#waiting.values()) n += queue.length;
    return n;
  }

  /**
   * `reader`'s line, of `group` (its agent), passed the threshold: it reads on at once if its
   * turn has come, else it is held until then.
   */
  enter(reader: GatedReader, group: string): LineTicket {
    const entry: Entry = { group, release: null, state: 'waiting' };
    this.#lines.set(group, (this.#lines.get(group) ?? 0) + 1);
    if (this.#waiting.size === 0 && this.#hasRoom()) this.#admit(entry);
    else {
      entry.release = reader.holdReading();
      const queue = this.#waiting.get(group);
      if (queue !== undefined) queue.push(entry);
      else this.#waiting.set(group, [entry]);
      // Room may have come back with nobody told yet: the lines before this one go first.
      this.recheck();
    }
    return { leave: () => this.#leave(entry) };
  }

  /** The link may have room again (its flow let go, or it ended): lets the next lines read. */
  recheck(): void {
    while (this.#waiting.size > 0 && this.#hasRoom()) {
      const group = this.#nextGroup();
      const queue = this.#waiting.get(group)!;
      const entry = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(group);
      this.#admit(entry);
      const release = entry.release;
      entry.release = null;
      release?.();
    }
  }

  /** The waiting group served longest ago (one never served first), the one that began to wait first on a tie. */
  #nextGroup(): string {
    let next: string | undefined;
    let nextServed = Infinity;
    for (const group of this.#waiting.keys()) {
      const served = this.#served.get(group) ?? -1;
      if (served < nextServed) {
        next = group;
        nextServed = served;
      }
    }
    return next!;
  }

  #admit(entry: Entry): void {
    entry.state = 'reading';
    this.#reading.add(entry);
    this.#served.set(entry.group, this.#admissions++);
  }

  #hasRoom(): boolean {
    return this.#reading.size < this.#atOnce && this.#roomy();
  }

  #leave(entry: Entry): void {
    const was = entry.state;
    if (was === 'left') return;
    entry.state = 'left';
    const lines = this.#lines.get(entry.group)! - 1;
    if (lines > 0) this.#lines.set(entry.group, lines);
    else {
      this.#lines.delete(entry.group);
      this.#served.delete(entry.group);
    }
    if (was === 'reading') {
      this.#reading.delete(entry);
      this.recheck();
      return;
    }
    const queue = this.#waiting.get(entry.group)!;
    queue.splice(queue.indexOf(entry), 1);
    if (queue.length === 0) this.#waiting.delete(entry.group);
    const release = entry.release;
    entry.release = null;
    release?.();
  }
}
