/**
 * The benchmark's output: one JSON document (everything measured, machine facts, settings) and a
 * markdown rendering of it, both written under `bench-results/` (git-ignored) and the markdown
 * printed. Latency rows lead with their ratio to (a) direct stdio and (e) supergateway, the two
 * references the issue asks about. The targets are reported, never asserted: a miss is a finding.
 *
 * With `--compare FILE` (an earlier JSON result) a before/after section is added.
 *
 * @module
 */
import { renderFairness, type FairnessResult } from './fairness.ts';
import { renderCpuShare, type CpuShareResult } from './cpu-share.ts';
import { renderFleet, type FleetResult } from './fleet.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ColdStartResult } from './cold-start.ts';
import type { ConcurrencyResult } from './concurrency.ts';
import type { FloorResult } from './floor.ts';
import { renderFloor, restatedTargets } from './floor-report.ts';
import type { VariantResult } from './latency.ts';
import type { LinkCostResult } from './link-cost.ts';
import type { MemoryResult } from './memory.ts';
import { REPO } from './processes.ts';
import type { SizeResult } from './size.ts';
import { START_OVER_FLOOR_MS, type StartResult } from './start.ts';
import type { HotPathResults } from './hot-path-run.ts';
import { renderScaleSvg } from './scale-chart.ts';
import { pointLabel, size, type ScaleResult } from './scale.ts';
import { ratio } from './stats.ts';
import type { WarmStartResult } from './warm-start.ts';
import { renderWarmUpCurve, type WarmUpCurve } from './warm-up-curve.ts';

export interface BenchResults {
  label: string;
  startedAt: string;
  durationSec: number;
  /** Load averages say how much else ran on the machine: the end-to-end numbers move with it. */
  machine: { cpus: number; cpuModel: string; node: string; deno: string; loadavgAtStart: number[]; loadavgAtEnd?: number[] };
  settings: { quick: boolean; calls: number; warmup: number; burnIn?: number; rounds: number; levels: number[]; concurrencyCalls: number; coldSamples: number; warmSamples: number; fleet: number };
  latency: VariantResult[];
  concurrency: ConcurrencyResult[];
  coldStart: ColdStartResult[];
  memory: MemoryResult | null;
  warmStart: WarmStartResult | null;
  scale: ScaleResult | null;
  linkCost: LinkCostResult | null;
  size: SizeResult | null;
  /** A cold isolate's import and first answer, beside a minimal Hono worker's (`start.ts`); absent in older results. */
  workerStart?: StartResult | null;
  hotPath: HotPathResults | null;
  /** 1,000 simulated hosts on workerd beside Deno (`fleet.ts`); absent in older results. */
  fleet?: FleetResult[] | null;
  /** One agent's flood and another's echo on one host's link (`fairness.ts`); absent in older results. */
  fairness?: FairnessResult[] | null;
  /** One agent's busy servers beside another's calls, with and without the agents' cgroups (`cpu-share.ts`); absent in older results. */
  cpuShare?: CpuShareResult | null;
  /** The floor relays beside the gateways (`floor.ts`); absent in older results. */
  floor?: FloorResult | null;
  /** Fresh processes' cost per call, block by block (`warm-up-curve.ts`); absent in older results. */
  warmUpCurve?: WarmUpCurve | null;
  targets: Target[];
  /** Sections that failed, with why; the rest of the run still reports. */
  failures: Array<{ section: string; error: string }>;
}

export interface Target {
  target: string;
  value: string;
  /** This figure ÷ supergateway `--stateful`'s same figure in this run, where it has one. */
  vsSupergateway: number | null;
  met: boolean | null;
}

/** The issue's targets, evaluated on this run's numbers (met null: not measured). */
export function evaluateTargets(r: Omit<BenchResults, 'targets'>): Target[] {
  const v = (id: string) => r.latency.find((x) => x.id === id);
  const cold = (kind: string) => r.coldStart.find((c) => c.kind === kind)?.median;
  const known = (...values: Array<number | null | undefined>) => values.every((x) => x !== undefined && x !== null && Number.isFinite(x));
  const e = v('e');
  const out: Target[] = [];
  const add = (target: string, value: string, vs: number | null, met: boolean | null) => out.push({ target, value, vsSupergateway: vs, met });
  const atMost = (value: number | null | undefined, bound: number) => (known(value) ? value! <= bound : null);

  for (const [id, what] of [['b', 'legacy session'], ['m', 'modern request']] as const) {
    const x = v(id);
    for (const p of ['p50', 'p99'] as const) {
      const q = ratio(x?.summary[p], e?.summary[p]);
      add(`echo ${p} through /servers/:name/mcp, ${what} (${id}), ≤ 0.5× supergateway`, `${x?.summary[p] ?? '–'} ms vs ${e?.summary[p] ?? '–'} ms`, q, atMost(q, 0.5));
    }
  }
  const b = v('b');
  const d = v('d');
  const dOverB = ratio(d?.summary.p50, b?.summary.p50);
  add('/mcp echo p50 (d) within 10 % of the passthrough (b)', `${d?.summary.p50 ?? '–'} ms vs ${b?.summary.p50 ?? '–'} ms (${dOverB ?? '–'}×)`, ratio(d?.summary.p50, e?.summary.p50), atMost(dOverB, 1.1));
  for (const id of ['b', 'm'] as const) {
    const x = v(id);
    const q = ratio(x?.cpuUsPerCall.proxy, e?.cpuUsPerCall.proxy);
    add(`worker + sidecar CPU per echo (${id}) ≤ 0.2× supergateway's`, `${x?.cpuUsPerCall.proxy ?? '–'} µs (${x?.cpuUsPerCall.worker ?? '–'} + ${x?.cpuUsPerCall.sidecar ?? '–'}) vs ${e?.cpuUsPerCall.proxy ?? '–'} µs`, q, atMost(q, 0.2));
  }
  for (const sessions of [8, 64]) {
    // Judged on the light client's rows: the SDK client's own CPU per call is about a gateway's and caps the ratio (concurrency.ts).
    const row = (gateway: string) => r.concurrency.find((c) => c.gateway === gateway && c.client === 'light' && c.sessions === sessions);
    const sy = row('switchyard');
    const sg = row('supergateway');
    const q = ratio(sy?.summary.callsPerSec, sg?.summary.callsPerSec);
    add(`calls/s at ${sessions} sessions ≥ 3× supergateway's (light client: both gateways driven by the same node:http keep-alive client)`, `${sy?.summary.callsPerSec ?? '–'} vs ${sg?.summary.callsPerSec ?? '–'} calls/s`, q, known(q) ? q! >= 3 : null);
    const errors = (gateway: string) => r.concurrency.filter((c) => c.gateway === gateway && c.sessions === sessions).reduce((sum, c) => sum + c.summary.errors, 0);
    const ran = r.concurrency.some((c) => c.sessions === sessions);
    add(`${sessions} sessions: zero errors (both clients)`, ran ? `${errors('switchyard')} errors (supergateway ${errors('supergateway')})` : 'not run', null, ran ? errors('switchyard') === 0 : null);
  }
  const w = r.warmStart;
  add('/mcp with 3 demo servers, initialize → first tool result, warm ≤ 100 ms', w === null ? 'not run' : `warm ${w.warm.median} ms, cold ${w.cold.median} ms (${w.warm.errors + w.cold.errors} errors)`, null, w === null ? null : w.warm.median <= 100 && w.warm.errors === 0);
  const f = w?.fleet ?? null;
  add(`opening ${f?.sessions ?? 64} sessions, pool sized for them, ≤ 2 s`, f === null ? 'not run' : `warm ${f.warmMs} ms, cold ${f.coldMs} ms (${f.warmErrors + f.coldErrors} errors)`, null, f === null ? null : f.warmMs <= 2000 && f.warmErrors === 0);
  const size = r.size?.minifiedBytes;
  // KB as the issue writes it, 1000 bytes: the stricter reading (the KiB figure beside it).
  add('dist/worker.js ≤ 250 KB minified', size === undefined ? 'not run' : `${(size / 1000).toFixed(1)} KB (${(size / 1024).toFixed(1)} KiB)`, null, size === undefined ? null : size <= 250_000);
  // What the size stands for: the time a cold isolate spends on the bundle before its first answer.
  const st = r.workerStart ?? null;
  add(`restated: worker cold start (import + first answer, fresh Deno process) ≤ a minimal Hono worker's + ${START_OVER_FLOOR_MS} ms`, st === null ? 'not run' : `${st.worker.totalMs} vs ${st.floor.totalMs} ms (+${st.overFloorMs} ms)`, null, st === null ? null : st.overFloorMs <= START_OVER_FLOOR_MS);
  const mem = r.memory;
  // Linked and idle: right after the link came up, no session yet (memory.ts says why the
  // after-warm-up figure is reported, not checked).
  const linked = mem?.fresh.sidecarKb;
  const parts = mem?.fresh.sidecarParts;
  const split = parts == null ? '' : `: ${kb(parts.anonymous)} its own memory, ${kb(parts.file)} pages of the node binary and its libraries`;
  add('sidecar (dist/sidecar.js) RSS linked and idle (just linked, no session yet) ≤ 60 MiB', `${kb(linked)}${split} (0.5 s after the warm-up: ${kb(mem?.idle.sidecarKb)})`, null, known(linked) ? linked! <= 60 * 1024 : null);
  const sc = r.scale;
  const covered = (sweep: string, values: number[], of: (p: ScaleResult['points'][number]) => number) => values.every((v) => sc?.points.some((p) => p.sweep === sweep && of(p) === v));
  const full = covered('sessions', [1, 8, 64, 256], (p) => p.sessions) && covered('payload', [1024, 65536, 1048576], (p) => p.payloadBytes);
  const at256 = sc?.points.filter((p) => p.sweep === 'sessions' && p.sessions === 256).map((p) => `${p.gateway} ${p.workload}`) ?? [];
  add(
    'scale curve: latency and CPU at 1, 8, 64, 256 sessions and 1 KB, 64 KB, 1 MB',
    sc === null ? 'not run' : `${sc.points.length} points${full ? '' : ' (not every level)'}${at256.length > 0 ? `; 256 sessions: ${at256.join(', ')}` : ''}${sc.skipped.length > 0 ? `; ${sc.skipped.length} not run (memory, see the scale table)` : ''}; chart in bench-results/`,
    null,
    // supergateway's rows are the comparison: its errors are reported in the table, not held against Switchyard.
    sc === null ? null : full && sc.points.every((p) => p.gateway !== 'switchyard' || p.errors === 0),
  );
  const ordinary = cold('ordinary');
  const contained = cold('contained');
  // Judged on the pairs taken back to back where there are some (cold-start.ts), else on the medians.
  const over = r.coldStart.find((c) => c.kind === 'contained')?.overOrdinary;
  add(
    'contained cold start ≤ ordinary + 20 ms',
    `${over !== undefined ? `+${over.median} ms (median of ${over.pairs} back-to-back pairs); medians ` : ''}${contained ?? '–'} ms vs ${ordinary ?? '–'} ms`,
    null,
    over !== undefined ? over.median <= 20 : known(contained, ordinary) ? contained! <= ordinary! + 20 : null,
  );
  // The ratio targets restated against the minimal relay of Switchyard's own shape (floor-report.ts).
  for (const t of r.floor ? restatedTargets(r.floor) : []) add(`restated: ${t.what}`, `${t.switchyard ?? '–'} vs ${t.floor ?? '–'} ${t.unit} (${t.ratio ?? '–'}×), the floor section's turns`, null, t.met);
  return out;
}

export function renderMarkdown(r: BenchResults, before?: BenchResults): string {
  const out: string[] = [];
  const m = r.machine;
  out.push(`# Switchyard benchmark — ${r.label}`, '');
  out.push(`${r.startedAt}, ${r.durationSec} s. ${m.cpus} × ${m.cpuModel}; node ${m.node}, deno ${m.deno}; load average ${m.loadavgAtStart.join(' ')} at start${m.loadavgAtEnd ? `, ${m.loadavgAtEnd.join(' ')} at end` : ''}.`);
  const burnt = r.settings.burnIn === undefined ? '' : ` Every gateway process (Switchyard's worker and sidecar, supergateway, mcp-proxy, the floor relays) served ${r.settings.burnIn} echo calls before any of its calls was timed, so that each is measured at its steady state (the warm-up curve, below, shows why).`;
  out.push(`Per variant: ${r.settings.rounds} round(s), round-robin, of ${r.settings.calls} timed sequential calls after ${r.settings.warmup} warm-up calls, pooled; latencies in ms.${burnt}${r.settings.quick ? ' A `--quick` run: fewer calls and samples, so noisier.' : ''}`, '');
  out.push(
    'A shared two-core machine: other work ran beside this run (see the load average), so read the ratios within this run rather than the absolute times; CPU per call (from /proc) moves less with load than latency does.',
    '',
  );
  out.push('## Targets (reported, not asserted)', '', '| target | this run | ÷ supergateway | met |', '|---|---|---:|---|');
  for (const t of r.targets) out.push(`| ${t.target} | ${t.value} | ${x(t.vsSupergateway)} | ${t.met === null ? 'n/a' : t.met ? 'yes' : '**no**'} |`);
  out.push('');
  if (r.floor) out.push('Whether a gateway of Switchyard\'s shape can meet these ratios here at all: "The targets against the floor", below.', '');

  const a = r.latency.find((v) => v.id === 'a')?.summary;
  const e = r.latency.find((v) => v.id === 'e')?.summary;
  if (r.latency.length > 0) out.push(
    '## Echo round trip',
    '',
    'CPU columns: µs of CPU per call (user + system, from /proc) in the proxy processes (worker + sidecar, or the gateway), the server, and the bench\'s SDK client.',
    '',
    '| variant | p50 ÷ (a) | p50 ÷ (e) | p50 | p90 | p99 | calls/s | errors | proxy CPU | server CPU | client CPU |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const v of r.latency) {
    const s = v.summary;
    const cpu = v.cpuUsPerCall;
    const proxy = v.id === 'a' ? '–' : `${cpu.proxy}${cpu.worker !== undefined ? ` (${cpu.worker} + ${cpu.sidecar})` : ''}`;
    out.push(`| (${v.id}) ${v.label} | ${x(ratio(s.p50, a?.p50))} | ${x(ratio(s.p50, e?.p50))} | ${s.p50} | ${s.p90} | ${s.p99} | ${s.callsPerSec} | ${s.errors} | ${proxy} | ${cpu.server} | ${cpu.client} |`);
  }

  if (r.warmUpCurve) out.push('', ...renderWarmUpCurve(r.warmUpCurve));
  if (r.fleet) out.push('', renderFleet(r.fleet));
  if (r.fairness) out.push('', renderFairness(r.fairness));
  if (r.cpuShare) out.push('', renderCpuShare(r.cpuShare));

  if (r.concurrency.length > 0) {
    out.push(
      '',
      '## Concurrency: Switchyard (b) and supergateway --stateful',
      '',
      'Each level twice, each time both gateways driven by the same client: the MCP SDK client (sdk), and a light client over node:http with a keep-alive Agent (light) whose own CPU per call is small, so that it does not cap the calls/s ratio. The target is judged on the light rows.',
      '',
      '| client | gateway | sessions | calls/session | calls/s | ÷ supergateway | p50 | p99 | errors | proxy CPU µs/call | client CPU µs/call | open all (ms) |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
  }
  for (const c of r.concurrency) {
    const client = c.client ?? 'sdk';
    const sg = r.concurrency.find((o) => o.gateway === 'supergateway' && (o.client ?? 'sdk') === client && o.sessions === c.sessions);
    out.push(`| ${client} | ${c.gateway} | ${c.sessions} | ${c.callsPerSession} | ${c.summary.callsPerSec} | ${x(ratio(c.summary.callsPerSec, sg?.summary.callsPerSec))} | ${c.summary.p50} | ${c.summary.p99} | ${c.summary.errors} | ${c.proxyCpuUsPerCall ?? '–'} | ${c.clientCpuUsPerCall ?? '–'} | ${c.openMs} |`);
  }

  const w = r.warmStart;
  if (w) {
    out.push('', '## Warm and cold starts', '', '| what | median (ms) | min | max | samples | errors |', '|---|---:|---:|---:|---:|---:|');
    for (const [what, s] of [['cold: /mcp, 3 demo servers, initialize → first tool result', w.cold], ['warm: the same, from the host\'s pool', w.warm]] as const) {
      out.push(`| ${what} | ${s.median} | ${s.min} | ${s.max} | ${s.samples.length} | ${s.errors} |`);
    }
    if (w.fleet) out.push('', `Opening ${w.fleet.sessions} sessions on /servers/everything/mcp: cold ${w.fleet.coldMs} ms (${w.fleet.coldErrors} errors), warm (pool sized ${w.fleet.sessions}) ${w.fleet.warmMs} ms (${w.fleet.warmErrors} errors).`);
  }

  if (r.floor) out.push('', ...renderFloor(r.floor));

  const sc = r.scale;
  if (sc) {
    out.push('', '## Scale curve', '', 'Each row says what its sessions are: legacy sessions each have their own server process (server-everything, or the SDK-free raw echo fixture, light enough for 256 of them, behind Switchyard and behind supergateway --stateful alike, the two measured in turns, A B B A, and each side’s turns pooled); modern clients are stateless requests of one agent, all served by the one server-everything instance the host keeps for it. Payload rows: one legacy session on server-everything.', '');
    out.push('| sweep | what | sessions | payload | calls | p50 | p99 | calls/s | ÷ supergateway | proxy CPU µs/call (worker + sidecar) | client CPU µs/call | errors |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const p of sc.points) {
      const sg = p.gateway === 'switchyard' ? sc.points.find((o) => o.gateway === 'supergateway' && o.workload === p.workload && o.sessions === p.sessions && o.payloadBytes === p.payloadBytes) : undefined;
      out.push(`| ${p.sweep} | ${pointLabel(p)} | ${p.sessions} | ${size(p.payloadBytes)} | ${p.calls} | ${p.p50} | ${p.p99} | ${p.callsPerSec} | ${x(ratio(p.callsPerSec, sg?.callsPerSec))} | ${p.cpuUsPerCall ?? '–'}${p.cpuUsEach !== undefined ? ` (${p.cpuUsEach.join(' + ')})` : ''} | ${p.clientCpuUsPerCall ?? '–'} | ${p.errors} |`);
    }
    if (sc.skipped.length > 0) out.push('', 'Not run (too little memory available beside the reserve kept for the rest of the machine):', '', ...sc.skipped.map((s) => `- ${s}`));
    out.push('', `Chart: bench-results/${r.label}-scale.svg.`);
  }

  if (r.coldStart.length > 0) out.push('', '## Cold start (initialize → first tool result, spawn included)', '', '| kind | median (ms) | min | max | samples | errors |', '|---|---:|---:|---:|---:|---:|');
  for (const c of r.coldStart) out.push(`| ${c.kind} | ${c.median} | ${c.min} | ${c.max} | ${c.samples.length} | ${c.errors} |`);

  const mem = r.memory;
  if (mem !== null) {
    out.push('', '## Memory (VmRSS)', '', '| what | worker (deno) | sidecar (node, dist/sidecar.js) |', '|---|---:|---:|');
    out.push(`| linked and idle: just linked, no session yet | ${kb(mem.fresh.workerKb)} | ${kb(mem.fresh.sidecarKb)} |`);
    out.push(`| 0.5 s after the warm-up's sessions closed (heap not yet shrunk, warm pool filled) | ${kb(mem.idle.workerKb)} | ${kb(mem.idle.sidecarKb)} |`);
    if (mem.beforePeak) out.push(`| before ${mem.peakSessions} sessions | ${kb(mem.beforePeak.workerKb)} | ${kb(mem.beforePeak.sidecarKb)} |`);
    if (mem.atPeak) out.push(`| with ${mem.peakSessions} sessions | ${kb(mem.atPeak.workerKb)} | ${kb(mem.atPeak.sidecarKb)} |`);
    out.push(`| per session | ${kb(mem.perSessionKb.worker)} | ${kb(mem.perSessionKb.sidecar)} |`);
    out.push('', `A server-everything process under Switchyard: ${kb(mem.serverKb)} (median at peak); spawned by the direct stdio client: ${kb(mem.directServerKb)}.`);
  }

  const link = r.linkCost;
  if (link !== null) {
    out.push('', '## Link cost per echo (worker ↔ sidecar WebSocket)', '');
    out.push(`${link.framesPerCall} frames, ${link.bytesPerCall} bytes of payload, ${link.wireBytesPerCall} bytes with WebSocket headers ` +
      `(to sidecar: ${link.toSidecar.frames} frames / ${link.toSidecar.bytes} B; to worker: ${link.toWorker.frames} frames / ${link.toWorker.bytes} B; ${link.calls} calls).`);
  }

  if (r.size !== null) {
    out.push('', '## Worker bundle', '', `dist/worker.js: ${kb(r.size.minifiedBytes / 1024)} minified, ${kb(r.size.gzippedBytes / 1024)} gzipped. ` +
      `Largest parts: ${r.size.topInputs.map((i) => `${i.path} ${kb(i.bytes / 1024)}`).join(', ')}.`);
  }
  if (r.workerStart) {
    const st = r.workerStart;
    out.push('', '## Worker cold start (fresh Deno process, median of ' + st.runs + ' runs each, in turns)', '', '| bundle | import | first answer | total |', '|---|---:|---:|---:|');
    out.push(`| dist/worker.js (build from config, then server/discover) | ${st.worker.importMs} ms | ${st.worker.firstAnswerMs} ms | ${st.worker.totalMs} ms |`);
    out.push(`| minimal Hono worker (same request, fixed answer) | ${st.floor.importMs} ms | ${st.floor.firstAnswerMs} ms | ${st.floor.totalMs} ms |`);
  }

  if (r.hotPath !== null) {
    const h = r.hotPath;
    out.push('', '## Hot path, in process (µs per round trip, best of several rounds)', '', '| path | CPU | wall best | wall median |', '|---|---:|---:|---:|');
    out.push(`| link + sidecar bridge (node) | ${h.link.cpuMinUs} | ${h.link.minUs} | ${h.link.medianUs} |`);
    out.push(`| PassthroughSession + LegacyHttpEndpoint (deno) | ${h.passthrough.cpuMinUs} | ${h.passthrough.minUs} | ${h.passthrough.medianUs} |`);
    if (h.bodyRead) out.push('', `POST body under Deno.serve (best round): SDK stream reader ${h.bodyRead.sdkReaderUs} µs, \`Request.text()\` ${h.bodyRead.requestTextUs} µs.`);
  }


  if (before !== undefined) out.push('', ...renderComparison(before, r));
  if (r.failures.length > 0) {
    out.push('', '## Failed sections', '');
    for (const f of r.failures) out.push(`- ${f.section}: ${f.error.split('\n')[0]}`);
  }
  return out.join('\n') + '\n';
}

/** Before/after for the numbers the hot-path work is about. */
function renderComparison(before: BenchResults, after: BenchResults): string[] {
  const out = [
    `## Before (${before.label}) → after (${after.label})`,
    '',
    'Rows for code that did not change between the two runs — (a), (e), (f), the link micro-benchmark — show this machine\'s run-to-run noise; a change smaller than theirs is not resolved by these end-to-end numbers.',
    '',
    '| measure | before | after | after ÷ before |',
    '|---|---:|---:|---:|',
  ];
  const row = (what: string, b: number | undefined, a: number | undefined) => out.push(`| ${what} | ${b ?? '–'} | ${a ?? '–'} | ${x(ratio(a, b))} |`);
  for (const v of after.latency) {
    const old = before.latency.find((o) => o.id === v.id);
    row(`(${v.id}) p50 ms`, old?.summary.p50, v.summary.p50);
    row(`(${v.id}) p99 ms`, old?.summary.p99, v.summary.p99);
    for (const role of ['worker', 'sidecar']) {
      if (v.cpuUsPerCall[role] !== undefined) row(`(${v.id}) ${role} CPU µs/call`, old?.cpuUsPerCall?.[role], v.cpuUsPerCall[role]);
    }
  }
  for (const c of after.concurrency) {
    const old = before.concurrency.find((o) => o.sessions === c.sessions && (o.gateway ?? 'switchyard') === c.gateway && (o.client ?? 'sdk') === (c.client ?? 'sdk'))?.summary;
    row(`${c.gateway} (${c.client ?? 'sdk'} client) ${c.sessions} sessions calls/s`, old?.callsPerSec, c.summary.callsPerSec);
  }
  row('hot path: link + bridge CPU µs', before.hotPath?.link.cpuMinUs, after.hotPath?.link.cpuMinUs);
  row('hot path: passthrough CPU µs', before.hotPath?.passthrough.cpuMinUs, after.hotPath?.passthrough.cpuMinUs);
  row('link bytes per echo', before.linkCost?.bytesPerCall, after.linkCost?.bytesPerCall);
  row('sidecar KiB per session', before.memory?.perSessionKb.sidecar ?? undefined, after.memory?.perSessionKb.sidecar ?? undefined);
  return out;
}

/** Writes `<label>.json`, `<label>.md` and `latest.md` under bench-results/; returns the paths. */
export function writeResults(r: BenchResults, markdown: string): { json: string; md: string } {
  const dir = join(REPO, 'bench-results');
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${r.label}.json`);
  const md = join(dir, `${r.label}.md`);
  writeFileSync(json, JSON.stringify(r, null, 2) + '\n');
  writeFileSync(md, markdown);
  writeFileSync(join(dir, 'latest.md'), markdown);
  if (r.scale !== null) writeFileSync(join(dir, `${r.label}-scale.svg`), renderScaleSvg(r.scale, `Switchyard scale curve — ${r.label}`));
  return { json, md };
}

function x(value: number | null): string {
  return value === null ? '–' : `${value}×`;
}

function kb(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  return value >= 1024 ? `${(value / 1024).toFixed(1)} MiB` : `${Math.round(value)} KiB`;
}
