/**
 * The scale curve as an SVG: four small line charts (latency and CPU per call, against sessions
 * and against payload size), the x axis categorical (the measured levels, evenly spaced), the y
 * axis linear from zero. Plain SVG text, no dependency, readable in any browser.
 *
 * @module
 */
import type { ScalePoint, ScaleResult } from './scale.ts';
import { size } from './scale.ts';

interface Series {
  name: string;
  color: string;
  values: Array<number | null>;
}

const W = 380;
const H = 240;
const PAD = { left: 56, right: 16, top: 34, bottom: 40 };

export function renderScaleSvg(result: ScaleResult, title: string): string {
  const bySweep = (sweep: ScalePoint['sweep']) => result.points.filter((p) => p.sweep === sweep);
  const sessions = bySweep('sessions');
  const payload = bySweep('payload');
  const latency = (points: ScalePoint[]): Series[] => [
    { name: 'p50', color: '#1f77b4', values: points.map((p) => p.p50) },
    { name: 'p99', color: '#d62728', values: points.map((p) => p.p99) },
  ];
  const cpu = (points: ScalePoint[]): Series[] => [{ name: 'worker + sidecar', color: '#2ca02c', values: points.map((p) => p.cpuUsPerCall) }];
  const panels = [
    panel('Latency vs sessions (1 KB)', 'ms', sessions.map((p) => String(p.sessions)), latency(sessions)),
    panel('CPU per call vs sessions (1 KB)', 'µs', sessions.map((p) => String(p.sessions)), cpu(sessions)),
    panel('Latency vs payload (1 session)', 'ms', payload.map((p) => size(p.payloadBytes)), latency(payload)),
    panel('CPU per call vs payload (1 session)', 'µs', payload.map((p) => size(p.payloadBytes)), cpu(payload)),
  ];
  const placed = panels.map((body, i) => `<g transform="translate(${(i % 2) * W},${30 + Math.floor(i / 2) * H})">${body}</g>`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${2 * H + 30}" font-family="sans-serif" font-size="11">`,
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
    out.push(`<rect x="${PAD.left + 8 + n * 110}" y="${PAD.top - 10}" width="10" height="3" fill="${s.color}"/><text x="${PAD.left + 22 + n * 110}" y="${PAD.top - 6}">${escape(s.name)}</text>`);
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
