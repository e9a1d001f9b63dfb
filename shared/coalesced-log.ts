/**
 * Refusal log lines, at most one per kind per interval: whoever sends junk link requests cannot
 * make the worker write one line per request. The first refusal of a kind is logged at once; the
 * rest within the interval are counted, and the next line of that kind says how many went
 * unlogged. Nothing is refused or delayed here: a limit on the requests themselves would let a
 * stranger lock a host out.
 *
 * The caller picks the kinds and keeps them bounded (the link gate: its check, with the entity id
 * only once it names a configured host), since every kind is remembered.
 *
 * @module
 */

/** The interval one kind is logged at most once in. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000;

export class CoalescedLog {
  readonly #intervalMs: number;
  /** Kind → until when its lines are held back, and how many were. */
  readonly #kinds = new Map<string, { until: number; held: number }>();

  constructor(intervalMs = REFUSAL_LOG_INTERVAL_MS) {
    this.#intervalMs = intervalMs;
  }

  /** null: hold this line back (counted); otherwise log it, with this many held back since the last one. */
  admit(kind: string, nowMs: number): number | null {
    const seen = this.#kinds.get(kind);
    if (seen !== undefined && seen.until > nowMs) {
      seen.held += 1;
      return null;
    }
    this.#kinds.set(kind, { until: nowMs + this.#intervalMs, held: 0 });
    return seen?.held ?? 0;
  }
}
