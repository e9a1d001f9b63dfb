/**
 * DelayQueue: callbacks that each run a fixed `delayMs` after they were added, unless cancelled
 * first, all on one runtime timer. Hot-path deadlines (a channel open's, the window in which a
 * legacy POST may still be answered with plain JSON) are set and cancelled once per call and
 * almost never fire; under Deno a `setTimeout` with its `clearTimeout` cost 20-40 µs of a call's
 * CPU in the worker's profiles (issue 17), this an object and one `performance.now()` per entry.
 * The clock is the monotonic one: with `Date.now()` a wall-clock step (NTP, a suspended laptop, an
 * operator) moved every pending deadline with it, forward ending channel opens early, backward
 * holding them past their limit.
 *
 * With one delay for every entry, entries are due in the order they were added, so the queue is a
 * FIFO list and the timer is armed for its head only. A cancelled entry is dropped at once when it
 * is the head (calls mostly finish in the order they started), else when the head reaches it, so
 * the list stays about as long as the calls in flight. The timer is not cleared when the list
 * empties (the next call would only arm it again): it fires once, finds nothing, and stops; it is
 * unref'd, so it never keeps a process alive on its own.
 *
 * Under workerd a timer belongs to the request that set it, and never fires once that request is
 * done: one timer shared by every request stopped for good after the first request that armed it
 * ended before it was due, and no later entry of any request ran (review s22: cancelled calls'
 * places never came back, agents' aborts were never watched). The Workers build therefore sets
 * `timerPerEntry` (`useTimerPerEntry`): each entry its own timer, in the request that added it.
 *
 * @module
 */
import { unrefTimer } from './unref-timer.ts';

export interface DelayEntry {
  readonly due: number;
  /** Cleared by `cancel` and before it runs. */
  run: (() => void) | undefined;
  next: DelayEntry | undefined;
  /** The entry's own timer, with `timerPerEntry`. */
  timer?: ReturnType<typeof setTimeout>;
}

/** Whether every entry gets a timer of its own (workerd), for every queue. */
let timerPerEntry = false;

/** Gives every entry of every queue a timer of its own: for runtimes whose timers end with the request that set them. */
export function useTimerPerEntry(on = true): void {
  timerPerEntry = on;
}

export class DelayQueue {
  readonly delayMs: number;
  readonly #now: () => number;
  #head: DelayEntry | undefined;
  #tail: DelayEntry | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires; it may be earlier than the head's due time (that head was cancelled). */
  #timerDue = 0;
  /** Entries with a timer of their own, pending. */
  #ownTimers = 0;

  constructor(delayMs: number, now: () => number = () => performance.now()) {
    if (!(delayMs >= 0) || !Number.isFinite(delayMs)) throw new RangeError(`Cannot create a DelayQueue: the delay must be a finite number of ms, got ${delayMs}`);
    this.delayMs = delayMs;
    this.#now = now;
  }

  /** Runs `run` `delayMs` from now, unless `cancel` is called with the returned entry first. */
  add(run: () => void): DelayEntry {
    if (timerPerEntry) return this.#addWithTimer(run);
    const entry: DelayEntry = { due: this.#now() + this.delayMs, run, next: undefined };
    if (this.#tail === undefined) this.#head = entry;
    else this.#tail.next = entry;
    this.#tail = entry;
    if (this.#timer === undefined) this.#arm(entry.due, this.delayMs);
    return entry;
  }

  /** Stops `entry` from running; a no-op once it ran or was cancelled. */
  cancel(entry: DelayEntry): void {
    entry.run = undefined;
    if (entry.timer !== undefined) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      this.#ownTimers--;
    }
    if (entry === this.#head) this.#dropCancelledHeads();
  }

  #addWithTimer(run: () => void): DelayEntry {
    const entry: DelayEntry = { due: this.#now() + this.delayMs, run, next: undefined };
    this.#ownTimers++;
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      this.#ownTimers--;
      const due = entry.run;
      entry.run = undefined;
      due?.();
    }, this.delayMs);
    unrefTimer(entry.timer);
    return entry;
  }

  /** Entries added and not yet run or dropped (cancelled ones behind a live head included). */
  get size(): number {
    let n = this.#ownTimers;
    for (let e = this.#head; e !== undefined; e = e.next) n++;
    return n;
  }

  #dropCancelledHeads(): void {
    while (this.#head !== undefined && this.#head.run === undefined) this.#head = this.#unlink(this.#head);
    if (this.#head === undefined) this.#tail = undefined;
  }

  /**
   * The entry after `entry`, which leaves the list pointing at nothing: an entry that lived long
   * enough to be promoted would otherwise, dead, keep every later one alive through each
   * young-generation GC until the next full one (issue 17).
   */
  #unlink(entry: DelayEntry): DelayEntry | undefined {
    const next = entry.next;
    entry.next = undefined;
    return next;
  }

  /** Arms the timer for `due`, `inMs` from now (known to `add`, which has just read the clock). */
  #arm(due: number, inMs = due - this.#now()): void {
    this.#timerDue = due;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, inMs));
    unrefTimer(this.#timer);
  }

  #fire(): void {
    this.#timer = undefined;
    const now = this.#now();
    try {
      while (this.#head !== undefined && (this.#head.run === undefined || this.#head.due <= now)) {
        const entry = this.#head;
        this.#head = this.#unlink(entry);
        if (this.#head === undefined) this.#tail = undefined;
        const run = entry.run;
        entry.run = undefined;
        run?.();
      }
    } finally {
      // Armed again even when a callback threw: every later entry (a request deadline, a
      // cancelled call's grace that gives its place back) would otherwise never run.
      // A callback may have added entries (and armed the timer) already.
      if (this.#head !== undefined && (this.#timer === undefined || this.#timerDue > this.#head.due)) {
        if (this.#timer !== undefined) clearTimeout(this.#timer);
        this.#arm(this.#head.due);
      }
    }
  }
}
