/**
 * RecentCalls: the last audited calls of this worker isolate, newest first, for `/healthz` and
 * the status page. A fixed-size ring: memory stays bounded however many calls pass. It keeps what
 * an operator scans for (who called what, where, the decision, how long, how it ended) and never
 * argument values, whatever `include-arguments` says for the audit lines.
 *
 * @module
 */
import type { AuditRecord } from '../../shared/audit/audit-record.ts';

/** One call as the status page lists it. */
export interface RecentCall {
  time: string;
  agent: string | null;
  server: string | null;
  host: string | null;
  method: string | null;
  /** The tool, prompt or resource URI called. */
  name: string | null;
  decision: AuditRecord['decision'];
  outcome: AuditRecord['outcome'];
  reason: string | null;
  durationMs: number;
  traceId: string | null;
}

export const DEFAULT_RECENT_CALLS_CAPACITY = 100;

export class RecentCalls {
  readonly #ring: Array<RecentCall | undefined>;
  #next = 0;
  #size = 0;

  constructor(capacity = DEFAULT_RECENT_CALLS_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`Cannot create RecentCalls: capacity must be a positive integer, got ${capacity}`);
    this.#ring = new Array<RecentCall | undefined>(capacity);
  }

  /** Keeps a call (credential refusals, link requests, config changes and sessions are not calls). */
  record(record: AuditRecord & { time: string }): void {
    if (record.event !== 'call' && record.event !== 'open') return;
    this.#ring[this.#next] = {
      time: record.time,
      agent: record.agent,
      server: record.server,
      host: record.host,
      method: record.method,
      name: (record.tool ?? record.prompt ?? record.uri ?? null)?.slice(0, 200) ?? null,
      decision: record.decision,
      outcome: record.outcome,
      reason: record.reason?.slice(0, 200) ?? null,
      durationMs: Math.round(record.durationMs * 10) / 10,
      traceId: record.traceId ?? null,
    };
    this.#next = (this.#next + 1) % this.#ring.length;
    this.#size = Math.min(this.#size + 1, this.#ring.length);
  }

  /** Newest first; with `agent`, only that agent's calls. Returns copies. */
  list(agent?: string): RecentCall[] {
    const out: RecentCall[] = [];
    for (let i = 1; i <= this.#size; i++) {
      const call = this.#ring[(this.#next - i + this.#ring.length) % this.#ring.length]!;
      if (agent === undefined || call.agent === agent) out.push({ ...call });
    }
    return out;
  }

  get size(): number {
    return this.#size;
  }
}
