/**
 * The worker's composition root: config → host-link registry, ExecutorTargetRouter, session table
 * and app, wired the same way for every runtime. Adapters add only what their runtime owns (the
 * listening socket, the WebSocket helper, signals, and in the all-in-one mode the local host).
 *
 * @module
 */
import type { Hono } from 'hono';
import type { UpgradeWebSocket } from 'hono/ws';
import type { AgentVariables } from './auth/agent-auth.ts';
import { appChannelOpener, createApp, type OAuthRuntime } from './app.ts';
import type { WorkerConfig } from './config/worker-config.ts';
import { ExecutorTargetRouter, type ExecutorTargetRouterOptions } from './routing/executor-target-router.ts';
import { InMemoryHostLinkRegistry, type HostLinkRegistry } from './link/host-link-registry.ts';
import { hostRoster } from './link/host-roster.ts';
import type { HostRoster } from '../shared/link/host-roster.ts';
import { silentWorkerLogger, type WorkerLogger } from './log.ts';
import { InMemorySessionTable } from './sessions/session-table.ts';
import { auditFromConfig } from '../shared/audit/audit-from-config.ts';
import type { AuditWrite } from '../shared/audit/audit-log.ts';
import type { OtlpTraceExporter } from '../shared/audit/otlp-exporter.ts';
import { RecentCalls } from './audit/recent-calls.ts';
import { WorkerAudit } from './audit/worker-audit.ts';
import { hostEndReason, hostsToUnlink, sessionEndReason } from './config/config-reload.ts';
import { stillApprovedUnder } from './auth/oauth/oauth.ts';
import { OpenOutcomes } from './status/open-outcomes.ts';
import { RecentErrors } from './status/recent-errors.ts';
import { workerConfigWarnings } from './config/config-warnings.ts';
import { configChanges } from './config/config-changes.ts';
import type { ChannelOpener } from './routing/channel-opener.ts';
import { OpenListens } from './modern/open-listens.ts';
import { AgentRequestCounters } from './sessions/request-limits.ts';

export interface ComposeWorkerOptions {
  config: WorkerConfig;
  /** The runtime's hono WebSocket helper; without it the worker has no `/link`. */
  upgradeWebSocket?: UpgradeWebSocket<unknown, never>;
  /** All-in-one mode: the in-process host for servers bound to `{"type":"local"}`. */
  localHost?: ExecutorTargetRouterOptions['localHost'];
  /** All-in-one mode: told the local host's roster (`link/host-roster.ts`) after each reload, as a linked host is over its link. */
  localRoster?: (roster: HostRoster) => void;
  log?: WorkerLogger;
  /** Least time between lazy reconnects of an unavailable server on `/mcp`. */
  retryAfterMs?: number;
  /** The port the runtime listens on, once it does (links must name this worker's own address). */
  listenPort?: () => number | undefined;
  /**
   * Writes one audit line: the runtime's stderr at the log level, or the file `audit.file` names
   * (only a runtime adapter can open one). Absent: no audit lines (the status page still lists calls).
   */
  auditWrite?: AuditWrite;
  /** The runtime's part of OAuth (the state store of the built-in authorization server). */
  oauth?: OAuthRuntime;
}

export interface ComposedWorker {
  /** The app of the config in force; a reload replaces it (serve `fetch`, which always answers with the current one). */
  readonly app: Hono<{ Variables: AgentVariables }>;
  /** Answers a request with the current app. */
  fetch(request: Request, ...rest: unknown[]): Response | Promise<Response>;
  /** The config in force. */
  readonly config: WorkerConfig;
  /**
   * Puts a new (already validated) config in force without a restart: new requests follow it at
   * once, the sessions and host links it affects are ended (`config/config-reload.ts`), every
   * other session keeps going, and a `/mcp` session follows a change to its servers
   * (`AgentSession.reconfigure`). Resolves with how many sessions were ended.
   */
  reload(next: WorkerConfig): Promise<{ endedSessions: number }>;
  registry: HostLinkRegistry;
  router: ExecutorTargetRouter;
  sessions: InMemorySessionTable;
  readonly audit: WorkerAudit;
  /** The OTLP exporter, when `audit.otlp` is configured. */
  exporter: OtlpTraceExporter | null;
  /** Closes every agent session (and so every channel) and every host's link, stops the idle sweep and flushes the trace exporter (for at most 2 s). */
  close(): Promise<void>;
}

export function composeWorker(options: ComposeWorkerOptions): ComposedWorker {
  let config = options.config;
  const log = options.log ?? silentWorkerLogger;
  // Told to the audit in force when it ends, as the sessions below.
  // Each roster from the config in force when it is told: a link accepted by an app a reload has
  // since replaced is told the new one.
  const registry = new InMemoryHostLinkRegistry({
    hosts: config.hosts.map((h) => h['entity-id']),
    log,
    onEnded: (link) => audit.linkEnded(link),
    roster: (entityId) => hostRoster(config, { entityId }),
  });
  const router = new ExecutorTargetRouter({
    registry,
    log,
    ...(options.localHost !== undefined ? { localHost: options.localHost } : {}),
  });
  // Told to the audit in force when each happens: a reload swaps it.
  const sessions = new InMemorySessionTable({
    idleMs: config['session-idle-seconds'] * 1000,
    log,
    onSession: { opened: (session) => audit.sessionOpened(session), ended: (session, because, ms) => audit.sessionEnded(session, because, ms) },
  });
  const recentCalls = new RecentCalls();
  const configured = auditFromConfig(config.audit, { component: 'worker', write: options.auditWrite ?? (() => {}), log, onRecord: (record) => recentCalls.record(record) });
  // One buffer of recent errors and calls across reloads, so the status page keeps its history;
  // where the audit's lines go and its exporter stay as configured at start.
  const recentErrors = new RecentErrors();
  const openOutcomes = new OpenOutcomes();
  let audit = new WorkerAudit({ config, log: configured.audit, recentCalls });
  const requestCounters = new AgentRequestCounters();
  const listens = new OpenListens();
  const build = (current: WorkerConfig, currentAudit: WorkerAudit, open: ChannelOpener) =>
    createApp({
      audit: currentAudit,
      config: current,
      router,
      sessions,
      registry,
      log,
      recentErrors,
      openOutcomes,
      requestCounters,
      listens,
      open,
      ...(options.upgradeWebSocket !== undefined ? { upgradeWebSocket: options.upgradeWebSocket } : {}),
      ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
      ...(options.listenPort !== undefined ? { listenPort: options.listenPort } : {}),
      ...(options.oauth !== undefined ? { oauth: options.oauth } : {}),
    });
  let app = build(config, audit, appChannelOpener({ config, router, recentErrors, openOutcomes, audit }));
  warnOfConfig(config, log);
  return {
    get app() {
      return app;
    },
    fetch: (request, ...rest) => app.fetch(request, ...(rest as [])),
    get config() {
      return config;
    },
    async reload(next) {
      const previous = config;
      const nextAudit = new WorkerAudit({ config: next, log: configured.audit, recentCalls });
      // The app's own opener: a `/mcp` session following the change opens servers as a new session would.
      const inForce = { config: next, audit: nextAudit, open: appChannelOpener({ config: next, router, recentErrors, openOutcomes, audit: nextAudit }) };
      // Built before anything changes: a config the app cannot be made from (its build throws)
      // leaves the one in force whole, where assigning first left the config and the app apart.
      const nextApp = build(next, nextAudit, inForce.open);
      config = next;
      audit = nextAudit;
      app = nextApp;
      // Dated now, when it is in force: a new agent's calls may be written before the sessions below end.
      const inForceAt = nextAudit.log.now();
      warnOfConfig(next, log);
      // Of `audit`, only the switch applies now: the file and the collector were opened at start.
      configured.audit.includeArguments = next.audit?.['include-arguments'] === true;
      const needRestart = (['file', 'otlp'] as const).filter((key) => JSON.stringify(next.audit?.[key]) !== JSON.stringify(options.config.audit?.[key]));
      if (needRestart.length > 0) log.warn('Worker config changes that apply at the next start', { keys: needRestart.map((key) => `audit.${key}`) });
      const endReason = (from: WorkerConfig, session: Parameters<typeof sessionEndReason>[2]) => sessionEndReason(from, next, session) ?? hostEndReason(from, next, session);
      // First: a session still opening under the previous config catches up when it is added.
      sessions.followConfig(inForce, endReason);
      sessions.setIdleMs(next['session-idle-seconds'] * 1000);
      // Before any link drops: a session on a re-keyed host ends for the change (counted, its
      // requests in flight answered `config-changed`), not as `host-offline` once its channel went.
      // `closeWhere` takes the sessions out and closes them before its first await.
      const ending = sessions.closeWhere((session) => endReason(previous, session));
      registry.setHosts(next.hosts.map((h) => h['entity-id']), hostsToUnlink(previous, next));
      // A modern listen is no session: one the change would not allow ends (its agent listens again).
      const endedListens = listens.endWhere(next, (listen) => sessionEndReason(previous, next, listen));
      if (endedListens > 0) log.info('Listen streams ended by a config change', { count: endedListens });
      const closed = await ending;
      // A grant approved with a token the change rotated or removed (the admin's) is no longer honoured: its sessions end with it.
      const approvals = { agents: next.agents, adminTokenSha256: next['admin-token-sha256'] };
      const endedSessions = closed + (await sessions.endGrants((grant) => !stillApprovedUnder(approvals, grant), 'its OAuth grant ended: the agent token or admin token that approved it was changed or removed'));
      // A `/mcp` session is not ended for its servers: it closes those the agent lost and opens those it gained.
      await sessions.reconfigure(inForce);
      // Once the sessions the change ended have closed their channels: each host ends the spares
      // and idle instances it keeps for an agent or server it no longer serves.
      registry.tellRosters();
      options.localRoster?.(hostRoster(next, 'local'));
      // A file edited in nothing the worker reads (spacing, order) changed nothing: no line.
      const changes = configChanges(previous, next);
      if (Object.keys(changes).length > 0 || endedSessions > 0) nextAudit.configReloaded(changes, endedSessions, inForceAt);
      return { endedSessions };
    },
    registry,
    router,
    sessions,
    get audit() {
      return audit;
    },
    exporter: configured.exporter,
    async close() {
      await sessions.closeAll();
      sessions.dispose();
      registry.close();
      await configured.exporter?.close();
    },
  };
}

/** `check`'s warnings of the config in force, in the worker's own log: an operator who never ran check sees them too. */
function warnOfConfig(config: WorkerConfig, log: WorkerLogger): void {
  for (const warning of workerConfigWarnings(config)) log.warn('Worker config warning', { path: warning.path, warning: warning.message });
}
