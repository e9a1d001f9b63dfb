/**
 * RemoteMcpHostHandler (upstream M3): on the launch host, opens the MCP server an inbound
 * `{"type":"mcp","connection":{…}}` channel asks for and bridges it to that channel.
 *
 * (a) validate the request: another `type` is declined (null), a bad `mcp` request is
 *     `invalid-request`; (b) resolve the server by name from this host's files, machine prefix
 *     first (`server-config.ts`); (c) decide the trust it runs under: the agent's profile, by
 *     reference and expected revision (`trust-profile-not-found` / `trust-profile-stale` before
 *     anything starts), composed restrictively with this host's own floor, and with neither a
 *     floor nor an agent profile refused unless the host allows uncontained launches
 *     (`sidecar/trust/host-floor.ts`); compile the containment policy here, on the launch host,
 *     and launch through the process executor — or, for an HTTP server, connect from this
 *     workstation, refused with `unsupported-policy` when the profile requires containment;
 *     (d) bridge, with the tool-call authorizer on the way in; (e) dispose on channel close: the
 *     process tree ends with the channel.
 *
 * The worker only ever asks: leaving the profile out of a request gets the host's floor, never an
 * uncontained process, and a stale revision is refused without telling the worker the current
 * one (it is logged here).
 *
 * An inner `http` target sent by the worker is connected to only when this host's own config lists
 * the same URL for that server name: otherwise a compromised worker could make every workstation
 * fetch arbitrary URLs, loopback services included. Headers configured here win over sent ones.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { eraOf, isMcpRequestType, type McpConnection } from '../../shared/connection-request.ts';
import type { ChannelTransport } from '../../shared/channel-transport.ts';
import { WireError } from '../../shared/errors.ts';
import { redactUrl } from '../../shared/url-redaction.ts';
import { ValidationError } from '../../shared/validation.ts';
import { deferredChild, type Logger } from '../log.ts';
import { ProcessExecutorBackedClientTransport } from '../process/process-backed-transport.ts';
import type { LargeLineGate } from '../process/large-line-gate.ts';
import type { ProcessExecutor } from '../process/process-executor.ts';
import { PACKAGE_RUNNER_WARNING, packageRunnerOf, packageRunnerWithoutInternet } from './package-runner.ts';
import { containedNetwork } from '../trust/effective-profile.ts';
import { compileContainment, containmentRequired, type CompileOptions, type ContainmentPolicy, type PolicyCache } from '../sandbox/index.ts';
import { resolveEffectiveTrust, type EffectiveTrust, type HostTrustPolicy } from '../trust/host-floor.ts';
import type { TrustProfileStore } from '../trust/profile-store.ts';
import { ToolCallAuthorizer } from '../trust/tool-call-authorizer.ts';
import { bridgeChannels, type Bridge } from './channel-bridge.ts';
import { ConnectionRequestMemo } from '../../shared/connection-request-memo.ts';
import { HostedServers, type HostedFacts } from './hosted-servers.ts';
import { inheritedEnvironment } from './inherited-environment.ts';
import type { LaunchRate } from './launch-rate.ts';
import type { ProcessBudget, ReservedSlot } from './process-budget.ts';
import { DualEraHttpTransport } from '../../shared/era-bridge/dual-era-http-transport.ts';
import { httpServerEraKey } from './modern/http-server-era-key.ts';
import { LegacyAgentTransport } from '../../shared/era-bridge/legacy-agent-transport.ts';
import { DEFAULT_INSTANCE_IDLE_SECONDS, LegacyInstancePool } from './modern/legacy-instance-pool.ts';
import { serveModernChannel } from './modern/modern-channel.ts';
import { HOST_CLIENT_INFO } from './modern/modern-results.ts';
import { serverEraKey } from './modern/server-era.ts';
import { resolveServerCommand, type CommandResolution } from './server-command.ts';
import type { ServerConfig } from './server-config.ts';
import type { ModernHttpTarget } from '../../shared/modern-http-transport.ts';
import { MODERN_STAMP_AGE_MS, ServerConfigCache } from './server-config-cache.ts';
import type { SidecarAudit } from '../audit/sidecar-audit.ts';
import type { SpareTransport, WarmPool } from './warm-pool.ts';
import { warmOrColdTransport } from './warm-start-transport.ts';

/** What a hosted channel hands back: tearing it down ends the server. */
export interface HostedConnection {
  dispose(): Promise<void>;
  /** Settles when the connection has ended on its own or by `dispose`. */
  readonly closed?: Promise<unknown>;
}

export interface RemoteMcpHostHandlerOptions {
  configDir: string;
  entityId: string;
  user: string;
  executor: ProcessExecutor;
  profiles: TrustProfileStore;
  policies: PolicyCache;
  log: Logger;
  /** Platform, probe and environment facts for compilation (tests pin them). */
  compile?: Omit<CompileOptions, 'revision'>;
  /** The sidecar's environment: command lookup and the allow-listed inheritance of uncontained servers. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Platform for command lookup; `process.platform` by default. */
  platform?: NodeJS.Platform;
  /** sidecar.json's floor and `allow-uncontained`; none given = no floor, no uncontained launch. */
  trust?: HostTrustPolicy;
  /** The legacy instances of modern agents (the composition owns and disposes it); a private one with the default idle time otherwise. */
  modernInstances?: LegacyInstancePool;
  /** Every call on the record (`sidecar/audit/`). */
  audit?: SidecarAudit;
  /** Pre-spawned, initialized instances for legacy sessions (the composition owns and disposes it); none: every session starts cold. */
  warmPool?: WarmPool;
  /** sidecar.json `"limits"`: every stdio launch takes a slot (`process-budget.ts`); no limit without one. */
  budget?: ProcessBudget;
  /**
   * sidecar.json `"limits"`: how fast one agent may make this host launch (`launch-rate.ts`); every
   * stdio launch but a warm pool's spare takes one here (a spare's is taken when the pool asks the
   * composition for room); no rate without one.
   */
  launchRate?: LaunchRate;
  /**
   * The host's gate on large stdout lines (`large-line-gate.ts`): every stdio server's long lines
   * are read in their agent's turn, one of an agent's at a time, a few at once, and an agent's
   * only while the link has room for it; none: read at once.
   */
  lineGate?: LargeLineGate;
  /** Reads the config dir's files (mcp.json layers): the disk by default, a live sidecar's accepted snapshot otherwise. */
  read?: (path: string) => Promise<string>;
}

/** What a sidecar dir reload may change in a running handler. */
export type HostSettings = Pick<RemoteMcpHostHandlerOptions, 'trust' | 'compile'>;

interface Trust {
  /** Null only for an uncontained launch the host allows (no floor, no agent profile). */
  resolved: EffectiveTrust | null;
  authorizer: ToolCallAuthorizer | null;
}

/** Compiled authorizers kept per effective revision; older ones go first past this many. */
const MAX_CACHED_AUTHORIZERS = 64;

export class RemoteMcpHostHandler {
  #options: RemoteMcpHostHandlerOptions;
  readonly #hosted = new HostedServers();
  readonly #authorizers = new Map<string, ToolCallAuthorizer>();
  /** The servers and trust revisions whose package runner was named in the log since the last reload. */
  readonly #runnersWarned = new Set<string>();
  /** Open channels per agent session, so a session's cached policies go when its last channel does. */
  readonly #sessions = new Map<string, number>();
  readonly #modern: LegacyInstancePool;
  readonly #configs: ServerConfigCache;
  readonly #requests = new ConnectionRequestMemo();
  /** Counts `reconfigure` calls: an open that read the config before one checks what it launches again (`#current`). */
  #reloads = 0;

  constructor(options: RemoteMcpHostHandlerOptions) {
    this.#options = options;
    this.#configs = new ServerConfigCache({ configDir: options.configDir, entityId: options.entityId, user: options.user, ...(options.read ? { read: options.read } : {}) });
    this.#modern = options.modernInstances ?? new LegacyInstancePool({ idleMs: DEFAULT_INSTANCE_IDLE_SECONDS * 1000, log: options.log });
  }

  /** Hosts the requested server on `channel`; null when the request is not an `mcp` one. */
  async open(request: unknown, channel: ChannelTransport): Promise<HostedConnection | null> {
    if (!isMcpRequestType(request)) return null;
    const { connection } = this.#requests.parse(request);
    const name = connection['server-name'];
    const log = deferredChild(this.#options.log, { server: name, agent: connection.agent ?? null, session: connection.session ?? null });
    const target = connection.target ?? { type: 'local' as const };
    const stampAgeMs = eraOf(connection) === 'modern' ? MODERN_STAMP_AGE_MS : 0;
    // Before the config is read: a reload while this open waits clears the pool after it, and has this open check again.
    const poolGeneration = this.#options.warmPool?.generation;
    const reloads = this.#reloads;
    const configured = target.type === 'http' ? null : await this.#serverConfig(name, log, stampAgeMs);
    // An inner http target is checked against what this host lists for the name only after the
    // trust check, which needs no URL: a contained profile refuses any HTTP server.
    const listed = configured ?? (await this.#listedOrNull(name, log, stampAgeMs));
    const trust = await this.#trust(name, listed?.trustProfile, connection, log, stampAgeMs);
    const contained = trust.resolved !== null && containmentRequired(trust.resolved.effective);
    if ((configured === null || configured.kind === 'http') && contained) {
      throw new WireError(
        'unsupported-policy',
        `Server "${name}" is an HTTP server, but the trust profile it runs under on this host requires containment: no process exists to sandbox`,
        { detail: { server: name } },
      );
    }
    const config = configured ?? this.#innerHttpTarget(name, target as { url: string; headers?: Record<string, string> }, listed, log);
    // What a reload compares: the host's entry, not the worker's headers merged into it.
    const own = configured === null && listed !== null ? { listed } : {};
    if (eraOf(connection) === 'modern') return this.#openModern(name, config, connection, trust, channel, log, reloads, own);
    const session = connection.session;
    let bridge: Bridge;
    try {
      // Either era of server serves a legacy agent: the agent's initialize goes first, and a
      // server that refuses it is asked the modern way (`LegacyAgentTransport`).
      const server =
        config.kind === 'http'
          ? new LegacyAgentTransport(await this.#tracked(reloads, { name, connection, config, ...own, revision: trust.resolved?.revision ?? null }, () => ({ transport: new DualEraHttpTransport(httpTarget(config)) })), {
              server: name,
              eraKey: httpServerEraKey(name, config),
              eras: this.#modern.eras,
              log,
            })
          : new LegacyAgentTransport(await this.#legacyTransport(name, config, connection, trust, log, poolGeneration, reloads), { server: name, eraKey: serverEraKey(name, config), eras: this.#modern.eras, log });
      const authorizer = trust.authorizer;
      const ledger = this.#options.audit?.ledger(connection);
      bridge = bridgeChannels(channel, server, {
        server: name,
        log,
        ...(ledger !== undefined ? { ledger } : {}),
        ...(authorizer !== null && !authorizer.unrestricted ? { filter: (m) => authorizer.filter(m) } : {}),
      });
      await this.#start(name, bridge, log);
    } catch (error) {
      // A policy compiled for a session that never opened would stay cached until the next reload.
      if (session !== undefined && !this.#sessions.has(session)) this.#options.policies.dropSession(session);
      throw error;
    }
    if (session !== undefined) this.#sessions.set(session, (this.#sessions.get(session) ?? 0) + 1);
    log.info('Hosting server', {
      kind: config.kind,
      contained,
      floor: trust.resolved?.floor ?? null,
      profile: trust.resolved?.requested ?? null,
      revision: trust.resolved?.revision ?? null,
    });
    void bridge.closed.then((info) => {
      log.info('Server channel closed', { reason: info.reason ?? null });
      if (session !== undefined) this.#leaveSession(session);
    });
    return { dispose: () => bridge.close(), closed: bridge.closed };
  }

  /**
   * A modern request, resolved and checked exactly as a legacy open (above), is served by the
   * agent's legacy instance instead of a process of its own (`modern/`), a stdio process or a
   * connection to an HTTP server (`shared/era-bridge/dual-era-http-transport.ts`). Its launch waits for the
   * request, whose clientInfo the instance is initialized with, so a failure to start comes back
   * as that request's error. The instance is launched without the request's session id: it
   * outlives the request, and its policy is compiled once, for the instance.
   */
  #openModern(name: string, config: ServerConfig, connection: McpConnection, trust: Trust, channel: ChannelTransport, log: Logger, reloads: number, own: { listed?: ServerConfig }): HostedConnection {
    const agent = connection.agent;
    if (agent === undefined) throw new WireError('invalid-request', 'A modern connection request must name its agent: the host keeps legacy instances per agent');
    const { session: _request, ...launch } = connection;
    const key = { agent, server: name, revision: trust.resolved?.revision ?? 'uncontained', config: JSON.stringify(config) };
    const authorizer = trust.authorizer;
    log.debug('Modern request', { revision: key.revision });
    const ledger = this.#options.audit?.ledger(connection);
    return serveModernChannel(channel, {
      server: name,
      log,
      key,
      ...(ledger !== undefined ? { ledger } : {}),
      instance: (clientInfo) =>
        this.#modern.acquire(key, async () => {
          // Only for an instance that launches: most modern requests find theirs running.
          const instanceLog = this.#options.log.child({ server: name, agent });
          return {
            server: name,
            transport:
              config.kind === 'http'
                ? await this.#tracked(reloads, { name, connection: launch, config, ...own, revision: trust.resolved?.revision ?? null }, () => ({ transport: new DualEraHttpTransport(httpTarget(config)) }))
                : await this.#stdioTransport(name, config, launch, trust, instanceLog, reloads),
            clientInfo: clientInfo() ?? HOST_CLIENT_INFO,
            log: instanceLog,
            eraKey: config.kind === 'http' ? httpServerEraKey(name, config) : serverEraKey(name, config),
          };
        }),
      ...(authorizer !== null && !authorizer.unrestricted ? { filter: (m) => authorizer.filter(m) } : {}),
    });
  }

  async #serverConfig(name: string, log: Logger, stampAgeMs = 0): Promise<ServerConfig> {
    try {
      const resolved = await this.#configs.resolve(name, stampAgeMs);
      log.debug('Server config resolved', { source: resolved.source, file: resolved.file });
      return resolved.config;
    } catch (error) {
      if (error instanceof WireError) throw error;
      log.error('Server config is unusable', { error });
      throw new WireError('launch-failed', `Server "${name}" cannot start: this host's server config is invalid, see the sidecar log`, { detail: { server: name } });
    }
  }

  /** An inner http target is allowed only where this host lists the same endpoint for the name. */
  /** The server this host lists under `name`, or null when it lists none. */
  async #listedOrNull(name: string, log: Logger, stampAgeMs = 0): Promise<ServerConfig | null> {
    try {
      return await this.#serverConfig(name, log, stampAgeMs);
    } catch (error) {
      if (error instanceof WireError && error.reason === 'server-not-found') return null;
      throw error;
    }
  }

  #innerHttpTarget(name: string, target: { url: string; headers?: Record<string, string> }, configured: ServerConfig | null, log: Logger): ServerConfig {
    if (configured === null || configured.kind !== 'http' || !sameEndpoint(configured.url, target.url)) {
      // The worker config's URL may hold an API key, and this refusal reaches the agent and /healthz.
      const shown = redactUrl(target.url);
      log.warn('Refused an inner http target this host does not list', { url: shown });
      const fix = shown === target.url ? `add {"url": "${shown}"}` : 'add that URL in full as {"url": …}';
      throw new WireError('denied-by-policy', `This host does not list ${shown} for server "${name}": ${fix} under mcpServers.${name} in its mcp-servers/mcp.json to allow it`, {
        detail: { server: name },
      });
    }
    // Headers configured here win, whatever their case: fetch would send both spellings joined.
    const ours = new Set(Object.keys(configured.headers ?? {}).map((h) => h.toLowerCase()));
    const theirs = Object.entries(target.headers ?? {}).filter(([h]) => !ours.has(h.toLowerCase()));
    return { ...configured, url: configured.url, headers: { ...Object.fromEntries(theirs), ...configured.headers } };
  }

  async #trust(name: string, serverFloor: string | undefined, connection: McpConnection, log: Logger, stampAgeMs = 0): Promise<Trust> {
    const ref = connection['trust-profile-ref'];
    const revision = connection['trust-profile-revision'];
    const resolved = await resolveEffectiveTrust(
      this.#options.profiles,
      this.#options.trust ?? {},
      { server: name, serverFloor, requested: ref !== undefined && revision !== undefined ? { ref, revision } : undefined, stampAgeMs },
      log,
    );
    if (resolved === null) return { resolved, authorizer: null };
    let authorizer = this.#authorizers.get(resolved.revision);
    if (authorizer === undefined) {
      try {
        authorizer = ToolCallAuthorizer.fromProfile(resolved.effective);
      } catch (error) {
        log.error('Tool-call schemas of the trust profile do not compile', { floor: resolved.floor, profile: resolved.requested, error });
        throw new WireError('launch-failed', `Server "${name}" cannot start: a tool-call schema of its trust profile does not compile on this host, see the sidecar log`, { detail: { server: name } });
      }
      if (this.#authorizers.size >= MAX_CACHED_AUTHORIZERS) this.#authorizers.delete(this.#authorizers.keys().next().value!);
      this.#authorizers.set(resolved.revision, authorizer);
    }
    return { resolved, authorizer };
  }

  /** A legacy session's server: a warm instance from the host's pool when it holds one (`warm-start-transport.ts`). */
  #legacyTransport(name: string, config: Extract<ServerConfig, { kind: 'stdio' }>, connection: McpConnection, trust: Trust, log: Logger, generation: number | undefined, reloads: number): Promise<Transport> {
    const agent = connection.agent;
    const { session: _session, ...spare } = connection;
    return warmOrColdTransport({
      pool: this.#options.warmPool,
      key: agent === undefined ? null : { agent, server: name, revision: trust.resolved?.revision ?? 'uncontained', config: JSON.stringify(config) },
      cold: () => this.#stdioTransport(name, config, connection, trust, log, reloads),
      spare: () => this.#stdioTransport(name, config, spare, trust, this.#options.log.child({ server: name, agent: agent ?? null }), reloads, { spare: true }),
      ...(generation !== undefined ? { generation } : {}),
    });
  }

  async #stdioTransport(name: string, config: Extract<ServerConfig, { kind: 'stdio' }>, connection: McpConnection, trust: Trust, log: Logger, reloads: number, kind: { spare?: boolean } = {}): Promise<Transport> {
    const env = this.#options.env ?? process.env;
    const agent = connection.agent ?? '(unnamed)';
    // Before the policy's compile, which costs what the rate guards, and before the budget, which
    // may end an idle process to make room: a launch refused for its rate costs and ends nothing.
    if (kind.spare !== true) this.#options.launchRate?.take(agent, name);
    const facts = { name, connection, config, revision: trust.resolved?.revision ?? null };
    let slot: ReservedSlot | undefined;
    let tracked: SpareTransport;
    try {
      const resolved = resolveServerCommand(name, config, { env, log, ...(this.#options.platform ? { platform: this.#options.platform } : {}) });
      const policy = await this.#policy(name, config, resolved, connection, trust);
      if (policy !== null) this.#warnOfPackageRunner(name, config, trust.resolved!, log);
      const launchEnv = { ...inheritedEnvironment(env), ...config.env };
      tracked = await this.#tracked(reloads, facts, () => {
        slot = this.#options.budget?.reserve(agent, name, { evict: kind.spare !== true });
        const transport = new ProcessExecutorBackedClientTransport(
          name,
          { command: resolved.command, args: resolved.args, env: launchEnv, policy, ...(config.cwd ? { cwd: config.cwd } : {}), ...(resolved.verbatim ? { verbatim: true } : {}), ...(connection.agent !== undefined ? { agent: connection.agent } : {}) },
          this.#options.executor,
          // The gate's turns go by the agent the link's turns go by (its channels' `connection.agent`).
          { logger: log, ...(this.#options.lineGate !== undefined ? { lineGate: { gate: this.#options.lineGate, group: connection.agent ?? '' } } : {}) },
        );
        return { transport, ...(slot !== undefined ? { slot } : {}) };
      });
    } catch (error) {
      if (kind.spare !== true) this.#options.launchRate?.giveBack(agent);
      throw error;
    }
    // A spare's slot is the first to go for another launch until a session takes it (`WarmPool.take`).
    const reserved = slot;
    if (kind.spare === true && reserved !== undefined) tracked.adopt = () => reserved.slot.adopt();
    return tracked;
  }

  /** Servers running now (legacy sessions' and modern agents' instances), for status and tests. */
  get hostedCount(): number {
    return this.#hosted.size;
  }

  /**
   * Applies new host settings (a sidecar dir reload; server configs and profiles are read through
   * `read` already), then ends every running server that would not launch the same way now: its
   * server gone or changed, or the trust it runs under resolving to another revision or not at
   * all. Every other server keeps running.
   *
   * @returns How many servers were ended.
   */
  /** Forgets the server lookups kept (`server-config-cache.ts`): the files are now read another way. */
  forgetConfigReads(): void {
    this.#configs.clear();
    this.#options.profiles.forget();
  }

  async reconfigure(settings: HostSettings): Promise<number> {
    this.#reloads += 1;
    this.#options = { ...this.#options, ...settings };
    this.#authorizers.clear();
    this.#runnersWarned.clear();
    this.forgetConfigReads();
    // A spare is launched by the launcher its key learnt, with the config read then: after a
    // change it would serve the old command, env or policy (or a server no longer listed).
    const cleared = this.#options.warmPool?.clear();
    const ended = await this.#hosted.endWhere((facts) => this.#changed(facts));
    await cleared;
    return ended;
  }

  /**
   * Why a running server must end after a config change, or null when it launches the same way
   * now. What to do next is the worker's to say: a `/servers/<name>/mcp` session ends with it, a
   * `/mcp` session opens the server again itself, and a modern request has no session.
   */
  async #changed(facts: HostedFacts): Promise<WireError | null> {
    const { name, connection } = facts;
    const log = this.#options.log.child({ server: name, agent: connection.agent ?? null, session: connection.session ?? null });
    try {
      const now = await this.#listedOrNull(name, log);
      // The whole entry: a changed header (a rotated credential) of an HTTP server counts too.
      const same = now !== null && JSON.stringify(now) === JSON.stringify(facts.listed ?? facts.config);
      if (!same) {
        log.info('Server ended: its config on this host changed');
        return new WireError('server-exited', `Server "${name}" was ended: its config on this host changed`, { detail: { server: name } });
      }
      const trust = await this.#trust(name, now.trustProfile, connection, log);
      if ((trust.resolved?.revision ?? null) === facts.revision) return null;
      log.info('Server ended: the trust it runs under changed');
      return new WireError('trust-profile-stale', `Server "${name}" was ended: the trust profile it runs under on this host changed`, { detail: { server: name } });
    } catch (error) {
      log.info('Server ended: it would not launch under the new config', { error });
      return error instanceof WireError ? error : new WireError('launch-failed', `Server "${name}" was ended: it cannot start under this host's new config, see the sidecar log`, { detail: { server: name } });
    }
  }

  /**
   * `make()`'s transport, tracked as hosted once it is known to launch as the config in force
   * says: when a reload ran since `reloads` (read before this open read the config), the server is
   * checked again, and refused with what the reload would have ended it with. The last check
   * and `track` run in one synchronous step, so a reload after it finds the server tracked, and
   * one before it was checked here.
   */
  async #tracked(reloads: number, facts: HostedFacts, make: () => { transport: Transport; slot?: ReservedSlot }): Promise<Transport> {
    for (let checked = reloads; checked !== this.#reloads; ) {
      checked = this.#reloads;
      const why = await this.#changed(facts);
      if (why !== null) throw why;
    }
    const made = make();
    return this.#hosted.track(made.transport, facts, made.slot);
  }

  /**
   * The compiled policy, cached per (session, effective revision, server): the effective revision
   * covers the floor and the agent's profile both, so a change to either compiles afresh.
   */
  async #policy(name: string, config: Extract<ServerConfig, { kind: 'stdio' }>, resolved: CommandResolution, connection: McpConnection, trust: Trust): Promise<ContainmentPolicy | null> {
    if (trust.resolved === null) return null;
    const { effective, revision } = trust.resolved;
    const compile = () =>
      compileContainment(
        effective,
        { file: resolved.command, args: resolved.args, ...(config.cwd ? { cwd: config.cwd } : {}), env: config.env },
        { ...this.#options.compile, revision, server: name },
      );
    const session = connection.session;
    return session === undefined ? compile() : this.#options.policies.getOrCompile({ sessionId: session, revision, server: name }, compile);
  }

  /**
   * Says in the log, once per server and trust revision, that a package runner launched without
   * internet cannot fetch its package: the agent sees only its timeout or exit.
   */
  #warnOfPackageRunner(name: string, config: Extract<ServerConfig, { kind: 'stdio' }>, resolved: EffectiveTrust, log: Logger): void {
    const runner = packageRunnerOf(config.command, config.args);
    if (runner === undefined || containedNetwork(resolved.effective) === 'internet-client') return;
    const key = `${name}\n${resolved.revision}`;
    if (this.#runnersWarned.has(key)) return;
    this.#runnersWarned.add(key);
    log.warn(PACKAGE_RUNNER_WARNING, { runner, fix: packageRunnerWithoutInternet(runner) });
  }

  /** Starts the bridge (launching a stdio server); a start failure becomes a stable `WireError`. */
  async #start(name: string, bridge: Bridge, log: Logger): Promise<void> {
    try {
      await bridge.start();
    } catch (error) {
      if (error instanceof WireError) throw error;
      if (error instanceof ValidationError) throw error.toWireError();
      log.warn('Server did not start', { error });
      throw new WireError('launch-failed', `Server "${name}" did not start: see the sidecar log`, { detail: { server: name } });
    }
  }

  #leaveSession(session: string): void {
    const left = (this.#sessions.get(session) ?? 1) - 1;
    if (left > 0) this.#sessions.set(session, left);
    else {
      this.#sessions.delete(session);
      this.#options.policies.dropSession(session);
    }
  }
}

/** Same scheme, host, port and path (a trailing slash and the fragment do not matter). */
function sameEndpoint(a: string, b: string): boolean {
  const norm = (u: string) => {
    const url = new URL(u);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  };
  return norm(a) === norm(b);
}

/** Where and how a host's HTTP server is reached, as the HTTP clients take it. */
function httpTarget(config: Extract<ServerConfig, { kind: 'http' }>): ModernHttpTarget {
  return { url: new URL(config.url), headers: config.headers };
}
