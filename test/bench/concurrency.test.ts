import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { inTurnsOf, poolLevels, summarizeLevel, type LevelRun } from './concurrency.ts';

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

  it('keeps each proxy process\'s CPU apart, added over the turns, only when every turn measured it', () => {
    const split = poolLevels([turn([1, 2], 10, { proxyCpuMs: 3, proxyCpuMsEach: [1, 2] }), turn([1, 2], 10, { proxyCpuMs: 5, proxyCpuMsEach: [4, 1] })]);
    expect(summarizeLevel(2, 2, split)).toMatchObject({ proxyCpuUsPerCall: 2000, proxyCpuUsEach: [1250, 750] });
    const older = poolLevels([turn([1, 2], 10, { proxyCpuMsEach: [1, 1] }), turn([1, 2], 10)]);
    expect(summarizeLevel(2, 2, older).proxyCpuUsEach).toBeUndefined();
  });
});

describe('measuring sides in turns', () => {
  it('runs the sides forwards then backwards, each side its share of the calls, pooled per side', async () => {
    const calls: string[] = [];
    const side = (name: string) => ({
      url: `http://${name}.invalid/mcp`,
      proxies: [],
      open: () => ({ client: new Client({ name: 'turns', version: '1' }), echo: async () => void calls.push(name), close: async () => {} }),
    });
    const { callsPerSession, runs } = await inTurnsOf({ a: side('a'), b: side('b'), c: side('c') }, ['a', 'b', 'c'], 2, 10, { tag: 't' });
    // Per turn: one untimed call per session, then 5 timed calls per session (2 sessions): 12 calls.
    expect(calls).toHaveLength(6 * 12);
    const turns = Array.from({ length: 6 }, (_, i) => [...new Set(calls.slice(i * 12, (i + 1) * 12))].join());
    expect(turns).toEqual(['a', 'b', 'c', 'c', 'b', 'a']);
    expect(callsPerSession).toBe(10);
    expect(runs.a.timed.latencies).toHaveLength(20);
    expect(Object.keys(runs)).toEqual(['a', 'b', 'c']);
  });
});
