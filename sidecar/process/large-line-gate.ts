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
 * answers never take every place; the next place goes to the agent whose last line was let read
 * longest ago. An agent's line waits too while the link is full (its flow past its budget, until
 * it is down to its resume mark) and that agent has more than a quiet channel's share waiting on
 * it (`roomy`): the agent whose bulk filled the link waits for it to drain, and another agent's
 * large answer is read and goes in its turns on the link as before.
 *
 * A line that reads slowly (its server stopped mid-line, or trickles) while another agent's line
 * waits that could take its place gives the place up (`SLOW_LINE_MS`): it waits again, first of
 * its agent's (whose other large lines wait behind it, as an agent's lines read one at a time), as
 * the agent served last, so the agents waiting go first. Without it, servers that stall, of as
 * many agents as there are places, stopped every other agent's large answers. A line that reads
 * nothing because the link holds its channel is not slow, nor is any at a look that comes late
 * (the sidecar itself was busy or stopped). A line waiting so keeps what it read, so the lines
 * waiting so hold at most `PARKED_BYTES` in all; past that a slow line keeps its place. Either
 * way its server is told (`GatedReader.stalled`) and logs it, so the operator learns which stalls.
 *
 * What else waits costs the sidecar at most the threshold and a pipe's read per server. Lines
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
 * its line slowly (or stopped mid-line) does not hold every other agent's for the one to two
 * seconds it takes the gate to see it (`SLOW_LINE_MS`); few, so the lines' copies (bytes, text,
 * parse, frame) stay few.
 */
export const LARGE_LINES_AT_ONCE = 2;
/** Agents whose last turn the gate remembers; past it the oldest are forgotten, and rank as never served, which they came closest to. */
export const REMEMBERED_TURNS = 1024;
/**
 * While a line waits, the gate looks at the lines reading once per this many ms: one that read less
 * than `SLOW_LINE_BYTES` between two looks (so after one to two periods) gives its place up to a
 * line waiting. A server that stopped mid-line, or trickles, would otherwise keep a place for as
 * long as it likes, and two of them, of two agents, every place.
 */
export const SLOW_LINE_MS = 1000;
/** Less than this read in `SLOW_LINE_MS` is a slow line: a pipe gives a live writer megabytes in that time. */
export const SLOW_LINE_BYTES = 256 * 1024;
/**
 * What the lines that gave their place up may hold in all (each keeps what it read): a bound on
 * what stalled servers can make the sidecar keep, 4 lines at the 16 MiB a message may be.
 */
export const PARKED_BYTES = 64 * 1024 * 1024;

/** What the gate holds while its line waits: a server's stdout (`ProcessExecutorBackedClientTransport`). */
export interface GatedReader {
  holdReading(): () => void;
  /** Whether anything holds it now: while its line reads, that is the link's flow control, and a line held so is not slow. */
  readonly readingHeld?: boolean;
  /**
   * Told when its line was found slow while another waited: `gaveUp` when it gave its place up,
   * false when it kept it as the lines waiting so hold `PARKED_BYTES` already; `heldBytes`, what the
   * sidecar holds of the line (the threshold and what it read since). The operator's sign of a
   * server stalled, or crawling, in the middle of a large answer.
   */
  stalled?(heldBytes: number, gaveUp: boolean): void;
}

/** A large line's place at the gate; `read` as its reader reads on, `leave` (idempotent) when it is whole or its reader closed. */
export interface LineTicket {
  read(bytes: number): void;
  leave(): void;
}

export interface LargeLineGateOptions {
  lineBytes?: number;
  atOnce?: number;
  /** Whether the link takes another large message of `group` now (false while it is full and that agent has much waiting on it); true by default. */
  roomy?: (group: string) => boolean;
  /** The look at slow lines: its period and what a line must read in it (`SLOW_LINE_MS`, `SLOW_LINE_BYTES`). */
  slowMs?: number;
  slowBytes?: number;
  /** What the lines that gave their place up may hold in all (`PARKED_BYTES`). */
  parkedBytes?: number;
}

interface Entry {
  readonly group: string;
  readonly reader: GatedReader;
  /** The hold on its reader while it waits; null once it reads. */
  release: (() => void) | null;
  state: 'waiting' | 'reading' | 'left';
  /** Bytes its reader read through this place. */
  bytes: number;
  /** `bytes` at the last look while it read; null until a look has seen it read. */
  bytesAtLook: number | null;
  /** What it holds, counted in the gate's parked bytes, while it waits after giving its place up; 0 otherwise. */
  parked: number;
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
  readonly #slowMs: number;
  readonly #slowBytes: number;
  readonly #parkedMax: number;
  /** What the lines waiting after giving their place up hold (`Entry.parked`). */
  #parkedBytes = 0;
  /** The periodic look at slow lines, while a line waits and one reads. */
  #looking: ReturnType<typeof setInterval> | null = null;
  /** When the last look ran (`Date.now()`). */
  #lookedAt = 0;

  constructor(options: LargeLineGateOptions = {}) {
    this.lineBytes = options.lineBytes ?? LARGE_LINE_BYTES;
    this.#atOnce = options.atOnce ?? LARGE_LINES_AT_ONCE;
    this.#roomy = options.roomy ?? (() => true);
    this.#slowMs = options.slowMs ?? SLOW_LINE_MS;
    this.#slowBytes = options.slowBytes ?? SLOW_LINE_BYTES;
    this.#parkedMax = options.parkedBytes ?? PARKED_BYTES;
    if (!(this.lineBytes > 0) || !Number.isInteger(this.#atOnce) || this.#atOnce < 1 || !(this.#slowMs > 0) || !(this.#slowBytes >= 0) || !(this.#parkedMax >= 0)) {
      throw new RangeError(
        `Cannot create a LargeLineGate: lineBytes and slowMs must be positive, atOnce a positive integer, slowBytes and parkedBytes not negative, got lineBytes ${this.lineBytes}, slowMs ${this.#slowMs}, atOnce ${this.#atOnce}, slowBytes ${this.#slowBytes} and parkedBytes ${this.#parkedMax}`,
      );
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
    const entry: Entry = { group, reader, release: reader.holdReading(), state: 'waiting', bytes: 0, bytesAtLook: null, parked: 0 };
    const queue = this.#waiting.get(group);
    if (queue !== undefined) queue.push(entry);
    else this.#waiting.set(group, [entry]);
    this.recheck();
    return {
      read: (bytes) => void (entry.bytes += bytes),
      leave: () => this.#leave(entry),
    };
  }

  /** The link may have room again (its flow let go, or it ended): lets the next lines read. */
  recheck(): void {
    while (this.#reading.size < this.#atOnce) {
      const group = this.#nextGroup();
      if (group === undefined) break;
      const queue = this.#waiting.get(group)!;
      const entry = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(group);
      entry.state = 'reading';
      entry.bytesAtLook = null;
      this.#parkedBytes -= entry.parked;
      entry.parked = 0;
      this.#reading.set(group, entry);
      this.#served.delete(group); // re-inserted last: the map stays in the order of turns given
      this.#served.set(group, this.#turns++);
      this.#letGo(entry);
    }
    this.#lookWhileNeeded();
  }

  /** Looks at slow lines while a line waits and one reads: only then could a place go to another. */
  #lookWhileNeeded(): void {
    const needed = this.#waiting.size > 0 && this.#reading.size > 0;
    if (needed && this.#looking === null) {
      for (const entry of this.#reading.values()) entry.bytesAtLook = null;
      this.#lookedAt = Date.now();
      this.#looking = setInterval(() => this.#look(), this.#slowMs);
      // A sidecar with nothing else to do has no line to read: the gate keeps no process alive.
      (this.#looking as { unref?: () => void }).unref?.();
    } else if (!needed && this.#looking !== null) {
      clearInterval(this.#looking);
      this.#looking = null;
    }
  }

  /**
   * Lines that read less than `slowBytes` between the last two looks give their places up, the
   * slowest first, as many as there are lines waiting that would take them (of agents with none
   * reading and room on the link), while the parked bytes allow.
   */
  #look(): void {
    this.recheck(); // a place free with a line to take it (the link made room since)
    // A look that comes late judges nothing: the sidecar itself was busy or stopped, and could
    // read no line either (a long parse, a GC pause, a suspended machine).
    const now = Date.now();
    const late = now - this.#lookedAt > 2 * this.#slowMs;
    this.#lookedAt = now;
    const slow: Array<{ entry: Entry; grew: number }> = [];
    for (const entry of this.#reading.values()) {
      const grew = entry.bytesAtLook === null || late ? Infinity : entry.bytes - entry.bytesAtLook;
      // Held by the link, it reads nothing for that: it is judged again only over a whole period after.
      const heldByLink = entry.reader.readingHeld === true;
      entry.bytesAtLook = heldByLink ? null : entry.bytes;
      if (grew < this.#slowBytes && !heldByLink) slow.push({ entry, grew });
    }
    let takers = this.#takers();
    if (slow.length === 0 || takers === 0) return;
    slow.sort((a, b) => a.grew - b.grew);
    for (const { entry } of slow) {
      if (takers === 0) break;
      const holds = this.lineBytes + entry.bytes;
      if (this.#parkedBytes + holds > this.#parkedMax) {
        entry.reader.stalled?.(holds, false);
        continue;
      }
      this.#park(entry, holds);
      takers--;
    }
    this.recheck();
  }

  /** Lines waiting that a free place would go to: one per agent that may take one (`#mayTake`). */
  #takers(): number {
    let n = 0;
    for (const group of this.#waiting.keys()) if (this.#mayTake(group)) n++;
    return n;
  }

  /** A waiting agent may take a free place: none of its lines reads and the link has room for it. */
  #mayTake(group: string): boolean {
    return !this.#reading.has(group) && this.#roomy(group);
  }

  /** `entry` gives its place up: it waits again, first of its agent's, as the agent served last. */
  #park(entry: Entry, holds: number): void {
    const group = entry.group;
    this.#reading.delete(group);
    entry.state = 'waiting';
    entry.parked = holds;
    this.#parkedBytes += holds;
    entry.release = entry.reader.holdReading();
    const queue = this.#waiting.get(group);
    if (queue !== undefined) queue.unshift(entry);
    else this.#waiting.set(group, [entry]);
    this.#served.delete(group);
    this.#served.set(group, this.#turns++);
    entry.reader.stalled?.(holds, true);
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
      const served = this.#served.get(group) ?? -1;
      if (served < nextServed && this.#mayTake(group)) {
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
      this.#parkedBytes -= entry.parked;
      entry.parked = 0;
      this.#letGo(entry);
    }
    this.recheck();
  }
}
