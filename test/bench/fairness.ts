/**
 * The `fairness` section of `npm run bench`: one agent floods a host's link with large answers
 * while another agent's sequential echo crosses the same link (`link-fairness.ts`, run once per
 * scenario, each in a process of its own). Reported: the echo's latency alone and under the
 * flood, the flood's throughput, and the processes' peak RSS, per scenario:
 * - loopback: where a flood that large saturates the machine's CPU, not the link; with 32
 *   sessions too, more large answers at once than the host reads at once
 *   (`sidecar/process/large-line-gate.ts`): its peak RSS is the row to watch;
 * - a 100 ms round trip (a relay that delays the link): the window has to grow to fill it;
 * - a link shaped to 100 Mbit/s, with and without that round trip, many sessions of 200 KB
 *   answers or a few of 15 MB: where the link, not the CPU, is the bottleneck. These need root,
 *   `unshare` and tc with htb (a network namespace of their own); without them they are skipped,
 *   and the report says why.
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { FairnessRun } from './link-fairness.ts';
import { REPO, type ProcessRegistry } from './processes.ts';

export interface FairnessScenario {
  name: string;
  sessions: number;
  bytes: number;
  /** `--link-rate`, e.g. 100mbit: needs a network namespace of its own. */
  rate?: string;
  delayMs?: number;
}

export interface FairnessResult extends FairnessScenario {
  run: FairnessRun | null;
  /** Why the scenario did not run, or failed. */
  skipped?: string;
}

export const FAIRNESS_SCENARIOS: readonly FairnessScenario[] = [
  { name: 'loopback', sessions: 16, bytes: 15_000_000 },
  { name: 'loopback, 32 sessions', sessions: 32, bytes: 15_000_000 },
  { name: '+100 ms round trip', sessions: 4, bytes: 15_000_000, delayMs: 100 },
  { name: '100 Mbit/s, many answers of 200 KB', sessions: 30, bytes: 200_000, rate: '100mbit' },
  { name: '100 Mbit/s', sessions: 16, bytes: 15_000_000, rate: '100mbit' },
  { name: '100 Mbit/s, +100 ms round trip', sessions: 4, bytes: 15_000_000, rate: '100mbit', delayMs: 100 },
];

/** The prefix of the line `link-fairness.ts --json` ends with. */
const FAIRNESS_JSON = 'FAIRNESS_JSON';

/** Why a shaped link cannot be made here, or null when it can: a namespace of its own with htb on its loopback. */
export function shapingUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (a network namespace of its own, shaped with tc)';
  const probe = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && tc qdisc add dev lo root handle 1: htb default 10'], { encoding: 'utf8' });
  if (probe.error !== undefined) return `unshare is not available: ${probe.error.message}`;
  if (probe.status !== 0) return `tc could not shape a namespace's loopback: ${(probe.stderr || probe.stdout).trim().split('\n').at(-1)}`;
  return null;
}

export async function measureFairness(registry: ProcessRegistry, options: { seconds: number; scenarios?: readonly FairnessScenario[]; log: (line: string) => void }): Promise<FairnessResult[]> {
  const unshaped = shapingUnavailable();
  const results: FairnessResult[] = [];
  for (const scenario of options.scenarios ?? FAIRNESS_SCENARIOS) {
    if (scenario.rate !== undefined && unshaped !== null) {
      results.push({ ...scenario, run: null, skipped: unshaped });
      options.log(`  ${scenario.name}: skipped, ${unshaped}`);
      continue;
    }
    const args = ['--import', 'tsx', join(REPO, 'test', 'bench', 'link-fairness.ts'), '--json', '--sessions', String(scenario.sessions), '--bytes', String(scenario.bytes), '--seconds', String(options.seconds)];
    if (scenario.rate !== undefined) args.push('--link-rate', scenario.rate);
    if (scenario.delayMs !== undefined) args.push('--link-delay', String(scenario.delayMs));
    // In the registry, so that a bench stopped midway stops it too (its own cleanup ends its stack).
    const child = registry.spawn(`link-fairness ${scenario.name}`, process.execPath, args);
    const code = await child.exited;
    const [stdout, stderr] = [child.stdout(), child.stderr()];
    const line = stdout.split('\n').find((l) => l.startsWith(`${FAIRNESS_JSON} `));
    if (code !== 0 || line === undefined) {
      const why = `link-fairness.ts exited ${code}: ${(stderr || stdout).trim().split('\n').at(-1) ?? ''}`;
      results.push({ ...scenario, run: null, skipped: why });
      options.log(`  ${scenario.name}: FAILED, ${why}`);
      continue;
    }
    const fairness = JSON.parse(line.slice(FAIRNESS_JSON.length + 1)) as FairnessRun;
    results.push({ ...scenario, run: fairness });
    options.log(`  ${scenario.name}: bob p50 ${fairness.bobAlone.p50.toFixed(1)} ms alone, ${fairness.bobUnderFlood.p50.toFixed(1)} under the flood (max ${fairness.bobUnderFlood.max.toFixed(0)}); alice ${fairness.aliceMBps.toFixed(1)} MB/s`);
  }
  return results;
}

export function renderFairness(results: readonly FairnessResult[]): string {
  if (results.length === 0) return '';
  const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : '–');
  const rows = results.map((r) => {
    const link = `${r.rate ?? 'loopback'}${r.delayMs !== undefined ? `, +${r.delayMs} ms` : ''}`;
    const flood = `${r.sessions} × ${(r.bytes / 1e6).toFixed(r.bytes < 1e6 ? 1 : 0)} MB`;
    if (r.run === null) return `| ${r.name} | ${link} | ${flood} | skipped: ${r.skipped ?? '?'} | | | | |`;
    const { bobAlone: alone, bobUnderFlood: loaded } = r.run;
    return `| ${r.name} | ${link} | ${flood} | ${ms(alone.p50)} | ${ms(loaded.p50)} / ${ms(loaded.p99)} / ${ms(loaded.max)} | ${loaded.errors} | ${r.run.aliceMBps.toFixed(1)} (${r.run.aliceErrors} errors) | ${r.run.peakRssMiB.worker.toFixed(0)} / ${r.run.peakRssMiB.sidecar.toFixed(0)} |`;
  });
  return [
    '## Link fairness: one agent floods a host\'s link, another\'s echo crosses it',
    '',
    'Alice\'s legacy sessions read large answers as fast as the link carries them; Bob\'s sequential echo on the same host (`link-fairness.ts`).',
    '',
    '| scenario | link | alice\'s flood | bob p50 ms alone | bob under flood ms p50 / p99 / max | bob errors | alice MB/s | peak RSS MiB worker / sidecar |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
