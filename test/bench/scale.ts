/**
 * The scale curve: how latency and the proxies' CPU per call grow with work. Two sweeps:
 *
 * - sessions (1, 8, 64, 256 by default, each calling `echo` with a 1 KB payload, all at once), as
 *   three workloads, each row labelled with what it is (`WORKLOADS`):
 *   - `legacy-everything`: legacy sessions on Switchyard (b) `/servers/everything/mcp`, one
 *     server-everything process per session;
 *   - `legacy-echo`: legacy sessions with one SDK-free echo process each
 *     (`test/fixtures/raw-echo-server.mjs`, a fifth of server-everything's memory), on Switchyard
 *     and on supergateway `--stateful` in front of the same command, so the ratio holds at 256;
 *     the two measured in turns (`comparePair`), so that both meet the same load;
 *   - `modern-shared`: modern (stateless) clients of one agent, every request served by the one
 *     server-everything instance the host keeps for that agent.
 * - payload size (1 KB, 64 KB, 1 MB echoed by one legacy session on server-everything).
 *
 * A level runs only when the machine has the memory for its server processes beside a reserve
 * kept for everyone else on it (`memoryGuard`); a level that does not is reported as not run, with
 * the figures that decided it. Printed as a table and drawn as an SVG
 * (`bench-results/<label>-scale.svg`, written by the report).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { modernAgent } from './client.ts';
import { inTurns, runLevel, summarizeLevel, type LevelRun, type LevelTarget } from './concurrency.ts';
import { startSupergateway } from './gateways.ts';
import type { ProcessRegistry } from './processes.ts';
import { memoryGuard, pointLabel, reserveMib, WORKLOADS, type ScaleGateway, type ScaleWorkload } from './scale-workloads.ts';
import { RAW_ECHO, TOKENS, type Stack } from './stack.ts';

export { pointLabel };


export interface ScalePoint {
  sweep: 'sessions' | 'payload';
  gateway: ScaleGateway;
  workload: ScaleWorkload;
  sessions: number;
  payloadBytes: number;
  calls: number;
  p50: number;
  p99: number;
  callsPerSec: number;
  errors: number;
  /** Proxy CPU µs per call: worker + sidecar, or supergateway. */
  cpuUsPerCall: number | null;
  /** Switchyard's split of it: the worker's, then the sidecar's (absent in older results). */
  cpuUsEach?: number[];
  /** The bench's SDK clients' CPU µs per call (see `ConcurrencyResult.clientCpuUsPerCall`). */
  clientCpuUsPerCall: number | null;
}

export interface ScaleResult {
  points: ScalePoint[];
  /** Levels not run, each with why (`memoryGuard`'s reason). */
  skipped: string[];
}

export const KB = 1024;

/** Where a point is on the curve: everything but what was measured. */
type At = Pick<ScalePoint, 'sweep' | 'gateway' | 'workload' | 'sessions' | 'payloadBytes'>;

export async function measureScale(
  registry: ProcessRegistry,
  stack: Stack,
  options: { sessions: readonly number[]; payloads: readonly number[]; totalCalls: number; burnIn: number; log(line: string): void },
): Promise<ScaleResult> {
  const proxies = [stack.worker.pid, stack.sidecar.pid];
  const switchyard: Record<ScaleWorkload, LevelTarget> = {
    'legacy-everything': { url: `${stack.url}/servers/everything/mcp`, token: TOKENS.plain, proxies, settled: stack.sparesSettled },
    'legacy-echo': { url: `${stack.url}/servers/echo/mcp`, token: TOKENS.echo, proxies, settled: stack.sparesSettled },
    'modern-shared': { url: `${stack.url}/servers/everything/mcp`, token: TOKENS.modern, proxies, open: (url, token) => modernAgent(url, token!), settled: stack.sparesSettled },
  };
  const points: ScalePoint[] = [];
  const skipped: string[] = [];
  const tag = (at: At) => `s-${at.gateway}-${at.workload}${at.sessions}-${at.payloadBytes}`;
  const guarded = (at: At): boolean => {
    const reason = memoryGuard({ sessions: at.sessions, mibPerSession: WORKLOADS[at.workload].mibPerSession }, machineMemory());
    if (reason === null) return true;
    skipped.push(`${pointLabel(at)}, ${at.sessions} sessions: ${reason}`);
    options.log(`  not run: ${pointLabel(at)}, ${at.sessions} sessions: ${reason}`);
    return false;
  };
  const report = (at: At, calls: number, measured: LevelRun) => {
    const r = summarizeLevel(at.sessions, calls, measured);
    const point: ScalePoint = { ...at, calls: r.summary.calls, p50: r.summary.p50, p99: r.summary.p99, callsPerSec: r.summary.callsPerSec, errors: r.summary.errors, cpuUsPerCall: r.proxyCpuUsPerCall, ...(r.proxyCpuUsEach !== undefined && r.proxyCpuUsEach.length > 1 ? { cpuUsEach: r.proxyCpuUsEach } : {}), clientCpuUsPerCall: r.clientCpuUsPerCall };
    points.push(point);
    options.log(`  ${pointLabel(point)}: ${at.sessions} session(s), ${size(at.payloadBytes)}: p50 ${point.p50} ms, p99 ${point.p99} ms, ${point.callsPerSec} calls/s, CPU ${point.cpuUsPerCall} µs/call (client ${point.clientCpuUsPerCall}), ${point.errors} errors`);
  };
  const run = async (at: At, target: LevelTarget, calls: number) => {
    if (guarded(at)) report(at, calls, await runLevel(target, at.sessions, calls, { tag: tag(at), payload: ' ' + 'x'.repeat(at.payloadBytes) }));
  };
  for (const sessions of options.sessions) {
    const calls = Math.max(10, Math.ceil(options.totalCalls / sessions));
    const at = { sweep: 'sessions', sessions, payloadBytes: KB } as const;
    // The echo pair first, before server-everything's sessions of this level end and its warm
    // pool refills beside whatever runs next; then the two Switchyard-only rows.
    await comparePair(registry, { ...at, workload: 'legacy-echo' }, switchyard['legacy-echo'], calls, options.burnIn, { guarded, tag, report });
    for (const workload of ['legacy-everything', 'modern-shared'] as const) await run({ ...at, gateway: 'switchyard', workload }, switchyard[workload], calls);
  }
  for (const bytes of options.payloads) {
    await run({ sweep: 'payload', gateway: 'switchyard', workload: 'legacy-everything', sessions: 1, payloadBytes: bytes }, switchyard['legacy-everything'], Math.max(10, Math.ceil(options.totalCalls / Math.max(1, bytes / (64 * KB)))));
  }
  return { points, skipped };
}

/**
 * Switchyard and supergateway (`--stateful`, a fresh one per level as in concurrency, burnt in, in
 * front of the same echo command) on the same workload, measured in turns (`inTurns`).
 */
async function comparePair(
  registry: ProcessRegistry,
  at: Omit<At, 'gateway'>,
  switchyard: LevelTarget,
  calls: number,
  burnInCalls: number,
  io: { guarded(at: At): boolean; tag(at: At): string; report(at: At, calls: number, run: LevelRun): void },
): Promise<void> {
  const mine = { ...at, gateway: 'switchyard' } as const;
  const theirs = { ...at, gateway: 'supergateway' } as const;
  if (!io.guarded(mine) || !io.guarded(theirs)) return;
  const gateway = await startSupergateway(registry, burnInCalls, `${RAW_ECHO.command} ${RAW_ECHO.args.join(' ')}`);
  try {
    const { callsPerSession, runs } = await inTurns({ switchyard, supergateway: { url: gateway.url, proxies: [gateway.process.pid] } }, at.sessions, calls, { tag: io.tag(mine), payload: ' ' + 'x'.repeat(at.payloadBytes) });
    io.report(mine, callsPerSession, runs.switchyard);
    io.report(theirs, callsPerSession, runs.supergateway);
  } finally {
    await registry.stop(gateway.process);
  }
}

/** MemAvailable and the reserve kept from MemTotal, in MiB, or null off Linux. */
function machineMemory(): { availableMib: number; reserveMib: number } | null {
  try {
    const info = readFileSync('/proc/meminfo', 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? NaN) / 1024;
    const available = field('MemAvailable');
    const total = field('MemTotal');
    return Number.isFinite(available) && Number.isFinite(total) ? { availableMib: Math.floor(available), reserveMib: reserveMib(total) } : null;
  } catch {
    return null;
  }
}

export function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MB` : `${bytes / 1024} KB`;
}
