/**
 * CallLedger: the audited calls in flight on one channel or session, from request to answer. The
 * worker's passthrough and modern routes, the aggregate and the sidecar's channel bridges all keep
 * one, so both sides time, trace and record calls the same way.
 *
 * `request` starts a call's span (a child of the trace context it arrived with: the agent's
 * `traceparent` header, else the request's `_meta.traceparent`, else the scope's, else a new
 * trace) and returns the message to forward, whose `_meta.traceparent` names that span; the
 * answer with the same id ends it in one audit record. Requests of other methods pass unchanged.
 *
 * @module
 */
import { childSpan, traceparentOfParams, withTraceparent, type Span, type TraceContext } from '../trace-context.ts';
import { roundDuration, type AuditLog } from './audit-log.ts';
import { unrefTimer } from '../unref-timer.ts';
import { AUDITED_METHODS, capped, outcomeOfAnswer, subjectOf, type AnswerTrust, type AuditDecision, type AuditRecord } from './audit-record.ts';

type Id = string | number;

/** Who a ledger's calls belong to; the same on every record of the ledger. */
export interface CallScope {
  agent: string | null;
  server: string | null;
  host: string | null;
  era?: 'legacy' | 'modern';
  route?: 'passthrough' | 'aggregate';
  session?: string;
  /** The trace context the channel was opened with, for requests that carry none of their own. */
  parent?: TraceContext | null;
}

interface Pending {
  startMs: number;
  span: Span;
  base: Omit<AuditRecord, 'decision' | 'outcome' | 'durationMs'>;
  /**
   * A later call with the same id, still in flight. JSON-RPC forbids reusing an id in flight, but
   * a peer that does must not take a call off the record: the calls queue under their id and
   * answers end them oldest first, as a server answering in order would.
   */
  next?: Pending;
  /** When the agent cancelled it; its line then waits `cancelGraceMs` for an answer before it says `cancelled`. */
  cancelledAtMs?: number;
  cancelTimer?: ReturnType<typeof setTimeout>;
}

/**
 * How long a cancelled call's line waits for an answer: MCP lets a server ignore a cancellation,
 * and an answer may already be on its way, so a call the agent withdrew may still have run.
 */
export const CANCEL_GRACE_MS = 2_000;

export interface CallLedgerOptions {
  /** How far an answer's error is believed (`AnswerTrust`): the worker's channels through a host, for the answers the host marked as its own. */
  peerDecides?: boolean;
  /** `CANCEL_GRACE_MS` by default. */
  cancelGraceMs?: number;
}

interface RequestLike {
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

const CANCELLED = Object.freeze({ decision: 'allowed' as const, outcome: 'error' as const, reason: 'cancelled' });

export class CallLedger {
  readonly #audit: AuditLog;
  readonly #scope: CallScope;
  /** The scope as every record of this ledger carries it (no `parent`), copied once rather than per call. */
  readonly #recorded: Omit<CallScope, 'parent'>;
  /** The oldest call in flight of each id; later ones with the same id hang off it (`Pending.next`). */
  readonly #pending = new Map<Id, Pending>();
  #inFlight = 0;
  readonly #trust: AnswerTrust;
  readonly #cancelGraceMs: number;

  constructor(audit: AuditLog, scope: CallScope, options: CallLedgerOptions = {}) {
    this.#audit = audit;
    this.#cancelGraceMs = options.cancelGraceMs ?? CANCEL_GRACE_MS;
    this.#scope = scope;
    this.#trust = options.peerDecides === true ? { peerDecides: true } : {};
    const { parent: _parent, ...recorded } = scope;
    this.#recorded = recorded;
  }

  /** Whether `message` is a request this ledger audits. */
  static audits(message: unknown): message is { id: Id; method: string; params?: unknown } {
    const m = message as RequestLike;
    return typeof m === 'object' && m !== null && typeof m.method === 'string' && AUDITED_METHODS.has(m.method) && (typeof m.id === 'string' || typeof m.id === 'number');
  }

  /** Starts an audited call; returns the message to forward (with this hop's `traceparent`), else `message` as it came. */
  request<M>(message: M, arrivedWith: TraceContext | null = null): M {
    if (!CallLedger.audits(message)) return message;
    const parent = arrivedWith ?? traceparentOfParams(message.params) ?? this.#scope.parent ?? null;
    const span = childSpan(parent);
    const pending: Pending = { startMs: this.#audit.now(), span, base: this.#base(message, span) };
    // A call the agent cancelled whose id comes again: the session gave the id back, so an answer
    // under it is the new call's. The cancelled one ends now, as cancelled.
    while (this.#pending.get(message.id)?.cancelledAtMs !== undefined) this.#finish(this.#take(message.id)!, CANCELLED);
    const first = this.#pending.get(message.id);
    if (first === undefined) this.#pending.set(message.id, pending);
    else {
      let last = first;
      while (last.next !== undefined) last = last.next;
      last.next = pending;
    }
    this.#inFlight++;
    return withTraceparent(message, span);
  }

  /** This hop's span of the (oldest) call `id` in flight, if any. */
  spanOf(id: Id): Span | undefined {
    return this.#pending.get(id)?.span;
  }

  /** A response (or any message): ends the call with its id, if one is in flight. */
  answer(message: unknown): void {
    const id = (message as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    if ((message as { method?: unknown }).method !== undefined) return;
    const pending = this.#take(id);
    if (pending === undefined) return;
    const outcome = outcomeOfAnswer(message, this.#trust);
    this.#finish(pending, pending.cancelledAtMs === undefined ? outcome : Object.assign(outcome, { cancelRequested: true as const }));
  }

  /**
   * The agent cancelled the (oldest) call `id`: its line ends as `cancelled`, at the moment of the
   * cancellation, unless an answer comes within the grace, which is then recorded as it went, with
   * `cancelRequested` (the call ran: a record must not say otherwise).
   */
  cancel(id: Id): void {
    const pending = this.#pending.get(id);
    if (pending === undefined || pending.cancelledAtMs !== undefined) return;
    pending.cancelledAtMs = this.#audit.now();
    pending.cancelTimer = setTimeout(() => {
      if (this.#pending.get(id) !== pending) return; // answered, or ended, meanwhile
      this.#take(id);
      this.#finish(pending, CANCELLED);
    }, this.#cancelGraceMs);
    unrefTimer(pending.cancelTimer);
  }

  /** Ends the (oldest) call `id` with a failure answered here (a timeout, the channel gone). */
  fail(id: Id, reason: string, decision: AuditDecision = 'allowed'): void {
    const pending = this.#take(id);
    if (pending === undefined) return;
    // A call the agent withdrew that ends here (its channel gone) is still the agent's cancellation.
    this.#finish(pending, pending.cancelledAtMs !== undefined ? CANCELLED : { decision, outcome: 'error', reason: capped(reason) });
  }

  /** Ends every call still in flight (the channel or session ended). */
  failAll(reason: string): void {
    for (const id of [...this.#pending.keys()]) while (this.#pending.has(id)) this.fail(id, reason);
  }

  /** Records a request answered here without forwarding it (denied by policy, refused). */
  refuse(message: unknown, decision: Exclude<AuditDecision, 'allowed'>, reason: string, arrivedWith: TraceContext | null = null): void {
    if (!CallLedger.audits(message)) return;
    const span = childSpan(arrivedWith ?? traceparentOfParams(message.params) ?? this.#scope.parent ?? null);
    this.#finish({ startMs: this.#audit.now(), span, base: this.#base(message, span) }, { decision, outcome: 'error', reason: capped(reason) });
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Removes the oldest call `id` in flight and returns it. */
  #take(id: Id): Pending | undefined {
    const pending = this.#pending.get(id);
    if (pending === undefined) return undefined;
    if (pending.next === undefined) this.#pending.delete(id);
    else this.#pending.set(id, pending.next);
    this.#inFlight--;
    if (pending.cancelTimer !== undefined) clearTimeout(pending.cancelTimer);
    return pending;
  }

  // Records are put together with `Object.assign` (its keys are this code's own, never `__proto__`),
  // not spreads, which V8 built through its slow path: see `AuditLog.record`.
  #base(message: { method: string; params?: unknown }, span: Span): Pending['base'] {
    return Object.assign(
      { event: 'call' as const },
      this.#recorded,
      { method: message.method },
      subjectOf(message.method, message.params, this.#audit.includeArguments),
      { traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId },
    );
  }

  #finish(pending: Pending, outcome: Pick<AuditRecord, 'decision' | 'outcome' | 'reason' | 'errorCode'>): void {
    // Rounded as the record keeps it, so that the audit log need not copy the record to round it.
    // A cancelled call ends when the agent withdrew it, not when its grace ran out.
    const endMs = outcome === CANCELLED ? (pending.cancelledAtMs ?? this.#audit.now()) : this.#audit.now();
    const durationMs = roundDuration(Math.max(0, endMs - pending.startMs));
    this.#audit.record(Object.assign({}, pending.base, outcome, { durationMs }), pending.startMs);
  }
}
