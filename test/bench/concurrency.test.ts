import { describe, expect, it } from 'vitest';
import { poolLevels, summarizeLevel, type LevelRun } from './concurrency.ts';

const turn = (latencies: number[], wallMs: number, extra: Partial<LevelRun> = {}): LevelRun => ({
  openMs: 10,
  openErrors: 0,
  timed: { latencies, wallMs, errors: 0 },
  proxyCpuMs: latencies.length,
  clientCpuMs: 2 * latencies.length,
  ...extra,
});

describe('pooling the turns of one level', () => {
  it('reads calls/s over the turns added up, not over the last turn', () => {
    const pooled = poolLevels([turn([1, 1, 1, 1], 100), turn([3, 3, 3, 3], 300)]);
    const summary = summarizeLevel(4, 2, pooled);
    expect(summary.summary.calls).toBe(8);
    expect(summary.summary.callsPerSec).toBe(20);
    expect(summary.summary.p50).toBe(1);
    expect(summary.summary.max).toBe(3);
    expect(summary.openMs).toBe(20);
  });

  it('adds errors and open failures of every turn, and CPU per call over all calls', () => {
    const pooled = poolLevels([turn([1, 2], 10, { openErrors: 1, timed: { latencies: [1, 2], wallMs: 10, errors: 2, firstError: 'first' } }), turn([1, 2], 10)]);
    const summary = summarizeLevel(2, 2, pooled);
    expect(summary.openErrors).toBe(1);
    expect(summary.summary.errors).toBe(2);
    expect(summary.summary.firstError).toBe('first');
    expect(summary.proxyCpuUsPerCall).toBe(1000);
    expect(summary.clientCpuUsPerCall).toBe(2000);
  });
});
