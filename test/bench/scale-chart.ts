/**
 * The scale curve as an SVG: six small line charts (p50, p99, CPU per call and calls/s against
 * sessions, one line per row kind; latency and CPU per call against payload size), the x axis categorical (the measured levels, evenly spaced), the y
 * axis linear from zero. Plain SVG text, no dependency, readable in any browser.
 *
 * @module
 */
import type { ScalePoint, ScaleResult } from './scale.ts';
import { size } from './scale.ts';
import type { ScaleGateway, ScaleWorkload } from './scale-workloads.ts';

interface Series {
  name: string;
  color: string;
  values: Array<number | null>;
}

const W = 380;
const H = 240;
const PAD = { left: 56, right: 16, top: 46, bottom: 40 };

/** One line per row kind (gateway and workload) of the sessions sweep. */
const KINDS: Array<{ gateway: ScaleGateway; workload: ScaleWorkload; name: string; color: string }> = [
  { gateway: 'switchyard', workload: 'legacy-everything', name: 'Switchyard, everything', color: '#1f77b4' },
  { gateway: 'switchyard', workload: 'legacy-echo', name: 'Switchyard, raw echo', color: '#2ca02c' },
  { gateway: 'supergateway', workload: 'legacy-echo', name: 'supergateway, raw echo', color: '#ff7f0e' },
  { gateway: 'switchyard', workload: 'modern-shared', name: 'Switchyard, modern', color: '#9467bd' },
];

export function renderScaleSvg(result: ScaleResult, title: string): string {
  const sessions = result.points.filter((p) => p.sweep === 'sessions');
  const payload = result.points.filter((p) => p.sweep === 'payload');
  const levels = [...new Set(sessions.map((p) => p.sessions))].sort((a, b) => a - b);
  // A level a row kind did not run at (the memory guard) is a gap in its line.
  const bySessions = (of: (p: ScalePoint) => number | null): Series[] =>
    KINDS.filter((k) => sessions.some((p) => p.gateway === k.gateway && p.workload === k.workload)).map((k) => ({
      name: k.name,
      color: k.color,
      values: levels.map((n) => {
        const point = sessions.find((p) => p.gateway === k.gateway && p.workload === k.workload && p.sessions === n);
        return point === undefined ? null : of(point);
      }),
    }));
  const latency = (points: ScalePoint[]): Series[] => [
    { name: 'p50', color: '#1f77b4', values: points.map((p) => p.p50) },
    { name: 'p99', color: '#d62728', values: points.map((p) => p.p99) },
  ];
  const labels = levels.map(String);
  const panels = [
    panel('p50 latency vs sessions (1 KB)', 'ms', labels, bySessions((p) => p.p50)),
    panel('p99 latency vs sessions (1 KB)', 'ms', labels, bySessions((p) => p.p99)),
    panel('Proxy CPU per call vs sessions (1 KB)', 'µs', labels, bySessions((p) => p.cpuUsPerCall)),
    panel('Calls/s vs sessions (1 KB)', 'calls/s', labels, bySessions((p) => p.callsPerSec)),
    panel('Latency vs payload (1 session, everything)', 'ms', payload.map((p) => size(p.payloadBytes)), latency(payload)),
    panel('CPU per call vs payload (1 session, everything)', 'µs', payload.map((p) => size(p.payloadBytes)), [{ name: 'worker + sidecar', color: '#2ca02c', values: payload.map((p) => p.cpuUsPerCall) }]),
  ];
  const rows = Math.ceil(panels.length / 2);
  const placed = panels.map((body, i) => `<g transform="translate(${(i % 2) * W},${30 + Math.floor(i / 2) * H})">${body}</g>`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${rows * H + 30}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${W}" y="20" text-anchor="middle" font-size="14">${escape(title)}</text>`,
    ...placed,
    '</svg>',
    '',
  ].join('\n');
}

function panel(title: string, unit: string, labels: string[], series: Series[]): string {
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v))));
  const top = niceCeiling(max);
  const x = (i: number) => PAD.left + (labels.length <= 1 ? plotW / 2 : (i * plotW) / (labels.length - 1));
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const out = [`<text x="${W / 2}" y="16" text-anchor="middle" font-weight="bold">${escape(title)}</text>`];
  for (let k = 0; k <= 4; k++) {
    const v = (top * k) / 4;
    out.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${PAD.left - 6}" y="${y(v) + 4}" text-anchor="end">${format(v)}</text>`);
  }
  out.push(`<text x="12" y="${PAD.top + plotH / 2}" transform="rotate(-90 12 ${PAD.top + plotH / 2})" text-anchor="middle">${unit}</text>`);
  labels.forEach((label, i) => out.push(`<text x="${x(i)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${escape(label)}</text>`));
  series.forEach((s, n) => {
    const pts = s.values.map((v, i) => (v === null || !Number.isFinite(v) ? null : [x(i), y(v)] as const)).filter((p): p is readonly [number, number] => p !== null);
    if (pts.length > 1) out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(' ')}"/>`);
    for (const [a, b] of pts) out.push(`<circle cx="${a.toFixed(1)}" cy="${b.toFixed(1)}" r="3" fill="${s.color}"/>`);
    const lx = PAD.left + 8 + (n % 2) * 150;
    const ly = PAD.top - 14 + Math.floor(n / 2) * 12;
    out.push(`<rect x="${lx}" y="${ly - 4}" width="10" height="3" fill="${s.color}"/><text x="${lx + 14}" y="${ly}">${escape(s.name)}</text>`);
  });
  return out.join('');
}

function niceCeiling(v: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 2.5, 5, 10]) if (v <= step * magnitude) return step * magnitude;
  return 10 * magnitude;
}

function format(v: number): string {
  return v >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10);
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
