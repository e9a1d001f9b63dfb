/**
 * Fleet: 1,000 simulated hosts (the real link client, each with its own Ed25519 key, all in this
 * process: `test/support/simulated-hosts.ts`) dial one worker at once; then a modern tools/call to
 * every host's server, `rounds` times round, `concurrency` in flight. Run twice with the same
 * config: the Workers bundle under workerd (a `HostLink` Durable Object per host, each call
 * routed by the edge isolate to its host's object), and the Deno worker (one process, one
 * in-memory registry). Locally every object shares one workerd process and its threads; on
 * Cloudflare they spread over machines, so these workerd figures are the single-machine floor.
 *
 * Figures: link-open time per host from the moment all dial (p50, p95, max) and until all are
 * linked; calls/s; misrouted (answered by another host) and lost (no result) calls, both of which
 * must be 0; the worker's RSS once linked and after the calls (workerd: the runtime process and
 * its children; Deno: the worker process), and this process's RSS, which holds the 1,000 clients.
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDenoWorker } from '../../cli/deno-worker-process.ts';
import { writeWorkerConfig } from '../support/configs.ts';
import { callFleet, createFleet, linkFleet } from '../support/simulated-hosts.ts';
import { startWorkerdWorker } from '../support/workerd-worker.ts';
import { descendants, rssKb, type ProcessRegistry } from './processes.ts';
import { percentile, round } from './stats.ts';

export interface FleetResult {
  runtime: 'workerd' | 'deno';
  hosts: number;
  linkOpenMs: { p50: number; p95: number; max: number; allLinked: number };
  calls: number;
  misrouted: number;
  lost: number;
  callsPerSecond: number;
  workerRssMb: { linked: number | null; afterCalls: number | null };
  clientsRssMb: number;
  problems: string[];
}

export interface FleetOptions {
  hosts: number;
  rounds: number;
  concurrency: number;
}

const mb = (kb: number | null) => (kb === null ? null : round(kb / 1024, 1));

/** RSS of `pid` and every descendant (workerd runs as miniflare's child of this process). */
function treeKb(pids: readonly number[]): number | null {
  const all = pids.flatMap((pid) => [pid, ...descendants(pid)]);
  const sizes = all.map(rssKb).filter((v): v is number => v !== null);
  return sizes.length === 0 ? null : sizes.reduce((a, b) => a + b, 0);
}

/** workerd processes this process started (through Miniflare). */
function workerdPids(): number[] {
  return descendants(process.pid).filter((pid) => {
    try {
      return /workerd/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
}

export async function measureFleet(registry: ProcessRegistry, options: FleetOptions, log: (line: string) => void): Promise<FleetResult[]> {
  const fleet = createFleet(options.hosts);
  const results: FleetResult[] = [];
  const run = async (runtime: FleetResult['runtime'], url: string, workerPids: () => number[]) => {
    const linked = await linkFleet(fleet, url, { timeoutMs: 300_000 });
    try {
      const sorted = [...linked.linkOpenMs].sort((a, b) => a - b);
      const linkedKb = treeKb(workerPids());
      const calls = await callFleet(fleet, url, { rounds: options.rounds, concurrency: options.concurrency });
      const result: FleetResult = {
        runtime,
        hosts: fleet.size,
        linkOpenMs: { p50: round(percentile(sorted, 50), 0), p95: round(percentile(sorted, 95), 0), max: round(sorted.at(-1)!, 0), allLinked: round(linked.allLinkedMs, 0) },
        calls: calls.calls,
        misrouted: calls.misrouted,
        lost: calls.lost,
        callsPerSecond: round(calls.callsPerSecond, 0),
        workerRssMb: { linked: mb(linkedKb), afterCalls: mb(treeKb(workerPids())) },
        clientsRssMb: mb(process.memoryUsage().rss / 1024)!,
        problems: calls.problems,
      };
      results.push(result);
      log(`  ${runtime}: ${fleet.size} hosts linked in ${result.linkOpenMs.allLinked} ms (p50 ${result.linkOpenMs.p50}, p95 ${result.linkOpenMs.p95}); ${result.calls} calls at ${result.callsPerSecond}/s, ${result.misrouted} misrouted, ${result.lost} lost; worker RSS ${result.workerRssMb.linked} → ${result.workerRssMb.afterCalls} MB`);
    } finally {
      await linked.stop();
    }
  };

  const workerd = await startWorkerdWorker(fleet.config, { logLevel: 'warn' });
  try {
    await run('workerd', workerd.url, workerdPids);
  } finally {
    await workerd.stop();
  }

  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-fleet-'));
  registry.afterStop(() => rmSync(dir, { recursive: true, force: true }));
  const deno = await startDenoWorker({ configFile: writeWorkerConfig(dir, fleet.config), port: 0, stderr: 'pipe', env: { SWITCHYARD_LOG_LEVEL: 'warn' } });
  const proc = registry.track('worker (deno, fleet)', deno.child);
  try {
    await run('deno', deno.url, () => [proc.pid]);
  } finally {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  return results;
}

/** The fleet table for the report. */
export function renderFleet(results: readonly FleetResult[]): string {
  if (results.length === 0) return '';
  const rows = results.map((r) =>
    `| ${r.runtime} | ${r.hosts} | ${r.linkOpenMs.p50} / ${r.linkOpenMs.p95} / ${r.linkOpenMs.max} | ${r.linkOpenMs.allLinked} | ${r.calls} | ${r.callsPerSecond} | ${r.misrouted} | ${r.lost} | ${r.workerRssMb.linked ?? '?'} → ${r.workerRssMb.afterCalls ?? '?'} | ${r.clientsRssMb} |`);
  return [
    '## Fleet: simulated hosts on one worker',
    '',
    'Every host dials at once through the real link client; then one modern tools/call per host per round, each checked to be answered by its own host.',
    '',
    '| runtime | hosts | link open ms p50 / p95 / max | all linked ms | calls | calls/s | misrouted | lost | worker RSS MB linked → after calls | clients RSS MB |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
