/**
 * `/mcp`: one MCP endpoint aggregating every server the agent may use (Streamable HTTP, sessions).
 *
 * On the agent's `initialize`, every allowed server is opened through the channel opener (the
 * router under its deadline) in parallel, each
 * with the agent's trust context and the new session id, and an `AggregateSession` answers the
 * `initialize` itself, once every server is up or failed, or `aggregate-start-wait-seconds` have
 * passed: one still opening then is listed as starting, and comes in when it is up. Servers that
 * fail to open do not fail the session: they are listed as
 * unavailable with their reason (see `worker/aggregate/availability.ts`), so an agent always gets
 * a session, even when every host is offline. Names are `<server>__<name>` (see
 * `worker/aggregate/naming.ts`).
 *
 * A worker config reload does not end a session for a change to its servers: the session is
 * handed the new config (`AggregateSession.reconfigure`) with the parts of the app built for it
 * (its channel opener and audit, `ConfigInForce`), and binds its servers afresh (`bindingOf`).
 *
 * @module
 */
import type { OpenListens } from '../modern/open-listens.ts';
import type { Handler } from 'hono';
import type { ClientCapabilities, Implementation } from '@modelcontextprotocol/sdk/types.js';
import type { AgentVariables } from '../auth/agent-auth.ts';
import { connectionFor, trustFor } from '../routing/channel-router.ts';
import type { ChannelOpener } from '../routing/channel-opener.ts';
import type { AgentEntry, WorkerConfig } from '../config/worker-config.ts';
import type { WorkerLogger } from '../log.ts';
import { AggregateSession, type AggregateBinding } from './aggregate-session.ts';
import type { ConfigInForce, SessionTable } from '../sessions/session-table.ts';
import type { OpenOutcomes } from '../status/open-outcomes.ts';
import type { RecentErrors } from '../status/recent-errors.ts';
import { handleSessionRequest } from '../sessions/session-route.ts';
import { traceContextOf, type WorkerAudit } from '../audit/worker-audit.ts';
import { classifyEra } from '../modern/era.ts';
import { serveModernAggregate } from './modern/modern-aggregate.ts';
import type { AgentRequestCounters } from '../sessions/request-limits.ts';

export interface AggregateDeps {
  /** New session ids (`sessions/session-route.ts`); random UUIDs by default. */
  newSessionId?: () => string;
  config: WorkerConfig;
  /** Opens a server's channel, under the open deadline, recording a failed open. */
  open: ChannelOpener;
  sessions: SessionTable;
  log: WorkerLogger;
  /** Longest wait for initializing one server once its channel is open. */
  openTimeoutMs: number;
  /** Longest wait for one forwarded request. */
  requestTimeoutMs: number;
  /** Least time between lazy reconnect attempts of an unavailable server. */
  retryAfterMs?: number;
  /** Where upstream failures after the open (initialize, a channel ending) are recorded for the status page. */
  recentErrors?: RecentErrors;
  /** Where the server's latest outcome goes, such a failure among them (the status page's `failing`). */
  openOutcomes?: OpenOutcomes;
  /** Every call on the record (`audit/`). */
  audit?: WorkerAudit;
  /** Each agent's requests in flight, kept across config reloads. */
  requestCounters: AgentRequestCounters;
  /** The modern listen streams open, which a reload ends where it no longer allows them. */
  listens?: OpenListens;
}

export function createAggregateHandler(deps: AggregateDeps): Handler<{ Variables: AgentVariables }> {
  return async function aggregate(c) {
    const agent = c.get('agent');
    // A modern (2026-07-28) request is served statelessly (`modern/modern-aggregate.ts`); the rest is today's path.
    const classified = classifyEra(c.req.raw);
    const era = classified instanceof Promise ? await classified : classified;
    if (era.kind !== 'legacy') return serveModernAggregate(c.req.raw, era, agent, { config: deps.config, open: deps.open, log: deps.log, requestTimeoutMs: deps.requestTimeoutMs, startWaitMs: startWaitMs(deps), requestCounters: deps.requestCounters, ...(deps.audit !== undefined ? { audit: deps.audit } : {}), ...(deps.listens !== undefined ? { listens: deps.listens } : {}), ...(deps.openOutcomes !== undefined ? { openOutcomes: deps.openOutcomes } : {}), ...(deps.recentErrors !== undefined ? { recentErrors: deps.recentErrors } : {}) });
    return handleSessionRequest(c, agent, 'aggregate', deps, async ({ sessionId, initialize }) => {
      const traceparent = deps.audit?.channelTraceparent(traceContextOf(c.req.raw.headers));
      const session = { agent, id: sessionId, ...(traceparent !== undefined ? { traceparent } : {}) };
      return AggregateSession.open({
        id: sessionId,
        agent: agent.name,
        binding: bindingOf(session, deps),
        rebind: (next: ConfigInForce) => bindingOf(session, next),
        clientInfo: initialize.params.clientInfo as Implementation,
        agentCapabilities: initialize.params.capabilities as ClientCapabilities,
        openTimeoutMs: deps.openTimeoutMs,
        startWaitMs: startWaitMs(deps),
        requestTimeoutMs: deps.requestTimeoutMs,
        ...(deps.retryAfterMs !== undefined ? { retryAfterMs: deps.retryAfterMs } : {}),
        log: deps.log.child({ agent: agent.name }),
        onUpstreamFailed: (server, error) => {
          deps.recentErrors?.record({ reason: error.reason, server, agent: agent.name, message: error.message });
          deps.openOutcomes?.failed(agent.name, server, error.reason, error.message);
        },
        onClosed: (session) => deps.sessions.remove(session.id),
      });
    });
  };
}

/**
 * One session's servers under the config of `deps`: those of the agent's servers the config
 * has, each opened at its binding there with the agent's trust context and the session's id, and
 * audited by that config's audit. A reload ends the session when the agent's token or trust
 * context changed, so the agent's entry in `deps.config` differs from the session's first one
 * only in its servers.
 */
function bindingOf(session: { agent: AgentEntry; id: string; traceparent?: string }, deps: Pick<AggregateDeps, 'config' | 'open' | 'audit'>): AggregateBinding {
  const { config, audit } = deps;
  const agent = config.agents.find((a) => a.name === session.agent.name) ?? session.agent;
  const servers = agent.servers.filter((s) => Object.hasOwn(config.servers, s));
  return {
    servers,
    open: (server) => deps.open(config.servers[server]!.executor, connectionFor(agent, server, session.id, session.traceparent), trustFor(agent), {}, 'aggregate'),
    bindings: new Map(servers.map((s) => [s, JSON.stringify(config.servers[s]!.executor)])),
    ...(audit !== undefined ? { ledger: (server: string | null) => audit.ledger({ agent: agent.name, server, era: 'legacy', route: 'aggregate', session: session.id }) } : {}),
  };
}

/** How long `/mcp` waits for the servers' first answers (`aggregate-start-wait-seconds`), never past the open deadline. */
function startWaitMs(deps: AggregateDeps): number {
  return Math.min(deps.config['aggregate-start-wait-seconds'] * 1000, deps.openTimeoutMs);
}
