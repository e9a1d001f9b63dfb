/**
 * `npm run bench`: measures Switchyard against direct stdio, supergateway and mcp-proxy, and
 * writes `bench-results/<label>.{json,md}` (plus `latest.md`). Not part of `npm test`: timings
 * belong here (DESIGN §7). Everything listens on 127.0.0.1; every process is ended on success,
 * failure, Ctrl-C and SIGTERM.
 *
 *   npm run bench                              # everything, label = timestamp
 *   npm run bench -- --label after --compare bench-results/before.json
 *   npm run bench -- --only latency,link --variants b,e --calls 1000 --rounds 3
 *   npm run bench -- --quick                   # fewer calls and samples, no 256 sessions: about two minutes
 *   npm run bench -- --profile --label x       # CPU profiles of worker and sidecar under load
 *   npm run bench -- --profile --profile-payload 1048576   # the same with 1 MB echoes
 *   npm run bench -- --profile --profile-variant m         # the same for modern stateless requests
 *
 * Sections: size, start, hotpath, curve, latency, link, cold, warm, concurrency, floor, scale (memory is sampled at
 * the start and inside concurrency). floor: minimal 3- and 4-process relays beside Switchyard and
 * supergateway, in turns, at one session and at each --levels above 1 (`floor.ts`;
 * `npm run bench -- --quick --only floor`). Options: --burn-in (5000) echo calls every gateway
 * process serves before it is measured (`burn-in.ts`); --curve-blocks (10) of --curve-calls (600)
 * for the warm-up curve of fresh processes (`warm-up-curve.ts`); --calls (500) --warmup (50) --rounds (2) per
 * latency variant; --levels (1,8,64) and --concurrency-calls (500 per level) for concurrency, Switchyard and
 * supergateway in turn; --cold-samples (11, the most the stack's cold agents allow); --warm-samples (5) and --fleet (64) for warm starts;
 * --scale-sessions (1,8,64,256), --scale-payloads (1024,65536,1048576), --scale-calls (400).
 * start: a fresh Deno process imports dist/worker.js and answers an agent's first request, beside a
 * minimal Hono worker, in turns (`start.ts`; --start-runs 15 of each).
 * fleet: 1,000 simulated hosts on workerd beside Deno (`fleet.ts`; --fleet-hosts 1000,
 * --fleet-rounds 2, --fleet-concurrency 32; `npm run bench -- --only fleet`).
 * fairness: one agent floods a host's link while another's echo crosses it, on loopback, over a
 * 100 ms round trip and, as root, over a link shaped to 100 Mbit/s (`fairness.ts`;
 * --fairness-seconds 8 of flood per scenario; `npm run bench -- --only fairness`).
 * cpushare: one agent's servers spin on every core while another's calls its own servers, with
 * no cgroups, a cgroup per server, and a cgroup per server under its agent's, the sidecar's way
 * (`cpu-share.ts`; --calls echoes; as root; `npm run bench -- --only cpushare`).
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { BURN_IN_CALLS } from './burn-in.ts';
import type { VariantId } from './latency.ts';
import { LIVE_SECTIONS, measureLive, type LiveResults } from './live.ts';
import { DENO, installCleanup, ProcessRegistry } from './processes.ts';
import { profileUnderLoad } from './profile.ts';
import { evaluateTargets, renderMarkdown, writeResults, type BenchResults } from './report.ts';
import { measureSize } from './size.ts';
import { measureWorkerStart } from './start.ts';
import { measureHotPath } from './hot-path-run.ts';
import { measureFairness } from './fairness.ts';
import { measureCpuShare } from './cpu-share.ts';
import { measureFleet } from './fleet.ts';
import { measureWarmUpCurve } from './warm-up-curve.ts';

const SECTIONS = ['size', 'start', 'hotpath', 'curve', 'latency', 'link', 'cold', 'warm', 'concurrency', 'floor', 'scale', 'fleet', 'fairness', 'cpushare'] as const;

/** `--quick`: the same sections and targets on fewer calls and samples (noisier, a few minutes). */
const QUICK: Record<string, string> = {
  calls: '200',
  warmup: '30',
  'burn-in': '300',
  'curve-blocks': '4',
  'curve-calls': '250',
  rounds: '1',
  'concurrency-calls': '200',
  'cold-samples': '3',
  'warm-samples': '3',
  'scale-sessions': '1,8,64',
  'scale-calls': '160',
  'fairness-seconds': '4',
  'start-runs': '5',
};

const { values, tokens } = parseArgs({
  options: {
    label: { type: 'string' },
    calls: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
    'burn-in': { type: 'string', default: String(BURN_IN_CALLS) },
    'curve-blocks': { type: 'string', default: '10' },
    'curve-calls': { type: 'string', default: '600' },
    rounds: { type: 'string', default: '2' },
    levels: { type: 'string', default: '1,8,64' },
    'concurrency-calls': { type: 'string', default: '500' },
    'cold-samples': { type: 'string', default: '11' },
    only: { type: 'string' },
    variants: { type: 'string' },
    compare: { type: 'string' },
    'warm-samples': { type: 'string', default: '5' },
    fleet: { type: 'string', default: '64' },
    'scale-sessions': { type: 'string', default: '1,8,64,256' },
    'scale-payloads': { type: 'string', default: '1024,65536,1048576' },
    'scale-calls': { type: 'string', default: '400' },
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'profile-payload': { type: 'string', default: '0' },
    'fleet-hosts': { type: 'string', default: '1000' },
    'fleet-rounds': { type: 'string', default: '2' },
    'fleet-concurrency': { type: 'string', default: '32' },
    'profile-variant': { type: 'string', default: 'b' },
    'fairness-seconds': { type: 'string', default: '8' },
    'start-runs': { type: 'string', default: '15' },
  },
  tokens: true,
});
// An option given on the command line wins over `--quick`'s value for it.
const given = new Set(tokens.flatMap((t) => (t.kind === 'option' ? [t.name] : [])));
const option = (name: keyof typeof values & string): string => (values.quick && !given.has(name) && QUICK[name] !== undefined ? QUICK[name]! : String(values[name]));

const log = (line: string) => process.stdout.write(line + '\n');
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);
const started = Date.now();
const label = values.label ?? new Date(started).toISOString().replace(/[:.]/g, '-');
const only = new Set(values.only?.split(',') ?? SECTIONS);
const numbers = (text: string) => text.split(',').map(Number);
const settings = {
  quick: values.quick,
  calls: Number(option('calls')),
  warmup: Number(option('warmup')),
  burnIn: Number(option('burn-in')),
  rounds: Number(option('rounds')),
  levels: numbers(option('levels')),
  concurrencyCalls: Number(option('concurrency-calls')),
  coldSamples: Number(option('cold-samples')),
  warmSamples: Number(option('warm-samples')),
  fleet: Number(option('fleet')),
  scaleSessions: numbers(option('scale-sessions')),
  scalePayloads: numbers(option('scale-payloads')),
  scaleCalls: Number(option('scale-calls')),
};

async function main(): Promise<number> {
  if (values.profile) {
    const payloadBytes = Number(values['profile-payload']);
    await profileUnderLoad(registry, { calls: payloadBytes > 0 ? Math.max(10, Math.ceil(settings.calls / 10)) : settings.calls * 4, label, payloadBytes, variant: values['profile-variant'] === 'm' ? 'm' : 'b', log });
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
  const workerStart = await section('start', () => measureWorkerStart({ runs: Number(option('start-runs')), log }));
  const hotPath = await section('hotpath', () => measureHotPath(registry, log));
  const warmUpCurve = await section('curve', () => measureWarmUpCurve(registry, { blocks: Number(option('curve-blocks')), callsPerBlock: Number(option('curve-calls')), log }));
  const hostFleet = await section('fleet', () =>
    measureFleet(registry, { hosts: Number(values['fleet-hosts']), rounds: Number(values['fleet-rounds']), concurrency: Number(values['fleet-concurrency']) }, log));
  const live: LiveResults = LIVE_SECTIONS.some((name) => only.has(name))
    ? await measureLive(registry, { ...settings, ...(values.variants ? { variants: values.variants.split(',') as VariantId[] } : {}) }, section, log)
    : { latency: [], linkCost: null, coldStart: [], concurrency: [], memory: null, warmStart: null, scale: null, floor: null };
  const fairness = await section('fairness', () => measureFairness(registry, { seconds: Number(option('fairness-seconds')), log }));
  const cpuShare = await section('cpushare', () => measureCpuShare({ calls: settings.calls, log }));
  const partial = {
    label,
    startedAt: new Date(started).toISOString(),
    durationSec: Math.round((Date.now() - started) / 1000),
    machine: { ...machine, loadavgAtEnd: loadavg().map((v) => Math.round(v * 100) / 100) },
    settings,
    ...live,
    size,
    workerStart,
    hotPath,
    warmUpCurve,
    fleet: hostFleet,
    fairness,
    cpuShare,
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
