/**
 * OpenOutcomes: how the latest open of each server went, per agent, so `/healthz` and the status
 * page can tell a server that serves from one whose every open fails while its host is linked (a
 * server removed on the host, a stale trust-profile pin, a command that no longer starts), which
 * they called `available` before: only `recentErrors` showed it.
 *
 * One entry per (agent, server), replaced by each open's outcome, success or failure: a server is
 * `failing` for whoever's latest open of it failed, until an open of it succeeds again. Only
 * failures that say something of the server count; an agent's own limit, the worker's config
 * change or shutdown, a host without a link say nothing of it.
 *
 * Bounded by the config (its agents × their servers), and by `capacity` against anything else;
 * like `RecentErrors`, one isolate's memory (DESIGN §8). On Workers the opens happen in each host's
 * Durable Object, which keeps its own and gives them (`entries`) to the edge that reports them
 * (`merge`) with each status read.
 *
 * @module
 */
import { FAILURE_REASONS, type FailureReason } from '../../shared/errors.ts';
import * as z from '../../shared/zod.ts';
import { scrubMessage } from './recent-errors.ts';

/** A failed latest open, as `/healthz` reports it on its server. */
export interface FailedOpen {
  reason: FailureReason;
  message: string;
  /** ISO time of the failure. */
  time: string;
  /** The agent whose open it was; in the admin's view only. */
  agent?: string;
}

/**
 * The reasons that say nothing of the server itself. `host-offline` among them: the server's
 * state says so while its host has no link, and every channel ends with it when a link drops,
 * which would leave each server `failing` after its host links again.
 */
const NOT_THE_SERVERS: ReadonlySet<FailureReason> = new Set(['unauthorized', 'limit-reached', 'invalid-request', 'config-changed', 'shutdown', 'denied-by-policy', 'host-offline']);

const DEFAULT_CAPACITY = 4096;

interface Outcome {
  readonly agent: string;
  readonly server: string;
  /** Null: it succeeded. */
  readonly failure: Omit<FailedOpen, 'agent'> | null;
  /** In what order it was recorded here, for the admin's "latest of all agents". */
  readonly at: number;
  /** When it happened (ms since the epoch), for `merge`. */
  readonly time: number;
}

/** One outcome as one place hands it to another (a host's Durable Object to the edge), checked there. */
export const OpenOutcomeEntry = z.strictObject({
  agent: z.string().check(z.minLength(1), z.maxLength(256)),
  server: z.string().check(z.minLength(1), z.maxLength(256)),
  failure: z.nullable(z.strictObject({ reason: z.enum(FAILURE_REASONS), message: z.string().check(z.maxLength(4096)), time: z.string().check(z.maxLength(64)) })),
  time: z.number(),
});
export type OpenOutcomeEntry = z.infer<typeof OpenOutcomeEntry>;

export class OpenOutcomes {
  readonly #latest = new Map<string, Outcome>();
  readonly #capacity: number;
  readonly #now: () => Date;
  #order = 0;

  /** Told when a failure is kept, or one ends (`onFailures`): what a place that keeps them across restarts saves. */
  readonly #onFailures: (() => void) | undefined;

  constructor(options: { capacity?: number; now?: () => Date; onFailures?: () => void } = {}) {
    this.#capacity = options.capacity ?? DEFAULT_CAPACITY;
    this.#now = options.now ?? (() => new Date());
    this.#onFailures = options.onFailures;
  }

  /** An open of `server` for `agent` succeeded. */
  opened(agent: string | null | undefined, server: string): void {
    if (agent == null) return;
    this.#set({ agent, server, failure: null, at: ++this.#order, time: this.#now().getTime() });
  }

  /** An open of `server` for `agent` failed with `reason`. */
  failed(agent: string | null | undefined, server: string, reason: FailureReason, message: string): void {
    if (agent == null || NOT_THE_SERVERS.has(reason)) return;
    const now = this.#now();
    this.#set({ agent, server, failure: { reason, message: scrubMessage(message), time: now.toISOString() }, at: ++this.#order, time: now.getTime() });
  }

  /** Every outcome held, oldest first, as `merge` takes them elsewhere. */
  entries(): OpenOutcomeEntry[] {
    return [...this.#latest.values()].map(({ agent, server, failure, time }) => ({ agent, server, failure, time }));
  }

  /**
   * Outcomes recorded elsewhere, oldest first: each replaces the pair's here unless this one is
   * newer, or the same. One of the same millisecond that says otherwise wins: the place that sent
   * it holds only its latest (a modern open and its failed launch can share a millisecond).
   */
  merge(entries: readonly OpenOutcomeEntry[]): void {
    for (const entry of entries) {
      const held = this.#latest.get(keyOf(entry.agent, entry.server));
      if (held !== undefined && (held.time > entry.time || (held.time === entry.time && sameFailure(held.failure, entry.failure)))) continue;
      // Scrubbed again here: what another place kept is not trusted to be.
      const failure = entry.failure === null ? null : { ...entry.failure, message: scrubMessage(entry.failure.message) };
      this.#set({ agent: entry.agent, server: entry.server, failure, at: ++this.#order, time: entry.time });
    }
  }

  /**
   * The failure of the latest open of `server`: `agent`'s own, or, for the admin (no agent), the
   * latest of any agent's, naming the agent. Undefined when that open succeeded, or none is known.
   */
  failure(server: string, agent?: string): FailedOpen | undefined {
    if (agent !== undefined) return this.#latest.get(keyOf(agent, server))?.failure ?? undefined;
    let latest: Outcome | undefined;
    for (const outcome of this.#latest.values()) if (outcome.server === server && (latest === undefined || outcome.at > latest.at)) latest = outcome;
    return latest?.failure == null ? undefined : { ...latest.failure, agent: latest.agent };
  }

  #set(outcome: Outcome): void {
    const key = keyOf(outcome.agent, outcome.server);
    if (outcome.failure !== null || this.#latest.get(key)?.failure != null) this.#onFailures?.();
    // Deleted first, so the map's order is the order of last use and the oldest goes at capacity.
    this.#latest.delete(key);
    this.#latest.set(key, outcome);
    if (this.#latest.size > this.#capacity) this.#latest.delete(this.#latest.keys().next().value!);
  }
}

function sameFailure(a: Outcome['failure'], b: Outcome['failure']): boolean {
  return a === null || b === null ? a === b : a.reason === b.reason && a.message === b.message && a.time === b.time;
}

function keyOf(agent: string, server: string): string {
  return `${agent}\u0000${server}`;
}
