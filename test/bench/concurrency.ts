/**
 * Concurrency: N agent sessions (each its own server process), then every session calling `echo`
 * sequentially, all sessions at once, against Switchyard (b) `/servers/everything/mcp` and against
 * supergateway `--stateful` (a fresh one per level), level by level, the two in turns, A B B A,
 * each side's turns pooled (`inTurns`), so that both meet the same load. Reported per
 * level and gateway: throughput over the wall time of the call phase, latency percentiles over
 * every call, errors (a failed call or a session that did not open), how long opening all N took,
 * and the proxy processes' CPU per call (from /proc). Every level runs twice, with the SDK client
 * and with the light client (`light-client.ts`, node:http), both gateways driven by the same one: the
 * SDK client costs as much CPU per call as a gateway, which caps the calls/s ratio on two cores.
 *
 * Sessions are opened at most `OPEN_PARALLEL` at a time: opening 64 at once on two cores measures
 * the scheduler, and the open time is reported separately anyway. While Switchyard's largest level
 * is still open, `atPeak` runs (memory is sampled there), then every session is closed.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { connectHttp, echoLoop, echoOf, type Agent, type Timed } from './client.ts';
import { connectLight } from './light-client.ts';
import { startSupergateway } from './gateways.ts';
import { cpuMs, type ProcessRegistry } from './processes.ts';
import { TOKENS, type Stack } from './stack.ts';
import { mergeParallel, round, summarize, type LatencySummary } from './stats.ts';

const OPEN_PARALLEL = 16;

export type ConcurrencyGateway = 'switchyard' | 'supergateway';

/** Which agent drove the level: the MCP SDK client, or the light client (`LIGHT_TRANSPORT`). */
export type ConcurrencyClient = 'sdk' | 'light';

const CONNECT: Record<ConcurrencyClient, (url: string, token?: string) => Promise<Agent>> = { sdk: connectHttp, light: connectLight };

export interface ConcurrencyResult {
  gateway: ConcurrencyGateway;
  /** Absent in results from before the light client: those are SDK rows. */
  client: ConcurrencyClient;
  sessions: number;
  callsPerSession: number;
  openMs: number;
  openErrors: number;
  /** CPU µs per call of the proxy processes (worker + sidecar, or supergateway), call phase only. */
  proxyCpuUsPerCall: number | null;
  /** The same per proxy process (worker, then sidecar), when the level measured each. */
  proxyCpuUsEach?: number[];
  /**
   * CPU µs per call of the bench process (the agents' clients), call phase only. On two cores it is
   * the largest share of a call, the same for either gateway, so once the level is CPU-bound it
   * bounds the calls/s ratio: (client + theirs) ÷ (client + ours), whatever the proxy costs.
   */
  clientCpuUsPerCall: number | null;
  summary: LatencySummary;
}

/** Calls per session so each level does enough work to measure: 500, 100, 20 for 1, 8, 64. */
export function callsPerSession(sessions: number, total: number): number {
  return Math.max(20, Math.ceil(total / sessions));
}

export interface LevelTarget {
  url: string;
  token?: string;
  /** Pids whose CPU is the proxy's. */
  proxies: readonly number[];
  /** Agents that open nothing (modern, stateless), made instead of SDK sessions. */
  open?: (url: string, token?: string) => Agent;
  /** How a session is opened: the SDK client unless given. */
  connect?: (url: string, token?: string) => Promise<Agent>;
  /** Resolves once the gateway's background work for the opened sessions (warm spares) is done. */
  settled?: () => Promise<void>;
}

/** What one level measured, unsummarised, so that rounds of it can be pooled (`poolLevels`). */
export interface LevelRun {
  openMs: number;
  openErrors: number;
  /** Every session's calls, over the call phase's wall time; open failures counted as errors. */
  timed: Timed;
  /** CPU ms of the proxy processes over the call phase. */
  proxyCpuMs: number;
  /** The same, each proxy process's own, in the order of `LevelTarget.proxies` (absent in older results). */
  proxyCpuMsEach?: number[];
  /** CPU ms of this process (the agents' clients) over the call phase. */
  clientCpuMs: number;
}

/** Opens `sessions` sessions on `target`, runs the calls, measures; the sessions stay open for `atPeak`. */
export async function runLevel(
  target: LevelTarget,
  sessions: number,
  calls: number,
  options: { tag: string; payload?: string; atPeak?: (agents: readonly Agent[]) => Promise<void> },
): Promise<LevelRun> {
  const openStart = performance.now();
  const { agents, errors: openErrors } = target.open === undefined
    ? await openSessions(target.url, sessions, target.token, target.connect)
    : { agents: Array.from({ length: sessions }, () => target.open!(target.url, target.token)), errors: 0 };
  const openMs = round(performance.now() - openStart, 1);
  try {
    // One untimed call per session first, so every server has answered once (JIT, lazy init).
    await Promise.all(agents.map((a, i) => echoOf(a)('echo', `${options.tag}-${i} warmup`).catch(() => {})));
    await target.settled?.();
    const each = () => target.proxies.map((pid) => cpuMs(pid) ?? 0);
    const eachBefore = each();
    const clientBefore = process.cpuUsage();
    const start = performance.now();
    const loops: Timed[] = await Promise.all(agents.map((a, i) => echoLoop(a, 'echo', calls, 0, `${options.tag}-${i}`, options.payload ?? '')));
    const timed = mergeParallel(loops, performance.now() - start);
    const proxyCpuMsEach = each().map((ms, i) => ms - eachBefore[i]!);
    const proxyCpuMs = proxyCpuMsEach.reduce((a, b) => a + b, 0);
    const client = process.cpuUsage(clientBefore);
    timed.errors += openErrors;
    await options.atPeak?.(agents);
    return { openMs, openErrors, timed, proxyCpuMs, proxyCpuMsEach, clientCpuMs: (client.user + client.system) / 1000 };
  } finally {
    await Promise.all(agents.map((a) => a.close()));
  }
}

/**
 * Rounds of one level that ran one after another, as one: calls and errors pooled, wall times,
 * open times and CPU added.
 */
export function poolLevels(runs: readonly LevelRun[]): LevelRun {
  const timed = mergeParallel(runs.map((r) => r.timed), runs.reduce((sum, r) => sum + r.timed.wallMs, 0));
  return {
    openMs: round(runs.reduce((sum, r) => sum + r.openMs, 0), 1),
    openErrors: runs.reduce((sum, r) => sum + r.openErrors, 0),
    timed,
    proxyCpuMs: runs.reduce((sum, r) => sum + r.proxyCpuMs, 0),
    ...(runs.every((r) => r.proxyCpuMsEach !== undefined) && runs.length > 0
      ? { proxyCpuMsEach: runs[0]!.proxyCpuMsEach!.map((_, i) => runs.reduce((sum, r) => sum + r.proxyCpuMsEach![i]!, 0)) }
      : {}),
    clientCpuMs: runs.reduce((sum, r) => sum + r.clientCpuMs, 0),
  };
}

/** Rounds of a Switchyard/supergateway pair per level: A B B A, so drift in the machine's load falls on both. */
const PAIR_ROUNDS = 2;

/**
 * Switchyard and supergateway on the same level, measured in turns, A B B A, each turn a share of
 * the calls (`callsPerTurn` per session), and each side's turns pooled. On a shared machine load
 * comes and goes within seconds; one turn each compared whatever load each side happened to meet
 * (the scale curve's echo pair at one session read 0.52× in one run and 2.55× in another, nothing
 * changed). `atPeak` runs in Switchyard's first turn, while its sessions are open.
 */
export async function inTurns(
  sides: Record<ConcurrencyGateway, LevelTarget>,
  sessions: number,
  calls: number,
  options: { tag: string; payload?: string; atPeak?: (agents: readonly Agent[]) => Promise<void> },
): Promise<{ callsPerSession: number; runs: Record<ConcurrencyGateway, LevelRun> }> {
  const { atPeak, ...rest } = options;
  return inTurnsOf(sides, ['switchyard', 'supergateway'], sessions, calls, { ...rest, ...(atPeak ? { atPeak: { side: 'switchyard', run: atPeak } } : {}) });
}

/**
 * Any number of sides on the same level in turns: `order` forwards, then backwards (A B C C B A:
 * with two sides, A B B A), `PAIR_ROUNDS` turns each, each side's turns pooled. `atPeak` runs in
 * its side's first turn.
 */
export async function inTurnsOf<K extends string>(
  sides: Record<K, LevelTarget>,
  order: readonly K[],
  sessions: number,
  calls: number,
  options: { tag: string; payload?: string; atPeak?: { side: K; run: (agents: readonly Agent[]) => Promise<void> } },
): Promise<{ callsPerSession: number; runs: Record<K, LevelRun> }> {
  const callsPerTurn = Math.max(5, Math.ceil(calls / PAIR_ROUNDS));
  const turns = new Map<K, LevelRun[]>(order.map((side) => [side, []]));
  const payload = options.payload === undefined ? {} : { payload: options.payload };
  for (let round = 0; round < PAIR_ROUNDS; round++) {
    for (const side of round % 2 === 0 ? order : [...order].reverse()) {
      const done = turns.get(side)!;
      const atPeak = options.atPeak?.side === side && done.length === 0 ? { atPeak: options.atPeak.run } : {};
      done.push(await runLevel(sides[side], sessions, callsPerTurn, { tag: `${options.tag}-${side}-${round}`, ...payload, ...atPeak }));
    }
  }
  const runs = Object.fromEntries(order.map((side) => [side, poolLevels(turns.get(side)!)])) as Record<K, LevelRun>;
  return { callsPerSession: callsPerTurn * PAIR_ROUNDS, runs };
}

export function summarizeLevel(sessions: number, calls: number, run: LevelRun): Omit<ConcurrencyResult, 'gateway' | 'client'> {
  const summary = summarize(run.timed);
  const perCall = (ms: number) => (summary.calls === 0 ? null : Math.round((ms * 1000) / summary.calls));
  return {
    sessions,
    callsPerSession: calls,
    openMs: run.openMs,
    openErrors: run.openErrors,
    proxyCpuUsPerCall: perCall(run.proxyCpuMs),
    ...(run.proxyCpuMsEach !== undefined && summary.calls > 0 ? { proxyCpuUsEach: run.proxyCpuMsEach.map((ms) => perCall(ms)!) } : {}),
    clientCpuUsPerCall: perCall(run.clientCpuMs),
    summary,
  };
}

export async function measureConcurrency(
  registry: ProcessRegistry,
  stack: Stack,
  options: {
    levels: readonly number[];
    totalCalls: number;
    /** Echo calls each supergateway serves before it is measured (`burn-in.ts`). */
    burnIn: number;
    /** Runs just before Switchyard's largest level's sessions are opened, and while they are all open. */
    beforePeak?: () => void;
    atPeak?: (agents: readonly Agent[]) => Promise<void>;
    log(line: string): void;
  },
): Promise<ConcurrencyResult[]> {
  const results: ConcurrencyResult[] = [];
  const peak = Math.max(...options.levels);
  const report = (r: ConcurrencyResult) => {
    results.push(r);
    const s = r.summary;
    options.log(
      `  ${r.gateway} (${r.client} client) ${r.sessions} session(s) × ${r.callsPerSession} calls: ${s.callsPerSec} calls/s, p50 ${s.p50} ms, p99 ${s.p99} ms, ${s.errors} errors, ` +
        `proxy CPU ${r.proxyCpuUsPerCall} µs/call, client CPU ${r.clientCpuUsPerCall} µs/call (open ${r.openMs} ms)`,
    );
  };
  for (const sessions of options.levels) {
    const calls = callsPerSession(sessions, options.totalCalls);
    if (sessions === peak) options.beforePeak?.();
    const gateway = await startSupergateway(registry, options.burnIn);
    try {
      for (const client of ['sdk', 'light'] as const) {
        const connect = CONNECT[client];
        const switchyard = { url: `${stack.url}/servers/everything/mcp`, token: TOKENS.plain, proxies: [stack.worker.pid, stack.sidecar.pid], connect, settled: stack.sparesSettled };
        const supergateway = { url: gateway.url, proxies: [gateway.process.pid], connect };
        const atPeak = sessions === peak && client === 'sdk' && options.atPeak ? { atPeak: options.atPeak } : {};
        const { callsPerSession: perSession, runs } = await inTurns({ switchyard, supergateway }, sessions, calls, { tag: `c${sessions}-${client}`, ...atPeak });
        for (const side of ['switchyard', 'supergateway'] as const) report({ gateway: side, client, ...summarizeLevel(sessions, perSession, runs[side]) });
      }
    } finally {
      await registry.stop(gateway.process);
    }
  }
  return results;
}

/** Opens `count` sessions, `OPEN_PARALLEL` at a time; failures are counted, not thrown. */
export async function openSessions(url: string, count: number, token?: string, connect = connectHttp): Promise<{ agents: Agent[]; errors: number }> {
  const agents: Agent[] = [];
  let errors = 0;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      try {
        agents.push(await connect(url, token));
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(OPEN_PARALLEL, count) }, worker));
  return { agents, errors };
}
