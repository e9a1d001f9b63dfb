/**
 * The warm-up curve: what a freshly started gateway costs per call as it serves its first calls,
 * block by block, for Switchyard (a legacy session, and modern stateless requests, each on a
 * stack of its own) and supergateway, all fresh processes, one session, sequential echo calls.
 * V8 runs new code in its baseline tiers and optimizes what stays hot, so the first blocks cost
 * more than the later ones; how much more, and for how long, is why every other section burns
 * each gateway in first (`burn-in.ts`), and what an agent sees right after a restart.
 *
 * @module
 */
import { connectHttp, echoLoop, modernAgent, type Agent } from './client.ts';
import { startSupergateway } from './gateways.ts';
import { cpuMs, type ProcessRegistry } from './processes.ts';
import { startStack, TOKENS } from './stack.ts';
import { ratio, summarize } from './stats.ts';

export type CurveSide = 'switchyard-legacy' | 'switchyard-modern' | 'supergateway';

export interface CurveBlock {
  /** Calls this side had served when the block began. */
  from: number;
  calls: number;
  /** CPU of the proxy processes (worker + sidecar, or supergateway) per call, µs. */
  proxyCpuUsPerCall: number;
  p50: number;
  errors: number;
}

export interface WarmUpCurve {
  callsPerBlock: number;
  sides: Array<{ side: CurveSide; blocks: CurveBlock[] }>;
}

export const CURVE_LABELS: Record<CurveSide, string> = {
  'switchyard-legacy': 'Switchyard /servers/everything/mcp, legacy session (b)',
  'switchyard-modern': 'Switchyard /servers/everything/mcp, modern requests (m)',
  supergateway: 'supergateway --stateful (e)',
};

export async function measureWarmUpCurve(registry: ProcessRegistry, options: { blocks: number; callsPerBlock: number; log(line: string): void }): Promise<WarmUpCurve> {
  const sides: WarmUpCurve['sides'] = [];
  for (const side of Object.keys(CURVE_LABELS) as CurveSide[]) {
    const { agent, proxies, settled, stop } = await fresh(registry, side);
    const blocks: CurveBlock[] = [];
    try {
      for (let b = 0; b < options.blocks; b++) {
        // The host refills its warm pool after the session opens: that spawn is not a call's cost.
        await settled();
        const before = proxies.reduce((sum, pid) => sum + cpuMs(pid)!, 0);
        const timed = await echoLoop(agent, 'echo', options.callsPerBlock, 0, `curve ${side} ${b}`);
        const after = proxies.reduce((sum, pid) => sum + cpuMs(pid)!, 0);
        const summary = summarize(timed);
        blocks.push({ from: b * options.callsPerBlock, calls: options.callsPerBlock, proxyCpuUsPerCall: Math.round(((after - before) * 1000) / options.callsPerBlock), p50: summary.p50, errors: summary.errors });
      }
    } finally {
      await agent.close();
      await stop();
    }
    options.log(`  ${CURVE_LABELS[side]}: ${blocks.map((b) => `${b.proxyCpuUsPerCall} µs`).join(', ')} per call, by block of ${options.callsPerBlock}`);
    sides.push({ side, blocks });
  }
  return { callsPerBlock: options.callsPerBlock, sides };
}

/** A fresh gateway for `side` (nothing burnt in: the curve is the burn-in), one agent on it. */
async function fresh(registry: ProcessRegistry, side: CurveSide): Promise<{ agent: Agent; proxies: number[]; settled(): Promise<void>; stop(): Promise<void> }> {
  if (side === 'supergateway') {
    const gateway = await startSupergateway(registry, 0);
    return { agent: await connectHttp(gateway.url), proxies: [gateway.process.pid], settled: async () => {}, stop: () => registry.stop(gateway.process) };
  }
  const stack = await startStack(registry);
  const url = `${stack.url}/servers/everything/mcp`;
  const agent = side === 'switchyard-modern' ? modernAgent(url, TOKENS.modern) : await connectHttp(url, TOKENS.plain);
  return {
    agent,
    proxies: [stack.worker.pid, stack.sidecar.pid],
    settled: stack.sparesSettled,
    stop: async () => {
      await registry.stop(stack.sidecar);
      await registry.stop(stack.worker);
      stack.dispose();
    },
  };
}

/** The curve as a markdown section: proxy CPU per call (and p50) by block, side by side. */
export function renderWarmUpCurve(curve: WarmUpCurve): string[] {
  const blocks = curve.sides[0]?.blocks ?? [];
  const out = [
    '## Warm-up curve: fresh processes, calls 1 to ' + blocks.length * curve.callsPerBlock,
    '',
    `Each side freshly started, nothing burnt in, one session of sequential echo calls; per block of ${curve.callsPerBlock} calls, the proxy processes' CPU per call in µs (p50 in ms). Every other section measures each gateway after its burn-in, that is, at the right-hand end of this table.`,
    '',
    `| side | ${blocks.map((b) => `${b.from + 1}–${b.from + b.calls}`).join(' | ')} |`,
    `|---|${blocks.map(() => '---:').join('|')}|`,
  ];
  for (const { side, blocks: row } of curve.sides) out.push(`| ${CURVE_LABELS[side]} | ${row.map((b) => `${b.proxyCpuUsPerCall} (${b.p50})${b.errors > 0 ? `, ${b.errors} errors` : ''}`).join(' | ')} |`);
  const theirs = curve.sides.find((s) => s.side === 'supergateway')?.blocks;
  const ends = curve.sides.map(({ side, blocks: row }) => {
    const first = row[0]!.proxyCpuUsPerCall;
    const last = row[row.length - 1]!.proxyCpuUsPerCall;
    const vs = side === 'supergateway' || theirs === undefined ? '' : `, ÷ supergateway ${ratio(first, theirs[0]!.proxyCpuUsPerCall)}× first and ${ratio(last, theirs[theirs.length - 1]!.proxyCpuUsPerCall)}× last`;
    return `${CURVE_LABELS[side]}: first block ÷ last ${ratio(first, last)}×${vs}`;
  });
  out.push('', ends.join('; ') + '.');
  return out;
}

