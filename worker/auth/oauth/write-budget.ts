/**
 * How much of one kind of work strangers may have the authorization server do in a window: any
 * https URL may be named as a client_id, and each new one is a fetch (`metadata-document.ts`
 * keeps one budget per URL host). Past the budget the request is refused until the window moves
 * on; nothing already done is touched. Registrations and sign-in pages need none: they write
 * nothing (their client ids and forms are sealed values, `server-key.ts`).
 *
 * Counted per worker process (per isolate on Cloudflare), in memory.
 *
 * @module
 */

/** One take from a budget, which may be given back: the work it paid for turned out not to count. */
export interface BudgetSlot {
  refund(): void;
}

export class WriteBudget {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  /** Times of the writes still in the window, oldest first. */
  readonly #times: number[] = [];

  constructor(max: number, windowMs: number, now: () => number = Date.now) {
    this.#max = max;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** Takes one write from the budget: the slot taken, or null, and nothing taken, when it is spent. */
  take(): BudgetSlot | null {
    const now = this.#now();
    while (this.#times.length > 0 && this.#times[0]! <= now - this.#windowMs) this.#times.shift();
    if (this.#times.length >= this.#max) return null;
    this.#times.push(now);
    let refunded = false;
    return {
      // This take's own time, not the latest one: concurrent takes each give back their own.
      refund: () => {
        if (refunded) return;
        refunded = true;
        const at = this.#times.indexOf(now);
        if (at !== -1) this.#times.splice(at, 1);
      },
    };
  }

  /** Minutes until the oldest write leaves the window, for the refusal's message. */
  minutesUntilFree(): number {
    const oldest = this.#times[0];
    return oldest === undefined ? 0 : Math.max(1, Math.ceil((oldest + this.#windowMs - this.#now()) / 60_000));
  }
}
