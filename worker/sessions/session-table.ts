/**
 * The session table: agent session id → the live session (agent, servers, upstream channels,
 * last activity). One of the two pieces of worker state DESIGN §8 keeps behind a small interface:
 * today it is a map in this isolate; on a multi-isolate edge it becomes a lookup that routes a
 * request to the isolate (or Durable Object) holding the session. Routes therefore only `add`,
 * `get`, `touch` and `remove`; they never iterate or reach into another session.
 *
 * Idle sessions expire: a timer sweeps the table and closes every session not seen for the idle
 * time that has no request in flight (a long tool call is activity, an open GET stream alone is
 * not), which closes its channels and so ends its server processes. A request in flight protects
 * its session for at most `maxBusyMs` from its arrival, so a server that never answers cannot pin a
 * process forever, while a session kept busy by calls that are answered is never ended for it.
 *
 * A session opened with an OAuth access token keeps the grant the token stands for, and ends when
 * that grant does (`endGrants`: revoked, or made stale by a reload), its GET stream with it.
 *
 * @module
 */
import type { WorkerLogger } from '../log.ts';
import { silentWorkerLogger } from '../log.ts';
import { unrefTimer } from '../../shared/unref-timer.ts';
import { admitSession, limitReached } from './agent-limits.ts';
import type { LegacyPostBody } from './legacy-post-body.ts';
import { EndedSessions, type SessionEnd } from './ended-sessions.ts';
import type { WorkerConfig } from '../config/worker-config.ts';
import type { WorkerAudit } from '../audit/worker-audit.ts';
import type { ChannelOpener } from '../routing/channel-opener.ts';
import type { AccessGrant } from '../auth/oauth/grants.ts';

/**
 * A config a reload put in force, with the parts of its app a session that follows a change itself
 * opens servers with: its audit, and its channel opener (its open deadline, its record of failed opens).
 */
export interface ConfigInForce {
  readonly config: WorkerConfig;
  readonly audit: WorkerAudit;
  readonly open: ChannelOpener;
}

/** One agent session as the table sees it; the route that created it owns the rest. */
export interface AgentSession {
  readonly id: string;
  /** Name of the agent that created it; other agents never reach it. */
  readonly agent: string;
  /** Endpoint it belongs to: `aggregate` or `server:<name>`. */
  readonly route: string;
  readonly servers: readonly string[];
  /** Upstream channels currently open for this session. */
  readonly channelCount: number;
  /** Agent requests currently being answered; a busy session never expires. */
  readonly inFlight: number;
  /**
   * When the oldest request in flight arrived (`Date.now()`), undefined with none. Without it the
   * table counts from the first sweep that found the session busy, which a session always busy
   * with calls that are answered would reach as well.
   */
  readonly oldestInFlightAt?: number | undefined;
  /** Answers one HTTP request of this session (POST, GET or DELETE); a POST's body may come already read. */
  handle(request: Request, body?: LegacyPostBody): Promise<Response>;
  /**
   * Settles once the agent's `initialize` is answered: true with a result, false with an error or
   * when the session closed first. Absent: it was answered when `handle` resolved (the session
   * answers it itself).
   */
  readonly initialized?: Promise<boolean>;
  /**
   * Closes the agent-facing transport and every upstream channel. Idempotent. `end`: why the
   * worker ended it (a config change, a shutdown, a request unanswered too long), which a session
   * answers its requests still in flight with.
   */
  close(why?: string, end?: SessionEnd): Promise<void>;
  /**
   * Follows a config change to its servers itself (a `/mcp` session: servers taken from the agent
   * close, servers given or bound elsewhere open); a reload ends such a session only for a change
   * to its agent (`config/config-reload.ts`). Resolves once the servers it lost are closed.
   */
  reconfigure?(next: ConfigInForce): Promise<void>;
}

export interface SessionInfo {
  id: string;
  agent: string;
  route: string;
  servers: readonly string[];
  channels: number;
  lastSeen: number;
}

export interface SessionTable {
  /** `grant`: the OAuth grant of the access token that opened it, which ends it when it ends (`endGrants`). */
  add(session: AgentSession, grant?: AccessGrant): void;
  get(id: string): AgentSession | undefined;
  /** Records activity now. */
  touch(id: string): void;
  /** Drops the entry without closing it (the session closed itself, for `end` when the worker ended it). */
  remove(id: string, end?: SessionEnd): void;
  /** The session's `initialize` was answered: it is open, and its end is told from now on (`onSession`). */
  opened?(id: string): void;
  /** How a session this table held lately was ended by the worker, for that agent on that route only (`ended-sessions.ts`). */
  endOf?(id: string, agent: string, route: string): Promise<SessionEnd | undefined>;
  /**
   * Makes room for one more session of `agent` within `limit` (see `agent-limits.ts`): ends its
   * oldest idle sessions when needed, or throws `limit-reached`. Call `release` once the new
   * session is added, or failed to open.
   */
  admit(agent: string, limit: number): Promise<{ release(): void }>;
  /** Closes and drops the sessions `pick` selects (a config reload ending what it changed). */
  closeWhere(pick: (session: AgentSession) => string | null): Promise<number>;
  /** Closes and drops the sessions opened under a grant `pick` selects, which ended (`grant-revoked`, `why` for the agent). */
  endGrants?(pick: (grant: AccessGrant) => boolean, why: string): Promise<number>;
  /**
   * Brings a session opened under `createdUnder` to the config in force, when a reload came while
   * it opened (the reload saw no such session): ends it as that reload would have, or hands it the
   * config. Resolves with why it was ended, or null.
   */
  catchUp?(session: AgentSession, createdUnder: WorkerConfig): Promise<string | null>;
  /** Closes and drops every session; used on shutdown. */
  closeAll(): Promise<void>;
  readonly size: number;
  /** How many sessions `agent` holds, where the table counts what it cannot list (Workers); else its listed ones are counted. */
  countOf?(agent: string): number;
  list(): SessionInfo[];
}

export interface InMemorySessionTableOptions {
  /** A session idle longer than this is closed. */
  idleMs: number;
  /** How often to sweep; a quarter of `idleMs`, at most 30 s, by default. */
  sweepIntervalMs?: number;
  /** Longest time requests in flight keep a session alive; six idle times (at least 1 h) by default. */
  maxBusyMs?: number;
  now?: () => number;
  log?: WorkerLogger;
  /** Told when a session is open (its `initialize` answered) and when it ends, why, and after how long. */
  onSession?: SessionEvents;
}

/** A session's life as the audit records it; an `initialize` that failed opened nothing, and ends nothing. */
export interface SessionEvents {
  opened(session: AgentSession): void;
  /** `because`: why the worker ended it (`idle`, `limit-reached`, `config-changed`, `grant-revoked`, a failure reason), `closed` when the agent or the session itself closed it, `shutdown`. */
  ended(session: AgentSession, because: string, openForMs: number): void;
}

interface Entry {
  session: AgentSession;
  lastSeen: number;
  busySince?: number;
  /** When its `initialize` was answered; unset while it opens. */
  openedAt?: number;
  /** The OAuth grant of the access token that opened it. */
  grant?: AccessGrant;
}

export class InMemorySessionTable implements SessionTable {
  readonly #sessions = new Map<string, Entry>();
  #idleMs: number;
  readonly #maxBusyMs: number;
  readonly #now: () => number;
  readonly #log: WorkerLogger;
  readonly #events: SessionEvents | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #sweepEveryMs: number;
  #disposed = false;
  /** Sessions being opened per agent: counted against its limit before they are added. */
  readonly #pending = new Map<string, number>();
  readonly #ended: EndedSessions;
  /** The config the last reload put in force, and why it ends a session opened under another (`followConfig`). */
  #inForce: { next: ConfigInForce; endReason: (from: WorkerConfig, session: AgentSession) => string | null } | undefined;

  constructor(options: InMemorySessionTableOptions) {
    this.#idleMs = options.idleMs;
    this.#maxBusyMs = options.maxBusyMs ?? Math.max(options.idleMs * 6, 3_600_000);
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? silentWorkerLogger;
    this.#events = options.onSession;
    this.#ended = new EndedSessions({ now: this.#now });
    this.#sweepEveryMs = options.sweepIntervalMs ?? Math.min(Math.max(options.idleMs / 4, 10), 30_000);
  }

  add(session: AgentSession, grant?: AccessGrant): void {
    this.#sessions.set(session.id, { session, lastSeen: this.#now(), ...(grant !== undefined ? { grant } : {}) });
    // Swept from the first session on: a table that never holds one (a Workers session object
    // whose initialize was refused) keeps no timer, which would keep its object from eviction.
    if (this.#timer === undefined && !this.#disposed) {
      this.#timer = setInterval(() => void this.sweep(), this.#sweepEveryMs);
      unrefTimer(this.#timer);
    }
  }

  get(id: string): AgentSession | undefined {
    return this.#sessions.get(id)?.session;
  }

  touch(id: string): void {
    const entry = this.#sessions.get(id);
    if (entry !== undefined) entry.lastSeen = this.#now();
  }

  remove(id: string, end?: SessionEnd): void {
    const entry = this.#sessions.get(id);
    if (entry === undefined) return;
    this.#sessions.delete(id);
    if (end !== undefined) this.#ended.record(entry.session, end);
    this.#gone(entry, end?.because ?? 'closed');
  }

  opened(id: string): void {
    const entry = this.#sessions.get(id);
    if (entry === undefined || entry.openedAt !== undefined) return;
    entry.openedAt = this.#now();
    this.#tell(() => this.#events?.opened(entry.session));
  }

  /** Tells of the end of a session taken out of the table, if it had opened. */
  #gone(entry: Entry, because: string): void {
    const openedAt = entry.openedAt;
    if (openedAt === undefined) return;
    this.#tell(() => this.#events?.ended(entry.session, because, this.#now() - openedAt));
  }

  /** The audit never throws into the table's bookkeeping (`AuditLog` counts its own failures). */
  #tell(event: () => void): void {
    try {
      event();
    } catch {}
  }

  /** The OAuth grant the session `id` was opened under, if any. */
  grantOf(id: string): AccessGrant | undefined {
    return this.#sessions.get(id)?.grant;
  }

  endOf(id: string, agent: string, route: string): Promise<SessionEnd | undefined> {
    return this.#ended.find(id, agent, route);
  }

  get size(): number {
    return this.#sessions.size;
  }

  list(): SessionInfo[] {
    return [...this.#sessions.values()].map(({ session, lastSeen }) => ({
      id: session.id,
      agent: session.agent,
      route: session.route,
      servers: session.servers,
      channels: session.channelCount,
      lastSeen,
    }));
  }

  /** Closes every idle session now; returns how many were closed. */
  async sweep(): Promise<number> {
    const now = this.#now();
    const idle: Array<[AgentSession, SessionEnd]> = [];
    for (const [id, entry] of this.#sessions) {
      let end: SessionEnd;
      if (entry.session.inFlight > 0) {
        const since = entry.session.oldestInFlightAt ?? (entry.busySince ??= now);
        if (now - since < this.#maxBusyMs) {
          entry.lastSeen = now;
          continue;
        }
        end = { because: 'request-timeout', why: `a request of it went unanswered for more than ${Math.round(this.#maxBusyMs / 1000)} s` };
      } else {
        entry.busySince = undefined;
        if (now - entry.lastSeen < this.#idleMs) continue;
        end = { because: 'idle', why: `no request for more than ${Math.round(this.#idleMs / 1000)} s` };
      }
      idle.push([entry.session, end]);
      this.#sessions.delete(id);
      this.#ended.record(entry.session, end);
      this.#gone(entry, end.because);
    }
    for (const [session] of idle) this.#log.info('Agent session expired', { session: session.id, agent: session.agent, route: session.route });
    await Promise.allSettled(idle.map(([s, end]) => s.close('idle', end)));
    return idle.length;
  }

  async admit(agent: string, limit: number): Promise<{ release(): void }> {
    const live = [...this.#sessions.values()]
      .filter((e) => e.session.agent === agent)
      .map((e) => ({ id: e.session.id, lastSeen: e.lastSeen, inFlight: e.session.inFlight }));
    const pending = this.#pending.get(agent) ?? 0;
    const admission = admitSession(live, pending, limit);
    if (admission.kind === 'full') {
      this.#log.warn('Agent session refused: limit reached', { agent, limit });
      throw limitReached(agent, limit);
    }
    this.#pending.set(agent, pending + 1);
    const evicted = admission.evict.map((id) => this.#sessions.get(id)!);
    const ended = evicted.map((entry) => entry.session);
    for (const entry of evicted) {
      const session = entry.session;
      this.#sessions.delete(session.id);
      this.#gone(entry, 'limit-reached');
      this.#ended.record(session, { because: 'limit-reached', why: `agent "${agent}" opened a session past its limit of ${limit}, and this was its least recently used idle one` });
      this.#log.info('Agent session ended to make room', { session: session.id, agent, route: session.route, limit });
    }
    await Promise.allSettled(ended.map((s) => s.close('limit')));
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.#pending.get(agent) ?? 1) - 1;
        if (left > 0) this.#pending.set(agent, left);
        else this.#pending.delete(agent);
      },
    };
  }

  async closeWhere(pick: (session: AgentSession) => string | null): Promise<number> {
    const picked: Array<[AgentSession, string, SessionEnd]> = [];
    for (const [id, entry] of this.#sessions) {
      const session = entry.session;
      const why = pick(session);
      if (why === null) continue;
      const end: SessionEnd = { because: 'config-changed', why: `the worker config changed: ${why}` };
      picked.push([session, why, end]);
      this.#sessions.delete(id);
      this.#ended.record(session, end);
      this.#gone(entry, 'config-changed');
    }
    for (const [session, why] of picked) this.#log.info('Agent session ended by a config change', { session: session.id, agent: session.agent, route: session.route, why });
    await Promise.allSettled(picked.map(([s, , end]) => s.close('config', end)));
    return picked.length;
  }

  async endGrants(pick: (grant: AccessGrant) => boolean, why: string): Promise<number> {
    const picked: AgentSession[] = [];
    for (const [id, entry] of this.#sessions) {
      if (entry.grant === undefined || !pick(entry.grant)) continue;
      picked.push(entry.session);
      this.#sessions.delete(id);
      this.#ended.record(entry.session, { because: 'grant-revoked', why });
      this.#gone(entry, 'grant-revoked');
    }
    for (const session of picked) this.#log.info('Agent session ended with its OAuth grant', { session: session.id, agent: session.agent, route: session.route, why });
    await Promise.allSettled(picked.map((s) => s.close('grant')));
    return picked.length;
  }

  /**
   * Says which config a reload puts in force, before it ends or reconfigures any session: one
   * still opening under an earlier config catches up when it is added (`catchUp`).
   */
  followConfig(next: ConfigInForce, endReason: (from: WorkerConfig, session: AgentSession) => string | null): void {
    this.#inForce = { next, endReason };
  }

  async catchUp(session: AgentSession, createdUnder: WorkerConfig): Promise<string | null> {
    const inForce = this.#inForce;
    if (inForce === undefined || inForce.next.config === createdUnder || this.#sessions.get(session.id)?.session !== session) return null;
    const why = inForce.endReason(createdUnder, session);
    if (why !== null) {
      await this.closeWhere((s) => (s === session ? why : null));
      return why;
    }
    await session.reconfigure?.(inForce.next);
    return null;
  }

  /**
   * Hands a config a reload put in force to every session that follows one itself
   * (`AgentSession.reconfigure`), after `closeWhere` ended those it changed; resolves with how
   * many were handed it.
   */
  async reconfigure(next: ConfigInForce): Promise<number> {
    const following = [...this.#sessions.values()].map((e) => e.session).filter((s) => s.reconfigure !== undefined);
    const outcomes = await Promise.allSettled(following.map((s) => s.reconfigure!(next)));
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.status === 'rejected') this.#log.warn('Agent session could not follow the config change', { session: following[i]!.id, agent: following[i]!.agent, error: String(outcome.reason) });
    }
    return following.length;
  }

  /** Changes the idle time (a config reload); the next sweep applies it. */
  setIdleMs(idleMs: number): void {
    this.#idleMs = idleMs;
  }

  async closeAll(): Promise<void> {
    const entries = [...this.#sessions.values()];
    const all = entries.map((e) => e.session);
    this.#sessions.clear();
    for (const entry of entries) this.#gone(entry, 'shutdown');
    const end: SessionEnd = { because: 'shutdown', why: 'the worker is stopping' };
    await Promise.allSettled(all.map((s) => s.close('shutdown', end)));
  }

  /** Stops the sweep timer for good (sessions stay); call after `closeAll` on shutdown. */
  dispose(): void {
    this.#disposed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

