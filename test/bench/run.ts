/**
 * `npm run bench`: measures Switchyard against direct stdio, supergateway and mcp-proxy, and
 * writes `bench-results/<label>.{json,md}` (plus `latest.md`). Not part of `npm test`: timings
 * belong here (DESIGN §7). Everything listens on 127.0.0.1; every process is ended on success,
 * failure, Ctrl-C and SIGTERM.
 *
 *   npm run bench                              # everything, label = timestamp
 *   npm run bench -- --label after --compare bench-results/before.json
 *   npm run bench -- --only latency,link --variants b,e --calls 1000 --rounds 3
 *   npm run bench -- --profile --label x       # CPU profiles of worker and sidecar under load
 *
 * Sections: size, hotpath, latency, link, cold, concurrency (memory is sampled inside concurrency).
 * Options: --calls (500) --warmup (50) --rounds (2) per latency variant; --levels (1,8,64) and
 * --concurrency-calls (500 per level) for concurrency; --cold-samples (7).
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { VariantId } from './latency.ts';
import { LIVE_SECTIONS, measureLive, type LiveResults } from './live.ts';
import { DENO, installCleanup, ProcessRegistry } from './processes.ts';
import { profileUnderLoad } from './profile.ts';
import { evaluateTargets, renderMarkdown, writeResults, type BenchResults } from './report.ts';
import { measureSize } from './size.ts';
import { measureHotPath } from './hot-path-run.ts';

const SECTIONS = ['size', 'hotpath', 'latency', 'link', 'cold', 'concurrency'] as const;

const { values } = parseArgs({
  options: {
    label: { type: 'string' },
    calls: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    levels: { type: 'string', default: '1,8,64' },
    'concurrency-calls': { type: 'string', default: '500' },
    'cold-samples': { type: 'string', default: '7' },
    only: { type: 'string' },
    variants: { type: 'string' },
    compare: { type: 'string' },
    profile: { type: 'boolean', default: false },
  },
});

const log = (line: string) => process.stdout.write(line + '\n');
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);
const started = Date.now();
const label = values.label ?? new Date(started).toISOString().replace(/[:.]/g, '-');
const only = new Set(values.only?.split(',') ?? SECTIONS);
const settings = {
  calls: Number(values.calls),
  warmup: Number(values.warmup),
  rounds: Number(values.rounds),
  levels: values.levels.split(',').map(Number),
  concurrencyCalls: Number(values['concurrency-calls']),
  coldSamples: Number(values['cold-samples']),
};

async function main(): Promise<number> {
  if (values.profile) {
    await profileUnderLoad(registry, { calls: settings.calls * 4, label, log });
    return 0;
  }
  const failures: BenchResults['failures'] = [];
  const section = async <T>(name: string, run: () => Promise<T>): Promise<T | null> => {
    if (!only.has(name)) return null;
    log(`\n${name}`);
    try {
      return await run();
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      log(`  FAILED: ${message.split('\n')[0]}`);
      failures.push({ section: name, error: message });
      return null;
    }
  };
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    deno: execFileSync(DENO, ['--version'], { encoding: 'utf8' }).split('\n')[0]!.replace(/^deno /, ''),
    loadavgAtStart: loadavg().map((v) => Math.round(v * 100) / 100),
  };

  const size = await section('size', measureSize);
  const hotPath = await section('hotpath', () => measureHotPath(registry, log));
  const live: LiveResults = LIVE_SECTIONS.some((name) => only.has(name))
    ? await measureLive(registry, { ...settings, ...(values.variants ? { variants: values.variants.split(',') as VariantId[] } : {}) }, section, log)
    : { latency: [], linkCost: null, coldStart: [], concurrency: [], memory: null };
  const partial = {
    label,
    startedAt: new Date(started).toISOString(),
    durationSec: Math.round((Date.now() - started) / 1000),
    machine: { ...machine, loadavgAtEnd: loadavg().map((v) => Math.round(v * 100) / 100) },
    settings,
    ...live,
    size,
    hotPath,
    failures,
  };
  const results: BenchResults = { ...partial, targets: evaluateTargets(partial) };
  const before = values.compare !== undefined ? (JSON.parse(readFileSync(values.compare, 'utf8')) as BenchResults) : undefined;
  const markdown = renderMarkdown(results, before);
  const paths = writeResults(results, markdown);
  log('\n' + markdown);
  log(`Written: ${paths.json}, ${paths.md}`);
  return failures.length === 0 ? 0 : 1;
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
