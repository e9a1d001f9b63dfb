/**
 * `switchyard doctor --config-dir DIR --launch`: starts each server of DIR as the sidecar would
 * start it for an agent, under each trust profile it would run under, sends `initialize` (and
 * `tools/list`), and reports what came back. The static checks say that a pin matches and a
 * command exists; only a launch says that the server runs inside what its profile grants (a
 * filesystem server whose root the profile no longer grants exits at once, and the agent would
 * see only `server-exited`).
 *
 * Every launch goes through the sidecar's own composition (`createSidecarComposition`: the same
 * process executor, trust store, containment compiler and host handler a running sidecar uses),
 * opened with the same `{"type":"mcp"}` request the worker sends over the link, on an in-memory
 * channel instead of a link channel. So the command is resolved, the policy compiled, the
 * environment built and the process contained exactly as the sidecar does it. No link, no warm
 * pool, no audit.
 *
 * Which launches: with what the worker told the link probe, each server it routes here, under the
 * floor alone (what an agent that names no profile gets; skipped when the host would refuse such a
 * launch for want of a profile) and under each profile its agents pin here (at this host's current
 * revision of it: a stale pin is reported by the pin's own check). Without it (the worker
 * unreachable or silent), each configured server under its floor alone. The worker does not say
 * which agent uses which server, nor whether one names no profile while others pin one: a launch
 * that may concern no agent (a pin, with several servers routed here; the floor alone, beside
 * pins) fails as information, saying so; `switchyard check worker.json DIR` knows the rest.
 *
 * Bounded: one launch at a time, each given `timeoutMs` to start and answer, all of them
 * `totalMs`; each launch's process tree ends before the next starts, and every one has ended when
 * this returns, or when doctor is interrupted (SIGINT, SIGTERM, SIGHUP). What a server wrote to
 * stderr is shown: doctor runs on the host itself, for its owner (the sidecar keeps it to its log,
 * since its errors cross the link).
 *
 * @module
 */
import { homedir } from 'node:os';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { isAbsolute, join, normalize } from 'node:path';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createInMemoryChannelPair, type ChannelTransport } from '../shared/channel-transport.ts';
import { WireError } from '../shared/errors.ts';
import type { HostExpectations } from '../shared/link/host-expectations.ts';
import { ownFiles, type SidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { createSidecarComposition, type SidecarComposition } from '../sidecar/host/composition.ts';
import { LEGACY_PROTOCOL_VERSION } from '../sidecar/host/modern/legacy-instance.ts';
import type { ServerConfig } from '../sidecar/host/server-config.ts';
import { silentLogger, type LogFields, type Logger } from '../sidecar/log.ts';
import { sanitizeStderr } from '../sidecar/process/stderr-tail.ts';
import { containmentRequired } from '../sidecar/sandbox/index.ts';
import { containedNetwork, type FilesystemGrant } from '../sidecar/trust/effective-profile.ts';
import { isWithin } from '../sidecar/trust/filesystem-grants.ts';
import { type EffectiveTrust, type HostTrustPolicy, refusedForWantOfProfile, resolveEffectiveTrust } from '../sidecar/trust/host-floor.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import type { DoctorCheck } from './doctor.ts';
import { hostServers } from './host-servers.ts';
import { PACKAGE_RUNNER_WARNING, packageRunnerOf, packageRunnerWithoutInternet } from '../sidecar/host/package-runner.ts';

/** How long one server has to start and answer `initialize` (and `tools/list`). */
export const LAUNCH_TIMEOUT_MS = 15_000;
/** How long all the launches may take together; those left are reported as not run. */
export const LAUNCH_TOTAL_MS = 120_000;
/** The last stderr lines shown of a server that failed. */
const STDERR_LINES = 6;

export interface LaunchOptions {
  timeoutMs?: number;
  totalMs?: number;
}

/** One launch: a server, and the agent profile it is opened with (none: the floor alone). */
interface Launch {
  readonly name: string;
  readonly server: ServerConfig;
  readonly pin: { readonly ref: string; readonly revision: string; readonly agents: readonly string[]; readonly pinned: string } | null;
  /**
   * Whether some agent surely runs it so: the worker names the profiles its agents pin here and
   * the servers it routes here, not which agent uses which server, nor whether any names no
   * profile while others do. A failure that may concern no agent is information, not a failure.
   */
  readonly certain: boolean;
}

interface Entry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly msg: string;
  readonly fields: LogFields;
}

/** A logger that keeps every line (all levels) in `sink.entries`, for the launch running now. */
function capturingLogger(sink: { entries: Entry[] }, base: LogFields = {}): Logger {
  const at = (level: Entry['level']) => (msg: string, fields?: LogFields) => void sink.entries.push({ level, msg, fields: { ...base, ...fields } });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (fields) => capturingLogger(sink, { ...base, ...fields }) };
}

function agentsWho(names: readonly string[]): string {
  return names.length === 1 ? `agent "${names[0]}"` : `agents ${names.map((n) => `"${n}"`).join(', ')}`;
}

/**
 * @param config This host's sidecar config.
 * @param expects What the worker told the link probe it expects of this host; `undefined` when
 *   the probe did not get that far or the worker did not say.
 */
export async function launchChecks(config: SidecarConfig, expects: HostExpectations | undefined, options: LaunchOptions = {}): Promise<DoctorCheck[]> {
  const store = new TrustProfileStore(join(config.configDir, 'trust-profiles'));
  const policy: HostTrustPolicy = { ...(config.trustFloor !== undefined ? { floor: config.trustFloor } : {}), allowUncontained: config.allowUncontained };
  const { launches, names, missingPins } = await plan(config, expects, store, policy);
  // Said, not left out: an empty report read as "every launch passed" (review s23).
  if (launches.length === 0) return [{ name: 'launch', ok: false, informational: true, detail: nothingLaunched(expects, names, missingPins) }];
  const sink: { entries: Entry[] } = { entries: [] };
  const sidecar = createSidecarComposition({
    configDir: config.configDir,
    entityId: config.entityId,
    user: config.user,
    log: capturingLogger(sink),
    sandbox: config.sandbox,
    compile: { ownFiles: ownFiles(config) },
    trust: policy,
    limits: config.limits,
  });
  const release = endOnInterrupt(sidecar);
  const checks: DoctorCheck[] = [];
  try {
    const timeoutMs = options.timeoutMs ?? LAUNCH_TIMEOUT_MS;
    const totalMs = options.totalMs ?? LAUNCH_TOTAL_MS;
    const until = Date.now() + totalMs;
    for (const launch of launches) {
      const left = until - Date.now();
      if (left <= 0) {
        checks.push({ name: checkName(config, launch), ok: false, informational: true, detail: `not launched: doctor --launch stops starting servers after ${totalMs / 1000} s` });
        continue;
      }
      const trust = await resolveEffectiveTrust(store, policy, { server: launch.name, serverFloor: launch.server.trustProfile, requested: launch.pin ?? undefined }, silentLogger).catch(() => null);
      sink.entries = [];
      const outcome = await launchOne(sidecar, launch, Math.min(timeoutMs, left));
      checks.push(await report(config, store, launch, trust, outcome, sink.entries));
    }
  } finally {
    await sidecar.stop();
    release();
  }
  return checks;
}

/** Which launches, in order: each server under its floor alone, then under each pin. */
async function plan(config: SidecarConfig, expects: HostExpectations | undefined, store: TrustProfileStore, policy: HostTrustPolicy): Promise<{ launches: Launch[]; names: string[]; missingPins: number }> {
  const defined = hostServers(config.configDir, config.entityId, config.user).servers;
  const names = expects === undefined ? [...defined.keys()] : expects.servers.filter((name) => defined.has(name));
  const pins: Array<NonNullable<Launch['pin']>> = [];
  for (const { ref, revision, agents } of expects?.['trust-profiles'] ?? []) {
    try {
      pins.push({ ref, revision: (await store.load(ref)).revision, agents, pinned: revision });
    } catch {
      // trust-profile-not-found: the pin's own check says so, and no launch could run under it.
    }
  }
  const launches: Launch[] = [];
  for (const name of names) {
    const server = defined.get(name)!.server;
    const unprofiled = expects === undefined || expects['trust-profiles'].length === 0;
    if (!refusedForWantOfProfile(policy, { serverFloor: server.trustProfile })) launches.push({ name, server, pin: null, certain: unprofiled });
    for (const pin of pins) launches.push({ name, server, pin, certain: names.length === 1 });
  }
  return { launches, names, missingPins: (expects?.['trust-profiles'].length ?? 0) - pins.length };
}

/** Why a plan holds no launch: no server to launch, or none a launch of would be let through. */
function nothingLaunched(expects: HostExpectations | undefined, names: readonly string[], missingPins: number): string {
  if (names.length === 0) {
    return expects === undefined
      ? 'nothing launched: this host defines no server (mcp-servers/mcp.json and its user and machine layers)'
      : 'nothing launched: the worker routes no server to this host that its mcp.json layers define';
  }
  const pins = missingPins > 0 ? 'and the trust profiles agents pin are not on this host (their checks above say which)' : 'and no agent pins one';
  return `nothing launched: ${names.map((n) => `"${n}"`).join(', ')} would ${names.length === 1 ? 'be' : 'each be'} refused (denied-by-policy): no floor, no "allow-uncontained", no trust profile of the server's own, ${pins}`;
}

function checkName(config: SidecarConfig, launch: Launch): string {
  const verb = launch.server.kind === 'http' ? 'connect' : 'launch';
  if (launch.pin !== null) return `${verb} "${launch.name}" under "${launch.pin.ref}"`;
  const floor = launch.server.trustProfile ?? config.trustFloor;
  if (floor === undefined) return `${verb} "${launch.name}" uncontained`;
  return `${verb} "${launch.name}" under the ${launch.server.trustProfile !== undefined ? 'server\'s own' : 'host\'s'} floor "${floor}"`;
}

type Outcome =
  | { readonly ok: true; readonly serverInfo: { name?: unknown; version?: unknown } | undefined; readonly tools: number | null; readonly moreTools: boolean }
  /** `timedOutMs`: the time it was given, when it did not answer within it. */
  | { readonly ok: false; readonly error: WireError | null; readonly timedOutMs?: number };

/**
 * Opens the server on the sidecar's handler as the worker's request would, then speaks MCP to it:
 * `initialize`, `notifications/initialized`, and `tools/list` when it has tools. Its process tree
 * has ended when this returns.
 */
async function launchOne(sidecar: SidecarComposition, launch: Launch, timeoutMs: number): Promise<Outcome> {
  const [doctorEnd, hostEnd] = createInMemoryChannelPair();
  const rpc = new Rpc(doctorEnd);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  const connection = {
    'server-name': launch.name,
    ...(launch.pin !== null ? { 'trust-profile-ref': launch.pin.ref, 'trust-profile-revision': launch.pin.revision } : {}),
  };
  const opening = sidecar.handler.open({ type: 'mcp', connection }, hostEnd);
  let hosted: Awaited<typeof opening> | undefined;
  try {
    const opened = await Promise.race([opening, deadline]);
    if (opened === 'timeout') return { ok: false, error: null, timedOutMs: timeoutMs };
    hosted = opened;
    await doctorEnd.start();
    const init = await Promise.race([
      rpc.request('initialize', { protocolVersion: LEGACY_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'switchyard-doctor', version: '1.0.0' } }),
      deadline,
    ]);
    if (init === 'timeout') return { ok: false, error: null, timedOutMs: timeoutMs };
    const result = init as { serverInfo?: { name?: unknown; version?: unknown }; capabilities?: { tools?: unknown } };
    await rpc.notify('notifications/initialized');
    let tools: number | null = null;
    let moreTools = false;
    if (result.capabilities?.tools !== undefined) {
      const listed = await Promise.race([rpc.request('tools/list', {}), deadline]);
      if (listed === 'timeout') return { ok: false, error: null, timedOutMs: timeoutMs };
      const page = listed as { tools?: unknown[]; nextCursor?: unknown };
      tools = Array.isArray(page.tools) ? page.tools.length : 0;
      moreTools = typeof page.nextCursor === 'string';
    }
    return { ok: true, serverInfo: result.serverInfo, tools, moreTools };
  } catch (error) {
    return { ok: false, error: error instanceof WireError ? error : new WireError('launch-failed', error instanceof Error ? error.message : String(error)) };
  } finally {
    clearTimeout(timer);
    await doctorEnd.close();
    // An open still under way when the deadline passed is ended as soon as it is done.
    if (hosted === undefined) void opening.then((late) => late?.dispose(), () => {});
    else await hosted?.dispose();
  }
}

/** Requests over a channel end, by id; a closed channel fails every pending one with its reason. */
class Rpc {
  readonly #channel: ChannelTransport;
  readonly #pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: unknown) => void }>();
  #next = 1;
  #failure: WireError | null = null;

  constructor(channel: ChannelTransport) {
    this.#channel = channel;
    channel.onmessage = (message) => {
      const m = message as { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } };
      const waiting = typeof m.id === 'number' ? this.#pending.get(m.id) : undefined;
      if (waiting === undefined) return;
      this.#pending.delete(m.id as number);
      if (m.error !== undefined) waiting.reject(new WireError('invalid-request', `it answered with an error: ${String(m.error.message)} (${String(m.error.code)})`));
      else waiting.resolve(m.result);
    };
    channel.onerror = (error) => {
      if (error instanceof WireError) this.#failure = error;
    };
    channel.onclose = () => {
      const failure = this.#failure ?? new WireError('server-exited', 'the channel closed before it answered');
      for (const { reject } of this.#pending.values()) reject(failure);
      this.#pending.clear();
    };
  }

  request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#channel.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage).catch((error: unknown) => {
        this.#pending.delete(id);
        reject(error);
      });
    });
  }

  notify(method: string): Promise<void> {
    return this.#channel.send({ jsonrpc: '2.0', method } as JSONRPCMessage);
  }
}

/** The check of one launch: what it ran under, what came back, and the fix. */
async function report(config: SidecarConfig, store: TrustProfileStore, launch: Launch, trust: EffectiveTrust | null, outcome: Outcome, log: readonly Entry[]): Promise<DoctorCheck> {
  const name = checkName(config, launch);
  const contained = trust !== null && containmentRequired(trust.effective);
  const pin = launch.pin;
  const stale = pin !== null && pin.pinned !== pin.revision ? ` at this host's revision (the worker pins ${pin.pinned})` : '';
  const floor = trust?.floor ?? null;
  const who = pin === null ? 'for an agent that names no trust profile' : `pinned by ${agentsWho(pin.agents)}${stale}${floor === null ? '' : `, under the floor "${floor}"`}`;
  const how = launch.server.kind === 'http' ? 'from this host' : contained ? 'contained' : 'uncontained';
  if (outcome.ok) {
    const info = outcome.serverInfo;
    const as = info !== undefined && typeof info.name === 'string' ? ` as ${info.name}${typeof info.version === 'string' ? ` ${info.version}` : ''}` : '';
    const tools = outcome.tools === null ? '' : ` with ${outcome.tools}${outcome.moreTools ? '+' : ''} tool${outcome.tools === 1 && !outcome.moreTools ? '' : 's'}`;
    return { name, ok: true, detail: `${who}; ${how}, it answered initialize${as}${tools}` };
  }
  const stderr = stderrLines(log);
  const shown = stderr.length === 0 ? '' : `; its stderr: ${sanitizeStderr(stderr.slice(-STDERR_LINES), 1024)}`;
  const sidecarLog = logLines(log);
  const said = sidecarLog === '' ? '' : `; the sidecar log says: ${sidecarLog}`;
  // The command and how many arguments, not the arguments: one may be a key the server takes on its command line.
  const command = launch.server.kind === 'stdio' ? `${launch.server.command}${launch.server.args.length > 0 ? ` with the ${launch.server.args.length === 1 ? 'argument' : `${launch.server.args.length} arguments`} of its mcp.json entry` : ''}` : '';
  const grant = contained ? await ungrantedPath(config, store, launch, trust!, stderr) : null;
  // The common first server of a contained host: `npx -y pkg`, which needs the registry it cannot reach.
  const fetchingRunner = contained && launch.server.kind === 'stdio' && containedNetwork(trust!.effective) !== 'internet-client' ? packageRunnerOf(launch.server.command, launch.server.args) : undefined;
  let what: string;
  if (outcome.timedOutMs !== undefined) what = `it did not start and answer within ${outcome.timedOutMs / 1000} s (doctor's deadline)`;
  else {
    const error = outcome.error!;
    const exited = log.find((e) => e.msg === 'Server exited');
    if (error.reason === 'server-exited' && exited !== undefined) {
      const { exitCode, signal } = exited.fields as { exitCode?: unknown; signal?: unknown };
      what = `it exited ${typeof signal === 'string' ? `on signal ${signal}` : `with code ${String(exitCode)}`} before answering initialize (server-exited)`;
    } else {
      what = `${error.message.replace(/: see the sidecar log$/, '')} (${error.reason})`;
    }
  }
  const fix =
    grant !== null
      ? grant
      : outcome.error?.reason === 'containment-unavailable'
        ? 'Fix what the bubblewrap checks above say: until then every contained launch fails so'
        : launch.server.kind === 'http'
          ? outcome.error?.reason === 'unsupported-policy'
            ? `An HTTP server runs in no sandbox: give "${launch.name}" a "trust-profile" of its own in its mcp.json entry, one that grants no paths and names no network, or keep agents that pin a containing profile off it`
            : `Check that ${launch.server.url} answers MCP from this host`
          : outcome.error?.reason === 'launch-failed' && stderr.length === 0
            ? 'Fix what the sidecar\'s refusal above names (the command, its cwd, or a path its trust profile grants)'
            : fetchingRunner !== undefined
              ? packageRunnerWithoutInternet(fetchingRunner)
              : `Run its command in a terminal to see why: ${command}${contained ? '; if it needs a path or network its trust profile does not grant, grant it there (a changed profile has a new revision, which the worker must pin: host add)' : ''}`;
  if (launch.certain) return { name, ok: false, detail: `${who}; ${how}, ${what}${shown}${said}`, fix };
  const whom = launch.pin === null ? 'an agent that names no trust profile, if one uses it' : `${agentsWho(launch.pin.agents)}, if they use "${launch.name}"`;
  const unsure = `it fails only ${whom}: the worker does not say which of this host's servers each agent uses (switchyard check worker.json DIR does)`;
  return { name, ok: false, informational: true, detail: `${who}; ${how}, ${what}${shown}${said}; ${unsure}`, fix };
}

/** What the server wrote to stderr, line by line (the sidecar logs each line at debug). */
function stderrLines(log: readonly Entry[]): string[] {
  return log.flatMap((e) => (e.msg === 'Server stderr' && typeof e.fields.line === 'string' ? [e.fields.line] : []));
}

/** The sidecar's warnings and errors of a launch, but for the exit, which the detail says already. */
function logLines(log: readonly Entry[]): string {
  const skipped = new Set(['server', 'agent', 'session', 'stderr', 'exitCode', 'signal']);
  return log
    .filter((e) => (e.level === 'warn' || e.level === 'error') && e.msg !== 'Server exited' && e.msg !== PACKAGE_RUNNER_WARNING)
    .map((e) => {
      const fields = Object.entries(e.fields)
        .filter(([key, value]) => !skipped.has(key) && value !== null && value !== undefined)
        .map(([key, value]) => `${key}: ${value instanceof Error ? value.message : typeof value === 'string' ? value : JSON.stringify(value)}`);
      return fields.length === 0 ? e.msg : `${e.msg} (${fields.join(', ')})`;
    })
    .join('; ');
}

/** Paths a contained sandbox shows anyway (read-only), which a grant would not change. */
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/dev', '/proc', '/sys', '/run'];

function covers(grants: readonly FilesystemGrant[], path: string): boolean {
  return grants.some((g) => isWithin(path, g.sourcePath));
}

/**
 * The fix for a contained server whose stderr names a path that exists on this host but that the
 * profile it ran under does not grant (a root it was given, a file it opens): the grant to add,
 * and where. Null when its stderr names none such.
 */
async function ungrantedPath(config: SidecarConfig, store: TrustProfileStore, launch: Launch, trust: EffectiveTrust, stderr: readonly string[]): Promise<string | null> {
  const path = stderr
    .flatMap((line) => [...line.matchAll(/(?:^|[\s"'`(=])(\/[^\s"'`,;:()<>|[\]{}]*)/g)].map((m) => normalize(m[1]!.replace(/[.]+$/, ''))))
    .find(
      (p) =>
        isAbsolute(p) &&
        p !== '/' &&
        !SYSTEM.some((s) => p === s || p.startsWith(`${s}/`)) &&
        // Never a folder around the config dir (every launch under it would be refused), nor a home
        // or a top-level folder, which grants far more than a server names at start.
        !(p === config.configDir || p.startsWith(`${config.configDir}/`) || config.configDir.startsWith(`${p}/`)) &&
        p !== homedir() &&
        p.split('/').filter(Boolean).length > 1 &&
        !covers(trust.effective.filesystemPaths, p) &&
        existsSync(p),
    );
  if (path === undefined) return null;
  const file = (ref: string) => join(config.configDir, 'trust-profiles', `${ref}.json`);
  const grant = `{"source-path": "${path}", "access-mode": "read-only"} (or "read-write", if the server must write there)`;
  const profile = launch.pin?.ref ?? trust.floor!;
  let where = file(profile);
  if (launch.pin !== null && trust.floor !== null) {
    const floorGrants = await store.load(trust.floor).then((f) => f.effective.filesystemPaths, () => []);
    if (!covers(floorGrants, path)) where += ` and of the floor ${file(trust.floor)}, which bounds it`;
  }
  const pin = launch.pin === null ? '' : '; a changed profile has a new revision, which the worker must pin (host add)';
  return `The server names ${path}, which "${profile}" does not grant: add ${grant} to the "filesystem-paths" of ${where}${pin}`;
}

/**
 * Ends every server the composition started before doctor exits on SIGINT, SIGTERM or SIGHUP (a
 * second signal kills their groups at once), and kills them on any other exit while launches run.
 * @returns What removes the handlers again.
 */
function endOnInterrupt(sidecar: SidecarComposition): () => void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    const code = 128 + constants.signals[signal];
    if (stopping) {
      sidecar.executor.killAllNow();
      process.exit(code);
    }
    stopping = true;
    process.stderr.write('doctor: interrupted; ending the servers it started\n');
    void sidecar.stop().finally(() => {
      process.stderr.write('doctor: interrupted; every server it started has ended\n');
      process.exit(code);
    });
  };
  const onExit = () => sidecar.executor.killAllNow();
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.on(signal, onSignal);
  process.on('exit', onExit);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
    process.off('exit', onExit);
  };
}
