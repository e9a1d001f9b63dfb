/**
 * `/healthz`: liveness for anyone, details for those entitled to them.
 *
 * - No `Authorization` header: `{"ok":true}` only, so a load balancer can probe without a secret
 *   and an anonymous caller learns no host or server names.
 * - The admin token (`admin-token-sha256`): every host (linked or not, since when, open channels),
 *   every server with its binding and state, and the number of agent sessions.
 * - An agent token: the same shape limited to that agent's servers, the hosts they are bound to
 *   (without their open channels, which are every agent's), and that agent's sessions (an agent
 *   never learns of other agents' servers, nor how much they use a host).
 * - A wrong token: 401, like every agent route, so a typo is not mistaken for a healthy answer.
 *
 * A server's `binding` is `edge-direct` (top-level http), `host:<entity-id>` or `local` (the
 * all-in-one mode's in-process host); its `state` is `available`, `failing` (its host is linked,
 * but the latest open of it failed: the agent's own latest, or for the admin anyone's, with that
 * failure as `failure`, until an open succeeds), `host-offline` (its host has no live link), or
 * for an agent, `unsupported-policy` when its trust context requires containment and the server
 * is edge-direct.
 *
 * For the status page at `/`, the report also carries `viewer`, `recentErrors` and, for the admin,
 * `sessionGroups` (see `status/status-report.ts`).
 *
 * @module
 */
import type { Handler } from 'hono';
import { hostOf } from '../../shared/descriptors.ts';
import { bearerTokenOf, matchTokenHash, unauthorizedResponse } from '../auth/agent-auth.ts';
import { ACCESS_TOKEN_PREFIX } from '../auth/oauth/grants.ts';
import type { AgentEntry, WorkerConfig } from '../config/worker-config.ts';
import type { HostLinkStatus } from '../link/host-link-registry.ts';
import type { SessionTable } from '../sessions/session-table.ts';
import type { RecentErrors } from './recent-errors.ts';
import type { FailedOpen, OpenOutcomes } from './open-outcomes.ts';
import type { RecentCalls } from '../audit/recent-calls.ts';
import { statusDetails } from './status-report.ts';
import { tokenFingerprint } from '../audit/credential-audit.ts';
import { traceContextOf, type WorkerAudit } from '../audit/worker-audit.ts';

export interface HealthzDeps {
  config: WorkerConfig;
  sessions: SessionTable;
  /** Host link states; absent when this worker has no link endpoint (e.g. unit tests). */
  hostStatus?: () => HostLinkStatus[];
  /** Recent failures, reported as `recentErrors` (see `status/status-report.ts`). */
  recentErrors?: RecentErrors;
  /** How each server's latest open went: a server whose latest open failed is `failing`. */
  openOutcomes?: OpenOutcomes;
  /** The last audited calls, reported as `recentCalls`. */
  recentCalls?: RecentCalls;
  /** Where a refused token goes on the record, as on every agent route. */
  audit?: WorkerAudit;
  clock?: () => Date;
}

/** A report for one token's holder: kept by no cache, and told apart by the token. */
const PRIVATE = { 'cache-control': 'no-store', vary: 'Authorization' };

export interface ServerHealth {
  name: string;
  binding: string;
  state: 'available' | 'failing' | 'host-offline' | 'unsupported-policy';
  /** Why it is `failing`: its latest open's failure (the admin's view names whose open it was). */
  failure?: FailedOpen;
}

/**
 * Who a `/healthz` token is: the index of its agent in `config.agents`, `agents.length` for the
 * admin, or -1 for none (a token of no one, or none at all).
 */
export async function statusViewerIndex(config: Pick<WorkerConfig, 'agents' | 'admin-token-sha256'>, token: string | null): Promise<number> {
  if (token === null) return -1;
  const admin = config['admin-token-sha256'];
  return matchTokenHash(token, [...config.agents.map((a) => a['token-sha256']), ...(admin !== undefined ? [admin] : [])]);
}

export function createHealthzHandler(deps: HealthzDeps): Handler {
  return async function healthz(c) {
    const header = c.req.header('authorization');
    if (header === undefined) return c.json({ ok: true });
    const token = bearerTokenOf(header);
    if (token === null) {
      deps.audit?.credentialRefused(null, '', traceContextOf(c.req.raw.headers));
      return unauthorizedResponse(c, false);
    }
    const agents = deps.config.agents;
    const index = await statusViewerIndex(deps.config, token);
    if (index === -1) {
      // A guessed token here is on the record as it is on the MCP endpoints (review s22).
      deps.audit?.credentialRefused(await tokenFingerprint(token), '', traceContextOf(c.req.raw.headers));
      // An app's OAuth token stands for an agent on its MCP endpoints only; the page takes the tokens of the config.
      const why = token.startsWith(ACCESS_TOKEN_PREFIX) ? 'An OAuth access token is for the MCP endpoints: sign in here with the agent\'s own token or the admin token' : undefined;
      return unauthorizedResponse(c, true, why);
    }
    const agent = index < agents.length ? agents[index]! : null;
    return c.json(healthReport(deps, agent), 200, PRIVATE);
  };
}

/** The detailed report, for the admin (`agent` null) or one agent. */
export function healthReport(deps: HealthzDeps, agent: AgentEntry | null) {
  const hosts = deps.hostStatus?.() ?? deps.config.hosts.map((h) => ({ 'entity-id': h['entity-id'], linked: false, since: null, channels: 0, roundTripMs: null }));
  const linked = new Map(hosts.map((h) => [h['entity-id'], h.linked]));
  const names = agent === null ? Object.keys(deps.config.servers) : agent.servers.filter((s) => Object.hasOwn(deps.config.servers, s));
  const servers: ServerHealth[] = names.map((name) => {
    const descriptor = deps.config.servers[name]!.executor;
    const host = hostOf(descriptor);
    if (host !== null) return linked.get(host) === true ? reachable(deps, name, `host:${host}`, agent) : { name, binding: `host:${host}`, state: 'host-offline' };
    if (descriptor.type === 'local') return reachable(deps, name, 'local', agent);
    const refused = agent?.['trust-context']?.containment === 'required';
    return refused ? { name, binding: 'edge-direct', state: 'unsupported-policy' } : reachable(deps, name, 'edge-direct', agent);
  });
  const usedHosts = new Set(servers.flatMap((s) => (s.binding.startsWith('host:') ? [s.binding.slice(5)] : [])));
  const sessions = agent === null ? deps.sessions.size : (deps.sessions.countOf?.(agent.name) ?? deps.sessions.list().filter((s) => s.agent === agent.name).length);
  return {
    ok: true,
    time: (deps.clock ?? (() => new Date()))().toISOString(),
    // A host's open channels are every agent's: an agent is not told how much others use it.
    hosts: agent === null ? hosts : hosts.filter((h) => usedHosts.has(h['entity-id'])).map(({ channels: _everyAgents, ...host }) => host),
    servers,
    sessions,
    ...statusDetails(deps.sessions.list(), deps.recentErrors, agent, deps.recentCalls),
  };
}

/** A server whose host (or the edge) can be reached: `available`, or `failing` while the latest open of it (this viewer's, or anyone's for the admin) failed. */
function reachable(deps: HealthzDeps, name: string, binding: string, agent: AgentEntry | null): ServerHealth {
  const failure = deps.openOutcomes?.failure(name, agent?.name);
  return failure === undefined ? { name, binding, state: 'available' } : { name, binding, state: 'failing', failure };
}
