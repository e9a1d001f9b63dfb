/**
 * RecentErrors: a small, bounded memory of the worker's recent failures, for `/healthz` and the
 * status page. Logs hold the full story, but an operator opening `/` wants the last few reasons
 * at a glance ("host-offline on files for alice, 3 times, last 20 s ago") without a log search.
 *
 * Bounded twice: at most `capacity` entries (oldest dropped first), and a failure repeating with
 * the same reason, server, agent and message is folded into one entry whose `count` grows and
 * whose `time` moves to now, so one flapping host cannot push every other failure out.
 *
 * Never secrets: only the stable reason, names and the wire message are kept (WireError messages
 * are secret-free by contract), and the message is scrubbed of URL credentials, query strings and
 * bearer tokens anyway, then cut to `MAX_MESSAGE_LENGTH`, in case a non-wire error slips through.
 *
 * This lives in one isolate's memory, like the session table (DESIGN §8): on a multi-isolate edge
 * each isolate shows its own recent failures, which is what a status page can honestly say. On
 * Workers a host's failures happen in its Durable Object, which keeps its own and hands them over
 * with its status (`fromElsewhere`): the edge shows them beside its own.
 *
 * @module
 */
import { FAILURE_REASONS, type FailureReason } from '../../shared/errors.ts';
import * as z from '../../shared/zod.ts';
import { redactUrlsIn } from '../../shared/url-redaction.ts';

/** One failure as shown on /healthz (`recentErrors`) and the status page. */
export interface RecentError {
  /** ISO time of the latest occurrence. */
  time: string;
  reason: FailureReason;
  /** Server the failure concerns, when known. */
  server: string | null;
  /** Agent whose request failed, when known; agents see only their own entries. */
  agent: string | null;
  message: string;
  /** How many times this exact failure happened while it stayed in the buffer. */
  count: number;
}

export type RecentErrorInput = Omit<RecentError, 'time' | 'count'>;

/** One failure as another place hands it over (a host's Durable Object to the edge), checked there. */
export const RecentErrorEntry = z.strictObject({
  time: z.string().check(z.maxLength(64)),
  reason: z.enum(FAILURE_REASONS),
  server: z.nullable(z.string().check(z.maxLength(256))),
  agent: z.nullable(z.string().check(z.maxLength(256))),
  message: z.string().check(z.maxLength(4096)),
  count: z.number().check(z.int(), z.positive()),
});

export interface RecentErrorsOptions {
  /** Most entries kept; 50 by default. */
  capacity?: number;
  /** Clock, for tests. */
  now?: () => Date;
  /** Told after each failure recorded: what a place that keeps them across restarts saves. */
  onRecorded?: () => void;
}

export const DEFAULT_RECENT_ERRORS_CAPACITY = 50;
export const MAX_MESSAGE_LENGTH = 300;

export class RecentErrors {
  readonly #capacity: number;
  readonly #now: () => Date;
  /** Oldest first; at most `#capacity` long, so linear scans stay trivially cheap. */
  readonly #entries: Array<RecentError & { key: string }> = [];
  /** Each other place's own, as it last handed them over (`fromElsewhere`). */
  readonly #elsewhere = new Map<string, RecentError[]>();

  constructor(options: RecentErrorsOptions = {}) {
    const capacity = options.capacity ?? DEFAULT_RECENT_ERRORS_CAPACITY;
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`Cannot create RecentErrors: capacity must be a positive integer, got ${capacity}`);
    this.#capacity = capacity;
    this.#now = options.now ?? (() => new Date());
    this.#onRecorded = options.onRecorded;
  }

  readonly #onRecorded: (() => void) | undefined;

  /** Records one failure; a repeat of a kept one is folded into it and becomes the newest. */
  record(input: RecentErrorInput): void {
    const entry = { ...input, message: scrubMessage(input.message), time: this.#now().toISOString(), count: 1 };
    const key = keyOf(entry);
    const index = this.#entries.findIndex((e) => e.key === key);
    if (index !== -1) entry.count += this.#entries.splice(index, 1)[0]!.count;
    this.#entries.push({ ...entry, key });
    if (this.#entries.length > this.#capacity) this.#entries.shift();
    this.#onRecorded?.();
  }

  /**
   * The failures another place (`source`) recorded itself, as it holds them now: they replace
   * what it handed over before, and show beside this one's own, the newest `capacity` of all.
   */
  fromElsewhere(source: string, entries: readonly RecentError[]): void {
    const kept = entries.slice(0, this.#capacity).map((entry) => ({ ...entry, message: scrubMessage(entry.message) }));
    if (kept.length === 0) this.#elsewhere.delete(source);
    else this.#elsewhere.set(source, kept);
  }

  /** Newest first; with `agent`, only that agent's entries. Returns copies. */
  list(agent?: string): RecentError[] {
    const out: RecentError[] = [];
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const { key: _key, ...entry } = this.#entries[i]!;
      if (agent === undefined || entry.agent === agent) out.push(entry);
    }
    if (this.#elsewhere.size === 0) return out;
    // The same failure met here and elsewhere is one entry, as a repeat here is: counts add up, the latest time stands.
    const folded = new Map(out.map((entry) => [keyOf(entry), entry]));
    for (const entries of this.#elsewhere.values()) {
      for (const entry of entries) {
        if (agent !== undefined && entry.agent !== agent) continue;
        const key = keyOf(entry);
        const same = folded.get(key);
        folded.set(key, same === undefined ? { ...entry } : { ...same, count: same.count + entry.count, time: same.time > entry.time ? same.time : entry.time });
      }
    }
    // ISO times of one format sort as text.
    return [...folded.values()].sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0)).slice(0, this.#capacity);
  }

  get size(): number {
    return this.list().length;
  }
}

/** What makes two failures the same one: reason, server, agent and message. */
function keyOf(entry: RecentErrorInput): string {
  return JSON.stringify([entry.reason, entry.server, entry.agent, entry.message]);
}

/**
 * Removes what could be a credential from a message and bounds its length: `user:pass@` in URLs
 * (to the last `@` before the path, a password may hold one), URL query strings and fragments
 * (tokens often ride there) and `Bearer <token>`.
 */
export function scrubMessage(message: string): string {
  const scrubbed = redactUrlsIn(message).replace(/\bBearer\s+[^\s"']+/gi, 'Bearer [redacted]');
  return scrubbed.length > MAX_MESSAGE_LENGTH ? `${scrubbed.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : scrubbed;
}
