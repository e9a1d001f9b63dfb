/**
 * The scale curve: how latency and the proxies' CPU per call grow with work, on Switchyard (b)
 * `/servers/everything/mcp`. Two sweeps: sessions (1, 8, 64, 256 by default, each session calling
 * `echo` with a 1 KB payload, all at once) and payload size (1 KB, 64 KB, 1 MB echoed by one
 * session). Printed as a table and drawn as an SVG (`bench-results/<label>-scale.svg`, written by
 * the report).
 *
 * A level is skipped, with a note, when the machine has too little memory available for that many
 * server processes (`MIB_PER_SESSION` each): on a shared two-core machine 256 servers is a lot.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { runLevel } from './concurrency.ts';
import { TOKENS, type Stack } from './stack.ts';

export interface ScalePoint {
  sweep: 'sessions' | 'payload';
  sessions: number;
  payloadBytes: number;
  calls: number;
  p50: number;
  p99: number;
  callsPerSec: number;
  errors: number;
  /** Worker + sidecar CPU µs per call. */
  cpuUsPerCall: number | null;
}

export interface ScaleResult {
  points: ScalePoint[];
  skipped: string[];
}

const MIB_PER_SESSION = 120;
export const KB = 1024;

export async function measureScale(
  stack: Stack,
  options: { sessions: readonly number[]; payloads: readonly number[]; totalCalls: number; log(line: string): void },
): Promise<ScaleResult> {
  const target = { url: `${stack.url}/servers/everything/mcp`, token: TOKENS.plain, proxies: [stack.worker.pid, stack.sidecar.pid] };
  const points: ScalePoint[] = [];
  const skipped: string[] = [];
  const run = async (sweep: ScalePoint['sweep'], sessions: number, payloadBytes: number, calls: number) => {
    const r = await runLevel(target, sessions, calls, { tag: `s${sessions}-${payloadBytes}`, payload: ' ' + 'x'.repeat(payloadBytes) });
    const point = { sweep, sessions, payloadBytes, calls: r.summary.calls, p50: r.summary.p50, p99: r.summary.p99, callsPerSec: r.summary.callsPerSec, errors: r.summary.errors, cpuUsPerCall: r.proxyCpuUsPerCall };
    points.push(point);
    options.log(`  ${sweep}: ${sessions} session(s), ${size(payloadBytes)}: p50 ${point.p50} ms, p99 ${point.p99} ms, ${point.callsPerSec} calls/s, CPU ${point.cpuUsPerCall} µs/call, ${point.errors} errors`);
  };
  for (const sessions of options.sessions) {
    const available = availableMib();
    if (available !== null && available < sessions * MIB_PER_SESSION) {
      skipped.push(`${sessions} sessions: ${available} MiB available, ${sessions * MIB_PER_SESSION} MiB wanted`);
      options.log(`  skipped ${sessions} sessions: not enough memory available (${available} MiB)`);
      continue;
    }
    await run('sessions', sessions, KB, Math.max(10, Math.ceil(options.totalCalls / sessions)));
  }
  for (const bytes of options.payloads) await run('payload', 1, bytes, Math.max(10, Math.ceil(options.totalCalls / Math.max(1, bytes / (64 * KB)))));
  return { points, skipped };
}

/** MemAvailable in MiB, or null off Linux. */
function availableMib(): number | null {
  try {
    const match = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    return match ? Math.floor(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

export function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MB` : `${bytes / 1024} KB`;
}
