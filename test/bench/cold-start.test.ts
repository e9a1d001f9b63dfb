import { describe, expect, it } from 'vitest';
import { pairedExcess, type ColdStartResult } from './cold-start.ts';
import { evaluateTargets, type BenchResults } from './report.ts';

describe("containment's cost at cold start", () => {
  it('is the median of back-to-back differences, over the passes both kinds ran', () => {
    // Pass 4 ran while the machine was busy: both slow, its difference ordinary.
    const contained = new Map([[0, 230], [1, 250], [3, 224], [4, 400], [5, 215]]);
    const ordinary = new Map([[0, 210], [1, 220], [2, 205], [3, 212], [4, 390], [5, 200]]);
    // Pass 2 failed contained: left out, not paired with pass 3's.
    expect(pairedExcess(contained, ordinary)).toEqual({ median: 15, pairs: 5 });
    expect(pairedExcess(new Map([[0, 1]]), new Map([[1, 1]]))).toBeNull();
  });

  const run = (coldStart: ColdStartResult[]): Omit<BenchResults, 'targets'> => ({
    label: 'test',
    startedAt: '2026-12-05T00:00:00Z',
    durationSec: 0,
    machine: { cpus: 2, cpuModel: 'test', node: 'v20', deno: '2', loadavgAtStart: [0, 0, 0] },
    settings: { quick: false, calls: 0, warmup: 0, rounds: 0, levels: [], concurrencyCalls: 0, coldSamples: 11, warmSamples: 0, fleet: 0 },
    latency: [],
    concurrency: [],
    coldStart,
    memory: null,
    warmStart: null,
    scale: null,
    linkCost: null,
    size: null,
    hotPath: null,
    failures: [],
  });
  const kind = (k: ColdStartResult['kind'], median: number, over?: ColdStartResult['overOrdinary']): ColdStartResult => ({ kind: k, samples: [median], median, min: median, max: median, errors: 0, ...(over ? { overOrdinary: over } : {}) });
  const row = (coldStart: ColdStartResult[]) => evaluateTargets(run(coldStart)).find((t) => t.target === 'contained cold start ≤ ordinary + 20 ms');

  it('judges the target on the pairs, and says both the pairs and the medians', () => {
    // The medians alone are 22 ms apart, the pairs 18: the pairs decide.
    expect(row([kind('ordinary', 205), kind('contained', 227, { median: 18, pairs: 11 })])).toMatchObject({ met: true, value: '+18 ms (median of 11 back-to-back pairs); medians 227 ms vs 205 ms' });
    expect(row([kind('ordinary', 205), kind('contained', 219, { median: 21, pairs: 11 })])).toMatchObject({ met: false });
  });

  it('falls back to the medians for results without pairs (older runs)', () => {
    expect(row([kind('ordinary', 205), kind('contained', 227)])).toMatchObject({ met: false, value: '227 ms vs 205 ms' });
  });
});
