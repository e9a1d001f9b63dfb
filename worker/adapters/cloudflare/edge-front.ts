/**
 * The stateless edge worker: whichever isolate a request lands on answers it or routes it to the
 * Durable Object whose state it needs, so no request depends on the isolate a link or a session
 * happened to reach (DESIGN §8).
 *
 * - `GET /link`: to the `HostLink` object of the host the upgrade names, once its upgrade proof
 *   verified here (`link-upgrade-gate.ts`: a configured host, this worker's origin, a signature by
 *   its key, a time within 5 minutes); any refusal is answered here without waking an object,
 *   whose own link route checks again and remembers the nonce.
 * - `/mcp`, `/servers/:name/mcp`: Host/Origin guard and bearer auth here, before any object wakes.
 *   A legacy request goes to the `AgentSession` object that holds its session: the one its
 *   `Mcp-Session-Id` names, or for an `initialize` a new one. A modern (2026-07-28) request is
 *   stateless: to a server on a host it goes straight to that host's object, which serves it with
 *   the same app on the link it holds (no relay); the rest (edge-direct servers, refusals) is
 *   served here by the same app as on Deno.
 * - `/healthz`: the same handler, after reading each host's state from its object. Agent sessions
 *   live in their objects and are not counted here (`sessions` is 0).
 * - everything else (`/`, 404s): the same app.
 *
 * @module
 */
import type { Context } from 'hono';
import { Hono } from '../../trie-router-hono.ts';
import { createApp, workerHostOriginGuard } from '../../app.ts';
import { agentAuth, bearerTokenOf, type AgentVariables } from '../../auth/agent-auth.ts';
import { statusViewerIndex } from '../../status/healthz.ts';
import { auditedAuth } from '../../audit/credential-audit.ts';
import { createWorkerOAuth } from '../../auth/oauth/oauth.ts';
import type { WorkerAudit } from '../../audit/worker-audit.ts';
import type { AgentEntry, WorkerConfig } from '../../config/worker-config.ts';
import { createHostVerifier } from '../../link/host-auth.ts';
import { notAnUpgrade } from '../../link/link-route.ts';
import { createLinkUpgradeGate } from '../../link/link-upgrade-gate.ts';
import type { WorkerLogger } from '../../log.ts';
import { classifyByHeaders, classifyEra } from '../../modern/era.ts';
import { ExecutorTargetRouter } from '../../routing/executor-target-router.ts';
import { jsonRpcErrorResponse } from '../../sessions/session-route.ts';
import { hostOf } from '../../../shared/descriptors.ts';
import { httpStatusFor, WireError } from '../../../shared/errors.ts';
import { DurableObjectHostLinkRegistry, hostObject } from './durable-object-registry.ts';
import { NoSessionTable } from './no-session-table.ts';
import { OpenOutcomes } from '../../status/open-outcomes.ts';
import { RecentErrors } from '../../status/recent-errors.ts';
import { workersOAuth } from './cloudflare-env.ts';
import { AgentSlotsClient, endingGrantSessions } from './agent-slots-object.ts';
import { within } from './within.ts';
import { objectOfSession } from './session-id.ts';
import type { SwitchyardEnv } from './workers-runtime.ts';

export function createEdgeApp(env: SwitchyardEnv, config: WorkerConfig, log: WorkerLogger, audit: WorkerAudit): Hono<{ Variables: AgentVariables }> {
  // The opens happen in each host's object; its status read brings their outcomes here, for /healthz.
  const openOutcomes = new OpenOutcomes();
  const recentErrors = new RecentErrors();
  const registry = new DurableObjectHostLinkRegistry(env.HOST_LINK, { log, openOutcomes, recentErrors });
  // A grant ended here (`/oauth/revoke`, a refresh token reused) ends its sessions in their objects at once.
  const runtime = workersOAuth(env, config).oauth;
  const oauthRuntime = runtime === undefined ? {} : { oauth: endingGrantSessions(runtime, env.AGENT_SLOTS, log) };
  const sessions = new NoSessionTable();
  const core = createApp({ config, router: new ExecutorTargetRouter({ registry }), sessions, registry, log, audit, openOutcomes, recentErrors, ...oauthRuntime });

  const app = new Hono<{ Variables: AgentVariables }>();
  // Stateless here (any isolate may answer): the host's object, which sees all of its links,
  // remembers used proofs.
  const admitUpgrade = createLinkUpgradeGate({
    verifier: createHostVerifier(config.hosts),
    publicUrl: config['public-url'],
    allowedHosts: config['allowed-hosts'],
    log,
    remember: false,
    // Refusals here never reach the object, which records the rest: a replay it catches, the
    // challenge, and the hosts that proved their key.
    audit: { linkRefused: (entityId, reason, check, unknownName) => audit.linkRefused(entityId, reason, check, unknownName), linkAccepted: () => {} },
  });
  app.get('/link', async (c) => {
    if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') return notAnUpgrade();
    const verdict = await admitUpgrade(c.req.raw);
    if (!verdict.ok) return verdict.response;
    return hostObject(env.HOST_LINK, verdict.entityId).fetch(c.req.raw).catch(() => {
      // The sidecar dials again; it is told why in the link's own refusal form.
      const failed = new WireError('host-offline', 'The worker could not take this link: its Durable Object failed; dial again', { detail: { 'entity-id': verdict.entityId } });
      return Response.json(failed.toHttpBody(), { status: httpStatusFor(failed.reason) });
    });
  });

  // The app's own guard, so the edge accepts exactly the hosts and origins every runtime does.
  const guard = workerHostOriginGuard(config);
  // Agents authenticate here as in the app: a configured bearer token, or with `oauth` an access
  // token of its server (whose state every isolate shares); refused credentials are audited here.
  const oauth = config.oauth === undefined
    ? undefined
    : createWorkerOAuth({ log, ...oauthRuntime.oauth, config: config.oauth, agents: config.agents, adminTokenSha256: config['admin-token-sha256'], publicUrl: config['public-url'] });
  const auth = auditedAuth(agentAuth(config.agents, oauth?.resourceAuth), audit);
  const agentRoute = async (c: Context<{ Variables: AgentVariables }>) => {
    if (!(await isLegacy(c.req.raw))) {
      // Straight to the host's object, which serves it on the link it holds; anything else
      // (edge-direct, refusals, /mcp) is the app's here.
      const host = hostServing(config, c.get('agent'), c.req.param('name'));
      if (host === null) return core.fetch(c.req.raw);
      return hostObject(env.HOST_LINK, host).fetch(c.req.raw).catch(() =>
        jsonRpcErrorResponse(c, null, new WireError('host-offline', `Host "${host}" is unreachable: its Durable Object failed; try again`, { detail: { 'entity-id': host } })));
    }
    const sessionId = c.req.header('mcp-session-id');
    if (sessionId !== undefined) {
      const object = objectOfSession(env.AGENT_SESSION, sessionId);
      // An object that is gone (reset by a deploy, evicted) has lost its session: the same 404.
      if (object === null) return sessionNotFound(c);
      return env.AGENT_SESSION.get(object).fetch(c.req.raw).catch(() => sessionNotFound(c));
    }
    // Only a POST can open a session; anything else gets the app's own refusal.
    if (c.req.method !== 'POST') return core.fetch(c.req.raw);
    return env.AGENT_SESSION.get(env.AGENT_SESSION.newUniqueId()).fetch(c.req.raw).catch(() =>
      jsonRpcErrorResponse(c, null, new WireError('launch-failed', 'The session could not be opened: its Durable Object failed; try again')));
  };
  app.all('/mcp', guard, auth, agentRoute);
  app.all('/servers/:name/mcp', guard, auth, agentRoute);

  app.get('/healthz', async (c) => {
    // Asking every host's object costs a subrequest each: only for a token the report is for.
    // An agent's report names only the hosts of its servers: only theirs are asked (others' stay asleep).
    const header = c.req.header('authorization');
    const viewer = header === undefined ? -1 : await statusViewerIndex(config, bearerTokenOf(header));
    if (viewer !== -1) {
      const agent = config.agents[viewer];
      const hosts = agent === undefined ? config.hosts.map((h) => h['entity-id']) : agent.servers.map((s) => hostServing(config, agent, s)).filter((h): h is string => h !== null);
      // The sessions live in objects of their own: each agent's slots object counts them (the admin's report, every agent's).
      await Promise.all([registry.refresh([...new Set(hosts)]), countSessions(env, sessions, agent === undefined ? config.agents.map((a) => a.name) : [agent.name])]);
    }
    return core.fetch(c.req.raw);
  });
  app.all('*', (c) => core.fetch(c.req.raw));
  return app;
}

/** Agents' slots objects asked at once, as host objects are for their state. */
const COUNT_CONCURRENCY = 50;
/** Longest wait for one agent's count: one that does not answer keeps its last count. */
const COUNT_TIMEOUT_MS = 1_000;
/**
 * Asks each agent's `AgentSlots` object how many sessions it holds; one that fails to answer in
 * time keeps its last count. One subrequest per agent, as the hosts' state is one per host: each
 * answers from its memory, outside its queue of admissions.
 */
async function countSessions(env: SwitchyardEnv, sessions: NoSessionTable, agents: readonly string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < agents.length; i = next++) {
      const agent = agents[i]!;
      const count = await within(new AgentSlotsClient(env.AGENT_SLOTS, agent).held().catch(() => undefined), COUNT_TIMEOUT_MS, undefined);
      if (count !== undefined) sessions.heldBy(agent, count);
    }
  };
  await Promise.all(Array.from({ length: Math.min(COUNT_CONCURRENCY, agents.length) }, worker));
}

/** The app's own answer for a session it does not have, which tells an MCP client to initialize again. */
function sessionNotFound(c: Context): Response {
  return jsonRpcErrorResponse(c, null, new WireError('invalid-request', 'Session not found: it expired or was closed; initialize a new session'), 404);
}

/** The host a server the agent may use is bound to, or null (edge-direct, unknown, not allowed). */
function hostServing(config: WorkerConfig, agent: AgentEntry, server: string | undefined): string | null {
  if (server === undefined || !agent.servers.includes(server) || !Object.hasOwn(config.servers, server)) return null;
  return hostOf(config.servers[server]!.executor);
}

/** Whether the app would serve this request as legacy; the body is peeked at through a clone only. */
async function isLegacy(request: Request): Promise<boolean> {
  const verdict = classifyByHeaders(request.method, request.headers);
  if (verdict !== 'peek') return verdict === 'legacy';
  return (await classifyEra(request)).kind === 'legacy';
}
