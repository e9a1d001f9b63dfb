/**
 * What `/healthz` adds for the status page, on top of hosts, servers and the session count:
 *
 * - `viewer`: who the token belongs to (`admin`, or `agent` with its name), so the page can say
 *   whose view it shows;
 * - `sessionGroups` (admin only): live sessions per agent and endpoint, with their open channels;
 *   an agent already has its own count in `sessions` and never learns of other agents;
 * - `recentErrors`: the recent failures (see `recent-errors.ts`), all of them for the admin, only
 *   the caller's own for an agent;
 * - `recentCalls`: the last audited calls, never with argument values, scoped the same way.
 *
 * Kept apart from `healthz.ts` so the route stays about authorization and the report's
 * contract, and this file about what the page needs.
 *
 * @module
 */
import type { AgentEntry } from '../config/worker-config.ts';
import type { SessionInfo } from '../sessions/session-table.ts';
import type { RecentError, RecentErrors } from './recent-errors.ts';
import type { RecentCall, RecentCalls } from '../audit/recent-calls.ts';

export type StatusViewer = { role: 'admin' } | { role: 'agent'; agent: string };

/** Live sessions of one agent on one endpoint. */
export interface SessionGroup {
  agent: string;
  /** The endpoint path the sessions use: `/mcp` or `/servers/<name>/mcp`. */
  endpoint: string;
  sessions: number;
  /** Upstream channels open across those sessions. */
  channels: number;
}

export interface StatusDetails {
  viewer: StatusViewer;
  sessionGroups?: SessionGroup[];
  recentErrors: RecentError[];
  /** The last audited calls (`audit/recent-calls.ts`), newest first: all for the admin, an agent's own for it. */
  recentCalls: RecentCall[];
}

/** The status-page part of the /healthz report, for the admin (`agent` null) or one agent. */
export function statusDetails(sessions: readonly SessionInfo[], errors: RecentErrors | undefined, agent: AgentEntry | null, calls?: RecentCalls): StatusDetails {
  if (agent !== null) return { viewer: { role: 'agent', agent: agent.name }, recentErrors: errors?.list(agent.name) ?? [], recentCalls: calls?.list(agent.name) ?? [] };
  return { viewer: { role: 'admin' }, sessionGroups: groupSessions(sessions), recentErrors: errors?.list() ?? [], recentCalls: calls?.list() ?? [] };
}

/** Sessions grouped by agent, then endpoint, both in name order (a stable table row order). */
export function groupSessions(sessions: readonly SessionInfo[]): SessionGroup[] {
  const groups = new Map<string, SessionGroup>();
  for (const session of sessions) {
    const endpoint = endpointOf(session.route);
    const key = JSON.stringify([session.agent, endpoint]);
    const group = groups.get(key) ?? { agent: session.agent, endpoint, sessions: 0, channels: 0 };
    group.sessions += 1;
    group.channels += session.channels;
    groups.set(key, group);
  }
  return [...groups.values()].sort((a, b) => a.agent.localeCompare(b.agent) || a.endpoint.localeCompare(b.endpoint));
}

/** `aggregate` → `/mcp`, `server:<name>` → `/servers/<name>/mcp`; anything else as is. */
function endpointOf(route: string): string {
  if (route === 'aggregate') return '/mcp';
  if (route.startsWith('server:')) return `/servers/${route.slice('server:'.length)}/mcp`;
  return route;
}
