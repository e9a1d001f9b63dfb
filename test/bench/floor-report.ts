/**
 * The floor section of the bench report (`floor.ts`): the floor relays next to Switchyard and
 * supergateway from the same turns, and for each of issue 17's targets the floors' ratio to
 * supergateway next to Switchyard's, with what that says: whether a Switchyard-shaped (4-process)
 * gateway can meet the target on this machine at all. Pure formatting, unit-tested on inputs.
 *
 * @module
 */
import { FLOOR_LABELS, type FloorKind, type FloorResult, type FloorSide, type FloorVariantId } from './floor.ts';
import { ratio } from './stats.ts';

/** One of the issue's targets as a ratio to supergateway: `at-most` for latency and CPU, `at-least` for calls/s. */
export interface RatioTarget {
  what: string;
  bound: number;
  direction: 'at-most' | 'at-least';
}

export interface FloorComparison {
  target: RatioTarget;
  switchyard: number | null;
  floor3: { kind: FloorKind; ratio: number } | null;
  floor4: number | null;
  verdict: string;
}

const meets = (target: RatioTarget, value: number) => (target.direction === 'at-most' ? value <= target.bound : value >= target.bound);
const x = (value: number | null | undefined) => (value === null || value === undefined ? '–' : `${value}×`);

/**
 * What the floors say about one target. The 3-process relay is the lower bound of the work: any
 * gateway in front of a stdio server does at least its work, and Switchyard's shape adds a link hop
 * to it. Not of calls/s under concurrency, though: there a 4-process relay spreads over both cores
 * and has outrun the 3-process ones (3.3× against 2.96× at 8 sessions), so a 4-process relay that
 * meets a target says it is within reach, whatever the 3-process ones did.
 * The 4-process relay is only a minimal relay of Switchyard's shape, no bound: a tuned gateway can
 * beat it (its WebSocket library and its server's pipe are not tuned), which is said when it does.
 */
export function floorVerdict(target: RatioTarget, floor3: number | null, floor4: number | null, switchyard: number | null = null): string {
  if (floor3 === null) return 'not measured';
  const beyond = target.direction === 'at-most' ? 'below' : 'above';
  // Measured, a relay of Switchyard's own shape meeting the target outweighs any bound reasoned from the 3-process one.
  if (floor4 !== null && meets(target, floor4) && !meets(target, floor3)) {
    return `within reach of Switchyard's shape: the minimal 4-process relay meets it (${floor4}×), though the minimal 3-process relays did not in these turns (${floor3}×)`;
  }
  if (!meets(target, floor3)) {
    return `the ${target.bound}× target is ${beyond} even the minimal 3-process relay (${floor3}×), whose work any gateway in front of a stdio server does, and Switchyard's shape adds a link hop to it`;
  }
  if (floor4 !== null && meets(target, floor4)) return `within reach of Switchyard's shape: the minimal 4-process relay meets it (${floor4}×)`;
  const beaten = floor4 !== null && switchyard !== null && (target.direction === 'at-most' ? switchyard < floor4 : switchyard > floor4);
  const four = floor4 === null ? '' : `; the minimal 4-process relay measured ${floor4}×${beaten ? `, and Switchyard (${switchyard}×) beats it, so that relay is no bound` : ''}`;
  return `only the minimal 3-process relay meets it (${floor3}×), and Switchyard's shape adds a link hop to that work${four}`;
}

/** The better of the two 3-process floors for `target` (either may be missing). */
function best3(target: RatioTarget, node: number | null, deno: number | null): { kind: FloorKind; ratio: number } | null {
  const candidates: Array<{ kind: FloorKind; ratio: number }> = [];
  if (node !== null) candidates.push({ kind: 'floor3-node', ratio: node });
  if (deno !== null) candidates.push({ kind: 'floor3-deno', ratio: deno });
  if (candidates.length === 0) return null;
  return candidates.reduce((a, b) => ((target.direction === 'at-most' ? b.ratio < a.ratio : b.ratio > a.ratio) ? b : a));
}

/** Every ratio target, Switchyard's and the floors' ratios to supergateway in this section's own turns. */
export function compareToFloors(r: FloorResult): FloorComparison[] {
  const lat = (id: FloorVariantId) => r.latency.find((v) => v.id === id);
  const conc = (side: FloorSide, sessions: number) => r.concurrency.find((c) => c.side === side && c.sessions === sessions)?.summary.callsPerSec;
  const rows: Array<{ target: RatioTarget; of: (id: 'b' | FloorKind) => number | null }> = [];
  for (const p of ['p50', 'p99'] as const) {
    rows.push({ target: { what: `${p} at one session`, bound: 0.5, direction: 'at-most' }, of: (id) => ratio(lat(id)?.summary[p], lat('e')?.summary[p]) });
  }
  rows.push({ target: { what: 'proxy CPU per echo', bound: 0.2, direction: 'at-most' }, of: (id) => ratio(lat(id)?.cpuUsPerCall.proxy, lat('e')?.cpuUsPerCall.proxy) });
  for (const sessions of [...new Set(r.concurrency.map((c) => c.sessions))].sort((a, b) => a - b)) {
    rows.push({ target: { what: `calls/s at ${sessions} sessions`, bound: 3, direction: 'at-least' }, of: (id) => ratio(conc(id === 'b' ? 'switchyard' : id, sessions), conc('supergateway', sessions)) });
  }
  return rows.map(({ target, of }) => {
    const floor3 = best3(target, of('floor3-node'), of('floor3-deno'));
    const floor4 = of('floor4');
    return { target, switchyard: of('b'), floor3, floor4, verdict: floorVerdict(target, floor3?.ratio ?? null, floor4, of('b')) };
  });
}

const PROCESSES: Record<FloorVariantId, string> = { a: '2 (no HTTP)', b: '4', e: '3', 'floor3-node': '3', 'floor3-deno': '3', floor4: '4' };
const SIDE_LABELS: Record<FloorSide, string> = { switchyard: 'Switchyard (b)', supergateway: 'supergateway --stateful (e)', ...FLOOR_LABELS };

export function renderFloor(r: FloorResult): string[] {
  const e = r.latency.find((v) => v.id === 'e');
  const out = [
    '## The floor: minimal relays in front of the same server',
    '',
    'The least any gateway of each shape can cost here (`test/bench/floor.ts`): a relay that parses each POST once, writes it as a line to the server and answers with its line, one server-everything per session, no auth, no logging. Measured in turns with Switchyard and supergateway in this section (not the latency section\'s rows). Latency and CPU at one session with the SDK client; proxy CPU is the relay processes\' (µs per echo, from /proc); server CPU is that of the session\'s server processes (Switchyard\'s: every server the sidecar spawned since the session opened), and the direct row, with no HTTP in front, gives the server\'s own cost per echo, to subtract.',
    '',
    '| variant | processes | p50 | p99 | p50 ÷ (e) | p99 ÷ (e) | proxy CPU | ÷ (e) | server CPU | client CPU | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const v of r.latency) {
    const cpu = v.cpuUsPerCall;
    const parts = Object.entries(cpu).filter(([k]) => !['proxy', 'server', 'client'].includes(k));
    const proxy = v.id === 'a' ? '–' : `${cpu.proxy}${parts.length > 1 ? ` (${parts.map(([k, us]) => `${k} ${us}`).join(' + ')})` : ''}`;
    const s = v.summary;
    out.push(`| ${v.label} | ${PROCESSES[v.id]} | ${s.p50} | ${s.p99} | ${x(ratio(s.p50, e?.summary.p50))} | ${x(ratio(s.p99, e?.summary.p99))} | ${proxy} | ${v.id === 'a' ? '–' : x(ratio(cpu.proxy, e?.cpuUsPerCall.proxy))} | ${cpu.server} | ${cpu.client} | ${s.errors} |`);
  }
  const lc = r.lightClient;
  out.push('', `Light client's own CPU per call (bench process, one session on the 3-process Node floor, in turns): fetch ${lc.fetch.clientCpuUsPerCall ?? '–'} µs (p50 ${lc.fetch.p50} ms), node:http keep-alive ${lc.http.clientCpuUsPerCall ?? '–'} µs (p50 ${lc.http.p50} ms); the light rows use ${r.lightTransport === 'http' ? 'node:http' : 'fetch'}.`);
  if (r.concurrency.length > 0) {
    out.push('', `Calls/s with the light client (${r.lightTransport === 'http' ? 'node:http keep-alive' : 'fetch'}), every side in turns:`, '', '| side | sessions | calls/session | calls/s | ÷ supergateway | p50 | p99 | errors | proxy CPU µs/call | client CPU µs/call |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const c of r.concurrency) {
      const sg = r.concurrency.find((o) => o.side === 'supergateway' && o.sessions === c.sessions);
      out.push(`| ${SIDE_LABELS[c.side]} | ${c.sessions} | ${c.callsPerSession} | ${c.summary.callsPerSec} | ${x(ratio(c.summary.callsPerSec, sg?.summary.callsPerSec))} | ${c.summary.p50} | ${c.summary.p99} | ${c.summary.errors} | ${c.proxyCpuUsPerCall ?? '–'} | ${c.clientCpuUsPerCall ?? '–'} |`);
    }
  }
  out.push('', '### The targets against the floor', '', 'Each figure ÷ supergateway\'s in this section\'s turns; the 3-process column is the better of the Node and Deno floors.', '', '| target | Switchyard | 3-process floor | 4-process floor | what the floor says |', '|---|---:|---:|---:|---|');
  for (const c of compareToFloors(r)) {
    const bound = `${c.target.what} ${c.target.direction === 'at-most' ? '≤' : '≥'} ${c.target.bound}×`;
    out.push(`| ${bound} | ${x(c.switchyard)} | ${c.floor3 === null ? '–' : `${c.floor3.ratio}× (${c.floor3.kind === 'floor3-node' ? 'Node' : 'Deno'})`} | ${x(c.floor4)} | ${c.verdict} |`);
  }
  const gap = distanceFromFloor(r);
  out.push('', `Distance from each gateway's own floor: Switchyard ÷ 4-process floor ${gap.switchyard}; supergateway ÷ 3-process Node floor ${gap.supergateway}.`);
  return out;
}

/** How far Switchyard may be from the minimal relay of its own shape under the restated targets. */
export const FLOOR_SLACK = 1.3;

export interface RestatedTarget {
  what: string;
  unit: 'ms' | 'µs' | 'calls/s';
  /** Switchyard's figure, the 4-process floor's, and Switchyard ÷ floor. */
  switchyard: number | undefined;
  floor: number | undefined;
  ratio: number | null;
  met: boolean | null;
}

/**
 * The issue's ratio targets restated against the floor of Switchyard's own shape (the minimal
 * 4-process relay, measured in the same turns): p50, p99 and proxy CPU at most `FLOOR_SLACK`×
 * the relay's, calls/s at each level at least 1/`FLOOR_SLACK` of its. Ratios to supergateway
 * ask for more than any gateway of that shape does here (`compareToFloors`); these ask how much
 * Switchyard's real work (auth, sessions, trust, audit, validation) costs over a relay that does
 * none of it.
 */
export function restatedTargets(r: FloorResult): RestatedTarget[] {
  const lat = (id: FloorVariantId) => r.latency.find((v) => v.id === id);
  const conc = (side: FloorSide, sessions: number) => r.concurrency.find((c) => c.side === side && c.sessions === sessions)?.summary.callsPerSec;
  const row = (what: string, unit: RestatedTarget['unit'], switchyard: number | undefined, floor: number | undefined, direction: 'at-most' | 'at-least'): RestatedTarget => {
    const q = ratio(switchyard, floor);
    return { what, unit, switchyard, floor, ratio: q, met: q === null ? null : direction === 'at-most' ? q <= FLOOR_SLACK : q >= Math.round((1 / FLOOR_SLACK) * 100) / 100 };
  };
  const rows = [
    row(`echo p50 at one session ≤ ${FLOOR_SLACK}× the 4-process floor's`, 'ms', lat('b')?.summary.p50, lat('floor4')?.summary.p50, 'at-most'),
    row(`echo p99 at one session ≤ ${FLOOR_SLACK}× the 4-process floor's`, 'ms', lat('b')?.summary.p99, lat('floor4')?.summary.p99, 'at-most'),
    row(`proxy CPU per echo ≤ ${FLOOR_SLACK}× the 4-process floor's`, 'µs', lat('b')?.cpuUsPerCall.proxy, lat('floor4')?.cpuUsPerCall.proxy, 'at-most'),
  ];
  for (const sessions of [...new Set(r.concurrency.map((c) => c.sessions))].sort((a, b) => a - b)) {
    rows.push(row(`calls/s at ${sessions} sessions ≥ 1/${FLOOR_SLACK} of the 4-process floor's`, 'calls/s', conc('switchyard', sessions), conc('floor4', sessions), 'at-least'));
  }
  return rows;
}

/** Each gateway ÷ the floor of its own shape, for p50, proxy CPU and calls/s at each level. */
export function distanceFromFloor(r: FloorResult): { switchyard: string; supergateway: string } {
  const lat = (id: FloorVariantId) => r.latency.find((v) => v.id === id);
  const levels = [...new Set(r.concurrency.map((c) => c.sessions))].sort((a, b) => a - b);
  const conc = (side: FloorSide, sessions: number) => r.concurrency.find((c) => c.side === side && c.sessions === sessions)?.summary.callsPerSec;
  const describe = (gateway: 'b' | 'e', floor: FloorKind) => {
    const side: FloorSide = gateway === 'b' ? 'switchyard' : 'supergateway';
    const parts = [
      `p50 ${x(ratio(lat(gateway)?.summary.p50, lat(floor)?.summary.p50))}`,
      `proxy CPU ${x(ratio(lat(gateway)?.cpuUsPerCall.proxy, lat(floor)?.cpuUsPerCall.proxy))}`,
      ...levels.map((n) => `calls/s at ${n} ${x(ratio(conc(side, n), conc(floor, n)))}`),
    ];
    return parts.join(', ');
  };
  return { switchyard: describe('b', 'floor4'), supergateway: describe('e', 'floor3-node') };
}
