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
 * Now a line that passes `LARGE_LINE_BYTES` unfinished is read on only in its turn: its server is
 * held meanwhile (`holdReading`: the pipe fills and the server waits in its own write). At most
 * `LARGE_LINES_AT_ONCE` lines read at once, each of another agent, so one agent's many large
 * answers (or a server of its that stopped mid-line) never take every place; the next place goes
 * to the agent whose last line was let read longest ago. An agent's line waits too while the link
 * is full (its flow past its budget, until it is down to its resume mark) and that agent has more
 * than a quiet channel's share waiting on it (`roomy`): the agent whose bulk filled the link waits
 * for it to drain, and another agent's large answer is read and goes in its turns on the link as
 * before. What waits costs the sidecar at most the threshold and a pipe's read per server. Lines
 * under the threshold are not held here, though one behind a held line in the same server's
 * output (a modern agent's shared instance) waits with it. Measured on the same box: 32 sessions
 * of 15 MB answers peaked at about 400 MiB of RSS and the link carried 21–24 MB/s (2–9 before);
 * 16 sessions at 380 MiB (780 before).
 *
 * @module
 */

/** An unfinished line past this many bytes is a large one, read only in its turn. */
export const LARGE_LINE_BYTES = 1024 * 1024;
/**
 * Large lines read at once, each of another agent: more than one, so an agent whose server writes
 * its line slowly (or stopped mid-line) does not stop every other agent's; few, so the lines'
 * copies (bytes, text, parse, frame) stay few.
 */
export const LARGE_LINES_AT_ONCE = 2;
/** Agents whose last turn the gate remembers; past it the oldest are forgotten, and rank as never served, which they came closest to. */
export const REMEMBERED_TURNS = 1024;

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
  /** Whether the link takes another large message of `group` now (false while it is full and that agent has much waiting on it); true by default. */
  roomy?: (group: string) => boolean;
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
  readonly #roomy: (group: string) => boolean;
  /** The line reading now per group: one at most. */
  readonly #reading = new Map<string, Entry>();
  /** Each group's lines waiting, in the order they came. */
  readonly #waiting = new Map<string, Entry[]>();
  /**
   * When each group last had a line let read (a count of turns given). Kept once its lines are
   * done, so that an agent asking again right away does not pass one that waited all along.
   */
  readonly #served = new Map<string, number>();
  #turns = 0;

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
    const entry: Entry = { group, release: reader.holdReading(), state: 'waiting' };
    const queue = this.#waiting.get(group);
    if (queue !== undefined) queue.push(entry);
    else this.#waiting.set(group, [entry]);
    this.recheck();
    return { leave: () => this.#leave(entry) };
  }

  /** The link may have room again (its flow let go, or it ended): lets the next lines read. */
  recheck(): void {
    while (this.#reading.size < this.#atOnce) {
      const group = this.#nextGroup();
      if (group === undefined) return;
      const queue = this.#waiting.get(group)!;
      const entry = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(group);
      entry.state = 'reading';
      this.#reading.set(group, entry);
      this.#served.delete(group); // re-inserted last: the map stays in the order of turns given
      this.#served.set(group, this.#turns++);
      this.#letGo(entry);
    }
  }

  /** Releases the hold `entry` waited under, once. */
  #letGo(entry: Entry): void {
    const release = entry.release;
    entry.release = null;
    release?.();
  }

  /** Of the groups waiting with none of theirs reading and room on the link, the one served longest ago (one never served first). */
  #nextGroup(): string | undefined {
    let next: string | undefined;
    let nextServed = Infinity;
    for (const group of this.#waiting.keys()) {
      if (this.#reading.has(group)) continue;
      const served = this.#served.get(group) ?? -1;
      if (served < nextServed && this.#roomy(group)) {
        next = group;
        nextServed = served;
      }
    }
    return next;
  }

  #leave(entry: Entry): void {
    const was = entry.state;
    if (was === 'left') return;
    entry.state = 'left';
    if (was === 'reading') {
      this.#reading.delete(entry.group);
      // The oldest turns first: those forgotten rank as never served, which they came closest to.
      while (this.#served.size > REMEMBERED_TURNS) this.#served.delete(this.#served.keys().next().value!);
    } else {
      const queue = this.#waiting.get(entry.group)!;
      queue.splice(queue.indexOf(entry), 1);
      if (queue.length === 0) this.#waiting.delete(entry.group);
      this.#letGo(entry);
    }
    this.recheck();
  }
}
