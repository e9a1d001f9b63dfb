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
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ColdStartResult } from './cold-start.ts';
import type { ConcurrencyResult } from './concurrency.ts';
import type { VariantResult } from './latency.ts';
import type { LinkCostResult } from './link-cost.ts';
import type { MemoryResult } from './memory.ts';
import { REPO } from './processes.ts';
import type { SizeResult } from './size.ts';
import type { HotPathResults } from './hot-path-run.ts';
import { ratio } from './stats.ts';

export interface BenchResults {
  label: string;
  startedAt: string;
  durationSec: number;
  /** Load averages say how much else ran on the machine: the end-to-end numbers move with it. */
  machine: { cpus: number; cpuModel: string; node: string; deno: string; loadavgAtStart: number[]; loadavgAtEnd?: number[] };
  settings: { calls: number; warmup: number; rounds: number; levels: number[]; concurrencyCalls: number; coldSamples: number };
  latency: VariantResult[];
  concurrency: ConcurrencyResult[];
  coldStart: ColdStartResult[];
  memory: MemoryResult | null;
  linkCost: LinkCostResult | null;
  size: SizeResult | null;
  hotPath: HotPathResults | null;
  targets: Target[];
  /** Sections that failed, with why; the rest of the run still reports. */
  failures: Array<{ section: string; error: string }>;
}

export interface Target {
  target: string;
  value: string;
  met: boolean | null;
}

/** The issue's four targets, evaluated on this run's numbers (null: not measured). */
export function evaluateTargets(r: Omit<BenchResults, 'targets'>): Target[] {
  const p50 = (id: string) => r.latency.find((v) => v.id === id)?.summary.p50;
  const cold = (kind: string) => r.coldStart.find((c) => c.kind === kind)?.median;
  const c64 = r.concurrency.find((c) => c.sessions === 64);
  const b = p50('b');
  const e = p50('e');
  const ordinary = cold('ordinary');
  const contained = cold('contained');
  const perSession = r.memory?.perSessionKb.sidecar;
  const server = r.memory?.serverKb;
  const known = (...v: Array<number | null | undefined>) => v.every((x) => x !== undefined && x !== null && Number.isFinite(x));
  return [
    { target: '(b) p50 ≤ supergateway p50', value: `${b} ms vs ${e} ms`, met: known(b, e) ? b! <= e! : null },
    {
      target: 'contained cold start ≤ ordinary + 20 ms',
      value: `${contained} ms vs ${ordinary} ms (${known(contained, ordinary) ? `${contained! - ordinary! >= 0 ? '+' : ''}${(contained! - ordinary!).toFixed(1)}` : '?'} ms)`,
      met: known(contained, ordinary) ? contained! <= ordinary! + 20 : null,
    },
    { target: '64 sessions, zero errors', value: c64 === undefined ? 'not run' : `${c64.summary.errors} errors`, met: c64 === undefined ? null : c64.summary.errors === 0 },
    { target: 'per-session sidecar memory ≪ a server process', value: `${kb(perSession)} vs ${kb(server)}`, met: known(perSession, server) ? perSession! * 4 <= server! : null },
  ];
}

export function renderMarkdown(r: BenchResults, before?: BenchResults): string {
  const out: string[] = [];
  const m = r.machine;
  out.push(`# Switchyard benchmark — ${r.label}`, '');
  out.push(`${r.startedAt}, ${r.durationSec} s. ${m.cpus} × ${m.cpuModel}; node ${m.node}, deno ${m.deno}; load average ${m.loadavgAtStart.join(' ')} at start${m.loadavgAtEnd ? `, ${m.loadavgAtEnd.join(' ')} at end` : ''}.`);
  out.push(`Per variant: ${r.settings.rounds} round(s), round-robin, of ${r.settings.calls} timed sequential calls after ${r.settings.warmup} warm-up calls, pooled; latencies in ms.`, '');

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

  if (r.concurrency.length > 0) out.push('', '## Concurrency against (b)', '', '| sessions | calls/session | calls/s | p50 | p99 | errors | open all (ms) |', '|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of r.concurrency) out.push(`| ${c.sessions} | ${c.callsPerSession} | ${c.summary.callsPerSec} | ${c.summary.p50} | ${c.summary.p99} | ${c.summary.errors} | ${c.openMs} |`);

  if (r.coldStart.length > 0) out.push('', '## Cold start (initialize → first tool result, spawn included)', '', '| kind | median (ms) | min | max | samples | errors |', '|---|---:|---:|---:|---:|---:|');
  for (const c of r.coldStart) out.push(`| ${c.kind} | ${c.median} | ${c.min} | ${c.max} | ${c.samples.length} | ${c.errors} |`);

  const mem = r.memory;
  if (mem !== null) {
    out.push('', '## Memory (VmRSS)', '', '| what | worker (deno) | sidecar (node + tsx) |', '|---|---:|---:|');
    out.push(`| just linked | ${kb(mem.fresh.workerKb)} | ${kb(mem.fresh.sidecarKb)} |`);
    out.push(`| idle after warm-up | ${kb(mem.idle.workerKb)} | ${kb(mem.idle.sidecarKb)} |`);
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

  if (r.hotPath !== null) {
    const h = r.hotPath;
    out.push('', '## Hot path, in process (µs per round trip, best of several rounds)', '', '| path | CPU | wall best | wall median |', '|---|---:|---:|---:|');
    out.push(`| link + sidecar bridge (node) | ${h.link.cpuMinUs} | ${h.link.minUs} | ${h.link.medianUs} |`);
    out.push(`| PassthroughSession + SDK HTTP transport (deno) | ${h.passthrough.cpuMinUs} | ${h.passthrough.minUs} | ${h.passthrough.medianUs} |`);
    if (h.bodyRead) out.push('', `POST body under Deno.serve (best round): SDK stream reader ${h.bodyRead.sdkReaderUs} µs, \`Request.text()\` ${h.bodyRead.requestTextUs} µs.`);
  }

  out.push('', '## Targets (reported, not asserted)', '', '| target | this run | met |', '|---|---|---|');
  for (const t of r.targets) out.push(`| ${t.target} | ${t.value} | ${t.met === null ? 'n/a' : t.met ? 'yes' : '**no**'} |`);

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
    const old = before.concurrency.find((o) => o.sessions === c.sessions)?.summary;
    row(`${c.sessions} sessions calls/s`, old?.callsPerSec, c.summary.callsPerSec);
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
  return { json, md };
}

function x(value: number | null): string {
  return value === null ? '–' : `${value}×`;
}

function kb(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  return value >= 1024 ? `${(value / 1024).toFixed(1)} MiB` : `${Math.round(value)} KiB`;
}
