/**
 * Per-agent session limits: one agent (a client that opens sessions and never closes them, as
 * the MCP Inspector CLI does) must not hold every server process a host can run.
 *
 * An agent may hold `max-sessions` live sessions (its own entry, else the worker's
 * `max-sessions-per-agent`), counting the sessions it is opening right now. A new session past
 * the limit ends that agent's least recently used *idle* session (nothing in flight) first, so a
 * forgetful client keeps working and its oldest leftovers go; only when every one of its sessions
 * is busy is the new one refused, with `limit-reached`. Other agents' sessions are never chosen.
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import { DEFAULT_MAX_SESSIONS_PER_AGENT } from '../config/worker-config.ts';

/** A live session of the agent asking for room, as the limit sees it. */
export interface LimitCandidate {
  readonly id: string;
  readonly lastSeen: number;
  readonly inFlight: number;
}

export type Admission = { readonly kind: 'admit'; readonly evict: readonly string[] } | { readonly kind: 'full' };

/** The session limit of one agent: its own `max-sessions`, else the worker-wide one. */
export function sessionLimitOf(agent: { readonly 'max-sessions'?: number | undefined }, config: { readonly 'max-sessions-per-agent'?: number | undefined } | undefined): number {
  return agent['max-sessions'] ?? config?.['max-sessions-per-agent'] ?? DEFAULT_MAX_SESSIONS_PER_AGENT;
}

/**
 * Decides whether one more session fits: the ids to end first (oldest idle first), or `full`
 * when not enough of them are idle.
 *
 * @param live The agent's live sessions.
 * @param pending Sessions of the agent being opened right now (not yet in `live`).
 * @param limit The agent's limit.
 */
export function admitSession(live: readonly LimitCandidate[], pending: number, limit: number): Admission {
  const excess = live.length + pending + 1 - limit;
  if (excess <= 0) return { kind: 'admit', evict: [] };
  const idle = live.filter((s) => s.inFlight === 0).sort((a, b) => a.lastSeen - b.lastSeen);
  if (idle.length < excess) return { kind: 'full' };
  return { kind: 'admit', evict: idle.slice(0, excess).map((s) => s.id) };
}

export function limitReached(agent: string, limit: number): WireError {
  return new WireError(
    'limit-reached',
    `Agent "${agent}" already holds ${limit} live sessions, all busy: close a session (DELETE with its Mcp-Session-Id) or raise max-sessions in the worker config`,
    { detail: { agent, limit } },
  );
}
