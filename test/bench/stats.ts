/**
 * Summaries of latency samples. Percentiles use the nearest-rank method on the sorted samples:
 * with 500 calls, p99 is the 495th value — a real observation, never an interpolation.
 *
 * @module
 */
import type { Timed } from './client.ts';

export interface LatencySummary {
  calls: number;
  errors: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
  /** Completed calls per second of wall time. */
  callsPerSec: number;
  firstError?: string;
}

/** Nearest-rank percentile of already sorted values; NaN when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

export function summarize(timed: Timed): LatencySummary {
  const sorted = [...timed.latencies].sort((a, b) => a - b);
  const total = sorted.reduce((sum, v) => sum + v, 0);
  return {
    calls: sorted.length,
    errors: timed.errors,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    mean: round(sorted.length === 0 ? Number.NaN : total / sorted.length),
    max: round(sorted.at(-1) ?? Number.NaN),
    callsPerSec: round(timed.wallMs > 0 ? (sorted.length / timed.wallMs) * 1000 : Number.NaN, 1),
    ...(timed.firstError !== undefined ? { firstError: timed.firstError } : {}),
  };
}

/** Several loops that ran at the same time, as one summary over the longest wall time. */
export function mergeParallel(loops: readonly Timed[], wallMs: number): Timed {
  const firstError = loops.find((l) => l.firstError !== undefined)?.firstError;
  return {
    latencies: loops.flatMap((l) => l.latencies),
    wallMs,
    errors: loops.reduce((sum, l) => sum + l.errors, 0),
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** `a / b` rounded, or null when either side is missing. */
export function ratio(a: number | undefined, b: number | undefined): number | null {
  return a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? null : round(a / b, 2);
}
