import { describe, expect, it } from 'vitest';
import type { FloorConcurrencyRow, FloorResult, FloorSide, FloorVariantId } from './floor.ts';
import { compareToFloors, distanceFromFloor, floorVerdict, renderFloor, restatedTargets } from './floor-report.ts';
import type { LatencySummary } from './stats.ts';

const summary = (p50: number, p99: number, callsPerSec = 0): LatencySummary => ({ calls: 100, errors: 0, p50, p90: p50, p99, mean: p50, max: p99, callsPerSec });
const row = (id: FloorVariantId, p50: number, p99: number, proxy: number, parts: Record<string, number> = {}) => ({ id, label: `row ${id}`, summary: summary(p50, p99), cpuUsPerCall: { proxy, ...parts, server: 400, client: 2000 } });
const level = (side: FloorSide, sessions: number, callsPerSec: number): FloorConcurrencyRow => ({ side, sessions, callsPerSession: 20, openMs: 1, openErrors: 0, proxyCpuUsPerCall: 100, clientCpuUsPerCall: 300, summary: summary(10, 20, callsPerSec) });

const result: FloorResult = {
  latency: [
    row('a', 0.5, 1, 0),
    row('b', 4, 12, 1800, { worker: 1000, sidecar: 800 }),
    row('e', 4, 10, 2500, { gateway: 2500 }),
    row('floor3-node', 2, 6, 400, { relay: 400 }),
    row('floor3-deno', 1.8, 7, 450, { edge: 450 }),
    row('floor4', 2.4, 8, 900, { edge: 500, relay: 400 }),
  ],
  lightClient: { fetch: { clientCpuUsPerCall: 900, p50: 2 }, http: { clientCpuUsPerCall: 300, p50: 1 } },
  lightTransport: 'http',
  concurrency: [
    level('switchyard', 8, 400), level('supergateway', 8, 350), level('floor3-node', 8, 1400), level('floor3-deno', 8, 1200), level('floor4', 8, 1000),
    level('switchyard', 64, 600), level('supergateway', 64, 200), level('floor3-node', 64, 1000), level('floor3-deno', 64, 900), level('floor4', 64, 800),
  ],
};

describe('what the floor says about a target', () => {
  const latency = { what: 'p50 at one session', bound: 0.5, direction: 'at-most' } as const;
  const calls = { what: 'calls/s at 8 sessions', bound: 3, direction: 'at-least' } as const;

  it('says a ≤ target is within reach when the minimal 4-process relay meets it', () => {
    expect(floorVerdict(latency, 0.3, 0.45)).toBe("within reach of Switchyard's shape: the minimal 4-process relay meets it (0.45×)");
    expect(floorVerdict(latency, 0.3, 0.5)).toMatch(/within reach/);
  });

  it('says a ≤ target is met only by three processes, and when Switchyard beats the 4-process relay', () => {
    expect(floorVerdict(latency, 0.45, 0.6)).toBe("only the minimal 3-process relay meets it (0.45×), and Switchyard's shape adds a link hop to that work; the minimal 4-process relay measured 0.6×");
    expect(floorVerdict(latency, 0.45, 0.6, 0.55)).toMatch(/measured 0\.6×, and Switchyard \(0\.55×\) beats it, so that relay is no bound$/);
    expect(floorVerdict(latency, 0.45, 0.6, 0.7)).toMatch(/measured 0\.6×$/);
  });

  it('says a ≤ target is beyond any gateway when even the 3-process relay misses it', () => {
    expect(floorVerdict(latency, 0.55, 0.6)).toBe("the 0.5× target is below even the minimal 3-process relay (0.55×), whose work any gateway in front of a stdio server does, and Switchyard's shape adds a link hop to it");
  });

  it('reads a ≥ target the other way round', () => {
    expect(floorVerdict(calls, 4, 3.2)).toMatch(/within reach .* \(3\.2×\)$/);
    expect(floorVerdict(calls, 3.5, 2.9, 3.1)).toMatch(/only the minimal 3-process relay meets it \(3\.5×\).*Switchyard \(3\.1×\) beats it/);
    expect(floorVerdict(calls, 2, 1.5)).toMatch(/the 3× target is above even the minimal 3-process relay \(2×\)/);
  });

  it('says a target is within reach when the 4-process relay meets it, even where the 3-process ones did not', () => {
    expect(floorVerdict(calls, 2.96, 3.3)).toBe("within reach of Switchyard's shape: the minimal 4-process relay meets it (3.3×), though the minimal 3-process relays did not in these turns (2.96×)");
    expect(floorVerdict(latency, 0.52, 0.48)).toMatch(/^within reach .* \(0\.48×\), though .* \(0\.52×\)$/);
  });

  it('says so when the 3-process floor was not measured', () => {
    expect(floorVerdict(latency, null, 0.3)).toBe('not measured');
  });
});

describe('the targets against the floor', () => {
  it('gives Switchyard, the better 3-process floor and the 4-process floor as ratios to supergateway, per target', () => {
    const rows = compareToFloors(result);
    expect(rows.map((r) => r.target.what)).toEqual(['p50 at one session', 'p99 at one session', 'proxy CPU per echo', 'calls/s at 8 sessions', 'calls/s at 64 sessions']);
    const [p50, p99, cpu, at8, at64] = rows;
    expect(p50).toMatchObject({ switchyard: 1, floor3: { kind: 'floor3-deno', ratio: 0.45 }, floor4: 0.6 });
    expect(p50!.verdict).toMatch(/^only the minimal 3-process relay meets it \(0\.45×\).*measured 0\.6×$/);
    expect(p99).toMatchObject({ switchyard: 1.2, floor3: { kind: 'floor3-node', ratio: 0.6 }, floor4: 0.8 });
    expect(cpu).toMatchObject({ switchyard: 0.72, floor3: { kind: 'floor3-node', ratio: 0.16 }, floor4: 0.36 });
    // For calls/s the better floor is the higher one.
    expect(at8).toMatchObject({ switchyard: 1.14, floor3: { kind: 'floor3-node', ratio: 4 }, floor4: 2.86 });
    expect(at64).toMatchObject({ switchyard: 3, floor4: 4 });
    expect(at64!.verdict).toMatch(/^within reach of Switchyard's shape/);
  });

  it('leaves a ratio out when its side was not measured', () => {
    const rows = compareToFloors({ ...result, latency: result.latency.filter((v) => v.id !== 'floor4'), concurrency: [] });
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({ floor4: null });
    expect(rows[0]!.verdict).toBe("only the minimal 3-process relay meets it (0.45×), and Switchyard's shape adds a link hop to that work");
    const none = compareToFloors({ ...result, latency: result.latency.filter((v) => v.id !== 'floor3-node' && v.id !== 'floor3-deno'), concurrency: [] });
    expect(none[0]).toMatchObject({ floor3: null, verdict: 'not measured' });
  });

  it('gives each gateway ÷ the floor of its own shape', () => {
    expect(distanceFromFloor(result)).toEqual({
      switchyard: 'p50 1.67×, proxy CPU 2×, calls/s at 8 0.4×, calls/s at 64 0.75×',
      supergateway: 'p50 2×, proxy CPU 6.25×, calls/s at 8 0.25×, calls/s at 64 0.2×',
    });
  });

  it('renders the floor table with each relay process, the light client figures and the verdicts', () => {
    const text = renderFloor(result).join('\n');
    expect(text).toContain('| row floor4 | 4 | 2.4 | 8 | 0.6× | 0.8× | 900 (edge 500 + relay 400) | 0.36× | 400 | 2000 | 0 |');
    expect(text).toContain('| row a | 2 (no HTTP) | 0.5 | 1 | 0.13× | 0.1× | – | – | 400 | 2000 | 0 |');
    expect(text).toContain('fetch 900 µs (p50 2 ms), node:http keep-alive 300 µs (p50 1 ms); the light rows use node:http.');
    expect(text).toContain('| 4-process floor (Deno.serve → WebSocket → Node relay → stdio) | 64 | 20 | 800 | 4× |');
    expect(text).toContain('| p50 at one session ≤ 0.5× | 1× | 0.45× (Deno) | 0.6× |');
    expect(text).toContain('| calls/s at 64 sessions ≥ 3× | 3× | 5× (Node) | 4× |');
  });
});

describe('the targets restated against the floor of Switchyard\'s shape', () => {
  const restated = restatedTargets(result);
  const of = (what: string) => restated.find((t) => t.what.startsWith(what))!;

  it('holds latency and CPU to 1.3× the 4-process relay', () => {
    // b 4 ms vs floor4 2.4 ms; p99 12 vs 8; CPU 1800 vs 900.
    expect(of('echo p50')).toMatchObject({ switchyard: 4, floor: 2.4, ratio: 1.67, met: false });
    expect(of('echo p99')).toMatchObject({ ratio: 1.5, met: false });
    expect(of('proxy CPU')).toMatchObject({ switchyard: 1800, floor: 900, ratio: 2, met: false });
  });

  it('holds calls/s at each level to at least 1/1.3 of the relay', () => {
    // 400 vs 1000 at 8 sessions: 0.4×; 600 vs 800 at 64: 0.75×, under 0.77.
    expect(of('calls/s at 8 ')).toMatchObject({ ratio: 0.4, met: false });
    expect(of('calls/s at 64 ')).toMatchObject({ ratio: 0.75, met: false });
    const near: FloorResult = { ...result, concurrency: result.concurrency.map((c) => (c.side === 'switchyard' && c.sessions === 64 ? level('switchyard', 64, 620) : c)) };
    expect(restatedTargets(near).find((t) => t.what.startsWith('calls/s at 64 '))).toMatchObject({ ratio: 0.78, met: true });
  });

  it('leaves a target unjudged when the floor was not measured', () => {
    const noFloor: FloorResult = { ...result, latency: result.latency.filter((v) => v.id !== 'floor4') };
    expect(restatedTargets(noFloor).find((t) => t.what.startsWith('echo p50'))).toMatchObject({ ratio: null, met: null });
  });
});
