/**
 * WorkerAudit: the worker's side of the audit log. It hands each agent session (and each modern
 * request) a `CallLedger` scoped to its agent, server and host, and records what the worker
 * refuses itself: a server the agent may not use, a channel open that failed (a stale trust
 * profile, an offline host, …), a wrong agent credential. Every record also goes to the
 * recent-calls ring of the status page.
 *
 * Trace context starts here: the agent's `traceparent` header when it sent a valid one, else a
 * new trace (`traceContextOf`); the channel-open request carries it to the host, and each audited
 * call's `_meta.traceparent` names the worker's span of that call.
 *
 * @module
 */
import { AuditLog } from '../../shared/audit/audit-log.ts';
import { CallLedger, type CallScope } from '../../shared/audit/call-ledger.ts';
import type { McpConnection } from '../../shared/connection-request.ts';
import { hostOf } from '../../shared/descriptors.ts';
import type { WireError } from '../../shared/errors.ts';
import { childSpan, formatTraceparent, parseTraceparent, TRACEPARENT_KEY, type TraceContext } from '../../shared/trace-context.ts';
import type { WorkerConfig } from '../config/worker-config.ts';
import { RecentCalls } from './recent-calls.ts';
import type { LinkAudit } from '../link/link-upgrade-gate.ts';
import type { EndedLink } from '../link/host-link-registry.ts';
import type { ConfigChanges } from '../config/config-changes.ts';

export interface WorkerAuditOptions {
  config: WorkerConfig;
  /**
   * Where records go (`auditFromConfig`); its `onRecord` must feed `recentCalls`. Absent: no lines
   * are written (in-process tests), the recent calls are kept anyway.
   */
  log?: AuditLog;
  recentCalls?: RecentCalls;
  /** How long a cancelled call's line waits for an answer (`CallLedger.cancel`); tests shorten it. */
  cancelGraceMs?: number;
}

/** The agent's trace context from request headers (a `Headers` or the SDK's header record). */
export function traceContextOf(headers: Headers | Record<string, string | string[] | undefined> | undefined): TraceContext | null {
  if (headers === undefined) return null;
  const value = headers instanceof Headers ? headers.get(TRACEPARENT_KEY) : headers[TRACEPARENT_KEY];
  return parseTraceparent(Array.isArray(value) ? value[0] : value);
}

/** What a session's audit line names of it (`AgentSession`'s own fields). */
export interface SessionOnRecord {
  readonly id: string;
  readonly agent: string;
  /** `server:<name>` or `aggregate`. */
  readonly route: string;
}

export class WorkerAudit implements LinkAudit {
  readonly recentCalls: RecentCalls;
  readonly #config: WorkerConfig;
  readonly #log: AuditLog;
  readonly #cancelGraceMs: number | undefined;

  constructor(options: WorkerAuditOptions) {
    this.#config = options.config;
    this.#cancelGraceMs = options.cancelGraceMs;
    const recentCalls = (this.recentCalls = options.recentCalls ?? new RecentCalls());
    this.#log = options.log ?? new AuditLog({ component: 'worker', write: () => {}, onRecord: (record) => recentCalls.record(record) });
  }

  get log(): AuditLog {
    return this.#log;
  }

  /** The host `server` runs on, or null (edge-direct, local, unknown, none). */
  hostOf(server: string | null): string | null {
    const entry = server !== null && Object.hasOwn(this.#config.servers, server) ? this.#config.servers[server] : undefined;
    return entry === undefined ? null : hostOf(entry.executor);
  }

  /**
   * The host of `server` as `agent`'s records name it: none for a server the agent may not use.
   * Its refusal is the same as for a name no server has, and its records reach the agent's own
   * `/healthz` (`recentCalls`), which must not tell it where another agent's server runs.
   */
  #hostFor(agent: string | null, server: string | null): string | null {
    const allowed = agent !== null && server !== null && this.#config.agents.some((a) => a.name === agent && a.servers.includes(server));
    return allowed ? this.hostOf(server) : null;
  }

  /**
   * A ledger for the calls of one session or request to `server`. A server on a host (or the local
   * host) is reached through that host's trust profile, whose denial comes back as an answer the
   * host marks as its own (`shared/audit/host-answers.ts`): that is the decision of the call, and
   * the same error from the server behind it, or from a host that marks nothing, is not. An
   * edge-direct server answers for itself, and decides nothing. `server: null`: calls on `/mcp`
   * that name none of the agent's servers, refused on none.
   */
  ledger(scope: Omit<CallScope, 'host'>): CallLedger {
    const entry = scope.server !== null && Object.hasOwn(this.#config.servers, scope.server) ? this.#config.servers[scope.server] : undefined;
    return new CallLedger(this.#log, { ...scope, host: this.#hostFor(scope.agent, scope.server) }, { peerDecides: entry !== undefined && entry.executor.type !== 'http', ...(this.#cancelGraceMs !== undefined ? { cancelGraceMs: this.#cancelGraceMs } : {}) });
  }

  /** The `traceparent` a channel-open request carries: the agent's, or a new trace's. */
  channelTraceparent(agentContext: TraceContext | null): string {
    return formatTraceparent(agentContext ?? childSpan(null));
  }

  /** A request the worker answers with an error without opening anything (e.g. `server-not-found`). */
  refused(scope: { agent: string; server: string; era: 'legacy' | 'modern'; route?: 'passthrough' | 'aggregate' }, message: unknown, error: WireError, arrivedWith: TraceContext | null): void {
    const ledger = this.ledger(scope);
    if (CallLedger.audits(message)) {
      ledger.refuse(message, error.reason === 'denied-by-policy' ? 'denied-by-policy' : 'refused', error.reason, arrivedWith);
      return;
    }
    const method = (message as { method?: unknown } | null)?.method;
    this.#refusedOpen(scope.agent, scope.server, typeof method === 'string' ? method : null, error.reason, arrivedWith, scope);
  }

  /** A channel open that failed: the session or request it was for, on `route`, is refused with `error`. */
  openRefused(connection: McpConnection, error: WireError, route?: 'passthrough' | 'aggregate'): void {
    this.#refusedOpen(connection.agent ?? null, connection['server-name'], 'initialize', error.reason, parseTraceparent(connection.traceparent), {
      era: connection.era ?? 'legacy',
      ...(route !== undefined ? { route } : {}),
      ...(connection.session !== undefined ? { session: connection.session } : {}),
    });
  }

  /**
   * A wrong or missing agent credential; `fingerprint` names what was presented without revealing
   * it (`credential-audit.ts`), null when the request sent none.
   */
  credentialRefused(fingerprint: string | null, route: string, arrivedWith: TraceContext | null): void {
    const span = childSpan(arrivedWith);
    this.#log.record({
      event: 'credential',
      agent: null,
      server: null,
      host: null,
      method: null,
      decision: 'refused',
      outcome: 'error',
      // No token at all is how every OAuth client starts (discovery follows the 401's challenge), so
      // it is `no-credential` at info; a token that was presented and refused stays a warn.
      reason: fingerprint === null ? 'no-credential' : 'unauthorized',
      durationMs: 0,
      ...(fingerprint !== null ? { fingerprint } : { fingerprint: 'none: no bearer token' }),
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
      ...(route !== '' ? { route: route === '/mcp' ? 'aggregate' : 'passthrough' } : {}),
    });
  }

  /**
   * A refused link request; `entityId` is the configured host it named, not one that proved
   * anything (the gate refuses before or at the proof); `unknownName`, one no config lists.
   */
  linkRefused(entityId: string | null, reason: string, check: string, unknownName?: string): void {
    this.#log.record({ event: 'link', agent: null, server: null, host: entityId, method: null, decision: 'refused', outcome: 'error', reason, check, durationMs: 0, ...(unknownName !== undefined ? { unknownHost: unknownName } : {}) });
  }

  /** A host that proved it holds its key: linked, or a doctor's probe. */
  linkAccepted(entityId: string, probe: boolean): void {
    this.#log.record({ event: 'link', agent: null, server: null, host: entityId, method: null, decision: 'allowed', outcome: 'ok', durationMs: 0, ...(probe ? { probe: true as const } : {}) });
  }

  /** A host's link that ended, with why and how long it was up. */
  linkEnded(link: EndedLink): void {
    this.#log.record({ event: 'link', agent: null, server: null, host: link.entityId, method: null, decision: 'allowed', outcome: 'ok', ended: link.ended, durationMs: link.linkedForMs });
  }

  /** A changed config put in force (a reload) at `at` (`log.now()`), with what it changed and the sessions it ended. */
  configReloaded(changes: ConfigChanges, endedSessions: number, at = this.#log.now()): void {
    this.#log.record({ event: 'config', agent: null, server: null, host: null, method: null, decision: 'allowed', outcome: 'ok', durationMs: 0, changes, endedSessions }, at);
  }

  /** A legacy agent session whose `initialize` was answered. */
  sessionOpened(session: SessionOnRecord): void {
    this.#log.record({ ...this.#sessionScope(session), decision: 'allowed', outcome: 'ok', durationMs: 0 });
  }

  /** A session's end, `because` (`SessionEvents.ended`), `openForMs` after it opened. */
  sessionEnded(session: SessionOnRecord, because: string, openForMs: number): void {
    this.#log.record({ ...this.#sessionScope(session), decision: 'allowed', outcome: 'ok', ended: because, durationMs: openForMs });
  }

  #sessionScope(session: SessionOnRecord) {
    // `server:<name>` for /servers/:name/mcp, `aggregate` for /mcp (`AgentSession.route`).
    const server = session.route.startsWith('server:') ? session.route.slice('server:'.length) : null;
    return {
      event: 'session' as const,
      agent: session.agent,
      server,
      host: this.#hostFor(session.agent, server),
      method: null,
      era: 'legacy' as const,
      route: server === null ? ('aggregate' as const) : ('passthrough' as const),
      session: session.id,
    };
  }

  #refusedOpen(agent: string | null, server: string, method: string | null, reason: string, arrivedWith: TraceContext | null, extra: Partial<CallScope>): void {
    const span = childSpan(arrivedWith);
    const { parent: _parent, ...scope } = extra;
    this.#log.record({
      event: 'open',
      agent,
      server,
      host: this.#hostFor(agent, server),
      method,
      ...scope,
      decision: reason === 'denied-by-policy' ? 'denied-by-policy' : 'refused',
      outcome: 'error',
      reason,
      durationMs: 0,
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
    });
  }
}
