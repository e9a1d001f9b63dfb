/**
 * The worker's Hono app, built from injected dependencies so every runtime adapter (Deno, Node,
 * later Workers) and every test builds the same app: `createApp(deps)` touches no runtime API.
 *
 * Routes:
 * - `GET /healthz`: liveness without a token, details with one (see `status/healthz.ts`);
 * - `GET /`: the status page (`status/status-page.ts`), which signs in and reads `/healthz`;
 * - `/mcp` and `/servers/:name/mcp`: the agent endpoints, behind bearer auth;
 * - `GET /link`: where sidecars dial in (engineer C's route, mounted as given);
 * - with `oauth` configured: `/.well-known/oauth-protected-resource[/…]`, and for the built-in
 *   authorization server `/.well-known/oauth-authorization-server` and `/oauth/*` (`auth/oauth/`).
 *
 * Host and Origin are checked on every route except `/link` (see `auth/host-origin.ts`).
 * Errors: a `WireError` becomes its HTTP status and `{error:{reason,message}}`; a
 * `ValidationError` becomes 400 `invalid-request` with its issues; anything else is logged and
 * answered 500 with a message that leaks nothing.
 *
 * @module
 */
import type { OpenListens } from './modern/open-listens.ts';
import { Hono } from './trie-router-hono.ts';
import type { MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { UpgradeWebSocket } from 'hono/ws';
import { httpStatusFor, WireError } from '../shared/errors.ts';
import { ValidationError } from '../shared/validation.ts';
import { agentAuth, type AgentVariables } from './auth/agent-auth.ts';
import { hostOriginGuard } from './auth/host-origin.ts';
import { createWorkerOAuth, type OAuthDeps } from './auth/oauth/oauth.ts';
import type { ChannelRouter } from './routing/channel-router.ts';
import { createChannelOpener, type ChannelOpener } from './routing/channel-opener.ts';
import type { WorkerConfig } from './config/worker-config.ts';
import type { HostLinkRegistry } from './link/host-link-registry.ts';
import { hostExpectations } from './link/host-expectations.ts';
import { createLinkRoute } from './link/link-route.ts';
import { silentWorkerLogger, type WorkerLogger } from './log.ts';
import { createAggregateHandler } from './aggregate/aggregate-route.ts';
import { createHealthzHandler } from './status/healthz.ts';
import { createServerPassthroughHandler } from './passthrough/passthrough-route.ts';
import type { SessionTable } from './sessions/session-table.ts';
import { RecentErrors } from './status/recent-errors.ts';
import { OpenOutcomes } from './status/open-outcomes.ts';
import { statusPageResponse } from './status/status-page.ts';
import { auditedAuth } from './audit/credential-audit.ts';
import { WorkerAudit } from './audit/worker-audit.ts';
import { PROCESS_REQUEST_COUNTERS, type AgentRequestCounters } from './sessions/request-limits.ts';

/** Default longest wait for opening a server (the channel open, and its initialize: on `/mcp` the worker's, on `/servers/:name/mcp` the agent's). */
export const DEFAULT_OPEN_TIMEOUT_SECONDS = 60;
/** Default longest wait for one request forwarded by the aggregate (progress resets it). */
export const DEFAULT_AGGREGATE_REQUEST_TIMEOUT_SECONDS = 600;

export interface AppDeps {
  config: WorkerConfig;
  /** Opens server channels; in production the ExecutorTargetRouter. */
  router: ChannelRouter;
  sessions: SessionTable;
  /** Host links, for `/healthz` and for building `/link` from `upgradeWebSocket`. */
  registry?: HostLinkRegistry;
  /** The runtime's hono WebSocket helper; with `registry`, `/link` is built from it. */
  upgradeWebSocket?: UpgradeWebSocket<unknown, never>;
  /** The port the runtime listens on, once it does: a link proof must name it (see `link/link-origin.ts`). */
  listenPort?: () => number | undefined;
  /** A ready-made `/link` sub-app; wins over building one from `upgradeWebSocket`. */
  linkRoute?: Hono;
  clock?: () => Date;
  log?: WorkerLogger;
  /** Least time between lazy reconnects of an unavailable server on `/mcp` (tests use 0). */
  retryAfterMs?: number;
  /** Recent failures shown on `/healthz` and `/`; a fresh buffer by default. */
  recentErrors?: RecentErrors;
  /** How the latest open of each server went, per agent, for `/healthz` and `/`; a fresh one by default. */
  openOutcomes?: OpenOutcomes;
  /** The audit log and its recent calls; one that writes no lines by default. */
  audit?: WorkerAudit;
  /** What the `oauth` config section needs from the runtime: the state store (built-in server), fetchers. */
  oauth?: OAuthRuntime;
  /** New agent session ids (see `sessions/session-route.ts`); random UUIDs by default. */
  newSessionId?: () => string;
  /**
   * The channel opener of `config` (`appChannelOpener`), when the caller needs the same one: the
   * composed worker hands it to the sessions a reload reconfigures. Built here by default.
   */
  open?: ChannelOpener;
  /** Each agent's requests in flight; the composed worker keeps its own across reloads, else the process's (`PROCESS_REQUEST_COUNTERS`). */
  requestCounters?: AgentRequestCounters;
  /** The modern listen streams open: the composed worker keeps one across reloads, and ends those a reload no longer allows. */
  listens?: OpenListens;
}

/** The runtime's part of OAuth: everything of `OAuthDeps` the config does not say. */
export type OAuthRuntime = Omit<OAuthDeps, 'config' | 'agents' | 'adminTokenSha256' | 'publicUrl' | 'log'>;

/**
 * The Host/Origin guard of every runtime's agent routes. `public-url` is the worker's own address:
 * the link route already takes it, so agents that use it must not be refused a Host that
 * `allowed-hosts` does not repeat, and its origin may always post (the OAuth consent form behind a
 * proxy).
 */
export function workerHostOriginGuard(config: WorkerConfig): MiddlewareHandler {
  const publicUrl = config['public-url'] === undefined ? [] : [new URL(config['public-url'])];
  return hostOriginGuard({
    allowedHosts: [...config['allowed-hosts'], ...publicUrl.map((url) => url.host)],
    allowedOrigins: [...config['allowed-origins'], ...publicUrl.map((url) => url.origin)],
  });
}

/**
 * The router composed once for both agent endpoints under `config`'s open deadline, recording a
 * failed open in `recentErrors` and, but for a modern request's, in `audit`, and every open's
 * outcome in `openOutcomes`.
 */
export function appChannelOpener(deps: { config: WorkerConfig; router: ChannelRouter; recentErrors: RecentErrors; openOutcomes?: OpenOutcomes; audit: WorkerAudit }): ChannelOpener {
  const { recentErrors, openOutcomes, audit } = deps;
  return createChannelOpener(deps.router, {
    timeoutMs: (deps.config['request-timeout-seconds'] ?? DEFAULT_OPEN_TIMEOUT_SECONDS) * 1000,
    onOpenFailed: (connection, error, route) => {
      recentErrors.record({ reason: error.reason, server: connection['server-name'], agent: connection.agent ?? null, message: error.message });
      openOutcomes?.failed(connection.agent, connection['server-name'], error.reason, error.message);
      // A modern request's refusal is recorded by its route, with the tool it was for.
      if (connection.era !== 'modern') audit.openRefused(connection, error, route);
    },
    ...(openOutcomes !== undefined ? { onOpened: (connection) => openOutcomes.opened(connection.agent, connection['server-name']) } : {}),
  });
}

export function createApp(deps: AppDeps): Hono<{ Variables: AgentVariables }> {
  const { config, sessions } = deps;
  const log = deps.log ?? silentWorkerLogger;
  const timeout = config['request-timeout-seconds'];
  const openTimeoutMs = (timeout ?? DEFAULT_OPEN_TIMEOUT_SECONDS) * 1000;
  const requestTimeoutMs = (timeout ?? DEFAULT_AGGREGATE_REQUEST_TIMEOUT_SECONDS) * 1000;
  const app = new Hono<{ Variables: AgentVariables }>();
  // Recent failures for the status page, recorded where they get their reason: a failed open in
  // the channel opener (the router composed once with the open deadline), a channel that fails
  // later in the session that sees it close (passthrough and aggregate sessions), and on `/mcp` an
  // upstream whose initialize failed.
  const recentErrors = deps.recentErrors ?? new RecentErrors();
  const openOutcomes = deps.openOutcomes ?? new OpenOutcomes();
  const audit = deps.audit ?? new WorkerAudit({ config });
  const open = deps.open ?? appChannelOpener({ config, router: deps.router, recentErrors, openOutcomes, audit });

  const guard = workerHostOriginGuard(config);
  app.use('*', async (c, next) => (c.req.path === '/link' ? next() : guard(c, next)));

  const linkRoute = deps.linkRoute ?? (deps.upgradeWebSocket !== undefined && deps.registry !== undefined
    ? createLinkRoute({
        upgradeWebSocket: deps.upgradeWebSocket,
        registry: deps.registry,
        hosts: config.hosts,
        publicUrl: config['public-url'],
        linkOnLoopback: config['link-on-loopback'],
        allowedHosts: config['allowed-hosts'],
        ...(deps.listenPort !== undefined ? { listenPort: deps.listenPort } : {}),
        expectations: (entityId) => hostExpectations(config, entityId),
        log,
        audit,
      })
    : undefined);
  if (linkRoute !== undefined) app.route('/', linkRoute);

  const registry = deps.registry;
  app.get('/healthz', createHealthzHandler({
    config,
    sessions,
    ...(registry !== undefined ? { hostStatus: () => registry.status() } : {}),
    recentErrors,
    openOutcomes,
    recentCalls: audit.recentCalls,
    audit,
    ...(deps.clock !== undefined ? { clock: deps.clock } : {}),
  }));
  app.get('/', () => statusPageResponse());

  // A grant that ends (revoked, reused) ends the sessions its tokens opened before its answer goes:
  // this table's, and those the runtime keeps elsewhere (Workers: each session's own object).
  const elsewhere = deps.oauth?.onGrantEnded;
  const onGrantEnded = async (grantId: string, why: string, agent?: string) => {
    await Promise.all([sessions.endGrants?.((grant) => grant.id === grantId, why), elsewhere?.(grantId, why, agent)]);
  };
  const oauth = config.oauth === undefined
    ? undefined
    : createWorkerOAuth({ log, ...deps.oauth, config: config.oauth, agents: config.agents, adminTokenSha256: config['admin-token-sha256'], publicUrl: config['public-url'], onGrantEnded });
  if (oauth !== undefined) app.route('/', oauth.routes);
  const auth = auditedAuth(agentAuth(config.agents, oauth?.resourceAuth), audit);
  const requestCounters = deps.requestCounters ?? PROCESS_REQUEST_COUNTERS;
  requestCounters.configure(config);
  const common = { config, open, sessions, log, recentErrors, openOutcomes, audit, requestCounters, ...(deps.listens !== undefined ? { listens: deps.listens } : {}), ...(deps.newSessionId !== undefined ? { newSessionId: deps.newSessionId } : {}) };
  app.all('/mcp', auth, createAggregateHandler({ ...common, openTimeoutMs, requestTimeoutMs, ...(deps.retryAfterMs !== undefined ? { retryAfterMs: deps.retryAfterMs } : {}) }));
  // Passthrough requests get a deadline only when one is configured: long tools exist. Their
  // initialize always has one, the open deadline: it runs no tool, and a session whose initialize
  // hangs holds a server process and a place under the agent's session limit.
  app.all('/servers/:name/mcp', auth, createServerPassthroughHandler({ ...common, initializeTimeoutMs: openTimeoutMs, ...(timeout !== undefined ? { requestTimeoutMs: timeout * 1000 } : {}) }));

  app.notFound((c) => c.json({ error: { reason: 'invalid-request', message: `Not found: ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => {
    if (error instanceof WireError) return c.json(error.toHttpBody(), httpStatusFor(error.reason) as 400);
    if (error instanceof ValidationError) {
      return c.json({ error: { reason: 'invalid-request', message: error.message, issues: error.issues } }, 400);
    }
    if (error instanceof HTTPException) return error.getResponse();
    log.error('Unhandled error in a worker route', { path: c.req.path, error });
    return c.json({ error: { message: 'Internal server error: see the worker log' } }, 500);
  });
  return app;
}
