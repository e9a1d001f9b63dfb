/**
 * `/servers/:name/mcp`: one server, passed through unchanged (Streamable HTTP, sessions).
 *
 * On the agent's `initialize`, the server's bound descriptor goes to the channel opener (the
 * router under its deadline) with the agent's trust context and the new session id; the channel
 * it returns is bridged raw to the agent by a `PassthroughSession`. A router refusal (host-offline, unsupported-policy, trust-profile-stale,
 * …) is answered at once with the HTTP status of its reason and a JSON-RPC error carrying
 * `data.reason`. A server the agent may not use answers exactly like one that does not exist
 * (404 `server-not-found`), so agents cannot probe for other agents' servers.
 *
 * @module
 */
import type { OpenListens } from '../modern/open-listens.ts';
import type { Handler } from 'hono';
import { WireError } from '../../shared/errors.ts';
import type { AgentVariables } from '../auth/agent-auth.ts';
import { connectionFor, trustFor } from '../routing/channel-router.ts';
import type { ChannelOpener } from '../routing/channel-opener.ts';
import type { WorkerConfig } from '../config/worker-config.ts';
import type { WorkerLogger } from '../log.ts';
import { PassthroughSession } from './passthrough-session.ts';
import type { SessionTable } from '../sessions/session-table.ts';
import type { OpenOutcomes } from '../status/open-outcomes.ts';
import type { RecentErrors } from '../status/recent-errors.ts';
import { endedSessionAnswer, handleSessionRequest, jsonRpcErrorResponse } from '../sessions/session-route.ts';
import { classifyEra } from '../modern/era.ts';
import { serveModern } from '../modern/modern-route.ts';
import { traceContextOf, type WorkerAudit } from '../audit/worker-audit.ts';
import type { AgentRequestCounters } from '../sessions/request-limits.ts';

export interface ServerPassthroughDeps {
  /** New session ids (`sessions/session-route.ts`); random UUIDs by default. */
  newSessionId?: () => string;
  config: WorkerConfig;
  /** Opens a server's channel, under the open deadline, recording a failed open. */
  open: ChannelOpener;
  sessions: SessionTable;
  log: WorkerLogger;
  /** Where a channel that fails after it opened is recorded (the status page). */
  recentErrors?: RecentErrors;
  /** Where the server's latest outcome goes, such a failure among them (the status page's `failing`). */
  openOutcomes?: OpenOutcomes;
  /** Longest wait for the server's answer to one request (`request-timeout-seconds`); none when absent. */
  requestTimeoutMs?: number;
  /** Longest wait for the answer to the agent's `initialize` (the open deadline); `requestTimeoutMs` when absent. */
  initializeTimeoutMs?: number;
  /** Every call on the record (`audit/`); none in tests that do not read it. */
  audit?: WorkerAudit;
  /** Each agent's requests in flight, kept across config reloads. */
  requestCounters: AgentRequestCounters;
  /** The modern listen streams open, which a reload ends where it no longer allows them. */
  listens?: OpenListens;
}

/** Answer for a server that is unknown or not allowed for this agent; the two are indistinguishable. */
export function serverNotFound(name: string, allowed: readonly string[]): WireError {
  const list = allowed.length === 0 ? 'none' : allowed.join(', ');
  return new WireError('server-not-found', `Server "${name.slice(0, 64)}" not found: this agent may use ${list}`);
}

export function createServerPassthroughHandler(deps: ServerPassthroughDeps): Handler<{ Variables: AgentVariables }> {
  return async function serverPassthrough(c) {
    const agent = c.get('agent');
    const name = c.req.param('name') ?? '';
    const entry = Object.hasOwn(deps.config.servers, name) ? deps.config.servers[name] : undefined;
    // A modern (2026-07-28) request is served statelessly, one channel per request; the rest is today's path.
    const classified = classifyEra(c.req.raw);
    const era = classified instanceof Promise ? await classified : classified;
    if (era.kind !== 'legacy') {
      const allowed = entry !== undefined && agent.servers.includes(name);
      return serveModern(c.req.raw, era, { agent, server: name, ...(allowed ? { descriptor: entry.executor } : { refusal: serverNotFound(name, agent.servers) }) }, deps);
    }
    // The agent's trace context is read only where it is used (a refusal, a session's open): a
    // session's own requests carry theirs to its ledger, so the rest of them never read it here.
    const trace = () => traceContextOf(c.req.raw.headers);
    if (entry === undefined || !agent.servers.includes(name)) {
      // A session a reload ended by taking its server away says so, rather than "not found".
      const ended = await endedSessionAnswer(c, agent, `server:${name}`, deps);
      if (ended !== undefined) return ended;
      const refusal = serverNotFound(name, agent.servers);
      deps.audit?.refused({ agent: agent.name, server: name.slice(0, 64), era: 'legacy', route: 'passthrough' }, null, refusal, trace());
      return jsonRpcErrorResponse(c, null, refusal);
    }
    return handleSessionRequest(c, agent, `server:${name}`, deps, async ({ sessionId }) => {
      const traceparent = deps.audit?.channelTraceparent(trace());
      const channel = await deps.open(entry.executor, connectionFor(agent, name, sessionId, traceparent), trustFor(agent), {}, 'passthrough');
      const { recentErrors, openOutcomes } = deps;
      const ledger = deps.audit?.ledger({ agent: agent.name, server: name, era: 'legacy', route: 'passthrough', session: sessionId });
      return new PassthroughSession({
        id: sessionId,
        agent: agent.name,
        server: name,
        channel,
        log: deps.log.child({ agent: agent.name }),
        onClosed: (session, end) => deps.sessions.remove(session.id, end),
        ...(deps.requestTimeoutMs !== undefined ? { requestTimeoutMs: deps.requestTimeoutMs } : {}),
        ...(deps.initializeTimeoutMs !== undefined ? { initializeTimeoutMs: deps.initializeTimeoutMs } : {}),
        ...(ledger !== undefined ? { ledger } : {}),
        onUpstreamFailed: (error: WireError) => {
          recentErrors?.record({ reason: error.reason, server: name, agent: agent.name, message: error.message });
          openOutcomes?.failed(agent.name, name, error.reason, error.message);
        },
      });
    });
  };
}
