/**
 * The sidecar's CPU per echo call, and two sidecar bundles against each other: `node --import tsx
 * test/bench/sidecar-cpu.ts [--bundles A/sidecar.js,B/sidecar.js] [--node-flags 'A;B'] [--rounds 4] [--calls 1000] [--variants b,m,b8,m8] [--floor]`.
 *
 * Each round starts the whole stack (Deno worker, the CLI sidecar from the bundle, server-everything)
 * once per bundle, in A B B A order, and times `calls` echoes per variant after a warm-up:
 * (b) a legacy session on `/servers/everything/mcp`, (m) modern stateless requests, each one at a
 * time; (b8) and (m8) the same from 8 sessions (8 concurrent request loops for modern) at once,
 * `calls` in all, where a wake-up of the sidecar may find several messages. `--floor` gives the
 * host a trust floor (a profile that constrains nothing, so servers still run uncontained), so
 * every open, and every modern request, resolves a trust profile. What it prints
 * is the sidecar process's own CPU (user + system, from /proc) per call, per round and as the
 * median over rounds, and the ratio B/A of each round's pair: on a shared machine the pairs say
 * more than either column. Without `--bundles` it measures this tree's bundle alone. `--node-flags`
 * compares node flags instead, on one bundle: `--node-flags ';--max-semi-space-size=16'` runs side
 * A with none and side B with that one. Each bundle
 * must be named `sidecar.js` (`npm run build` in a checkout writes one): the bundle's entry runs
 * only under that name, so another one would start a sidecar that exits at once.
 *
 * `--cpu-prof DIR` instead runs each variant once on a sidecar started with node's `--cpu-prof`
 * (written when it exits on SIGTERM, into DIR) and prints where its time went
 * (`sidecar-profile-report.ts`). `--perf DIR` records each variant's timed loop with Linux `perf`
 * into `DIR/<variant>.perf.data` (read it with `perf report -i`).
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SETTLE_MS } from '../../sidecar/config/file-stamp.ts';
import { connectHttp, echoLoop, modernAgent, type Agent } from './client.ts';
import { cpuMs, installCleanup, ProcessRegistry } from './processes.ts';
import { buildSidecarBundle } from './sidecar-bundle.ts';
import { profileReport, type Window } from './sidecar-profile-report.ts';
import { startStack, TOKENS, type Stack } from './stack.ts';
import { median, round } from './stats.ts';
import { nodePerfMapFlags } from './perf-map.ts';

type Variant = 'b' | 'm' | 'b8' | 'm8';

/** Sessions (or modern request loops) at once in the concurrent variants. */
const CONCURRENT = 8;

const { values } = parseArgs({
  options: {
    bundles: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    calls: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '200' },
    variants: { type: 'string', default: 'b,m' },
    'cpu-prof': { type: 'string' },
    perf: { type: 'string' },
    'jit-names': { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    /** `'A;B'`: node flags for side A and side B (space-separated within a side), on one bundle. */
    'node-flags': { type: 'string' },
  },
});
const log = (line: string) => process.stdout.write(line + '\n');
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);
const calls = Number(values.calls);
const warmup = Number(values.warmup);
const chosen = values.variants.split(',') as Variant[];
const flagSides = values['node-flags']?.split(';').map((side) => side.split(' ').filter((flag) => flag !== ''));
if (flagSides !== undefined && (flagSides.length !== 2 || values.bundles?.includes(','))) throw new Error(`--node-flags takes two sides, 'A;B', on one bundle: ${values['node-flags']}`);
const bundles = flagSides !== undefined ? flagSides.map(() => values.bundles === undefined ? undefined : resolve(values.bundles)) : (values.bundles?.split(',').map((path) => resolve(path)) ?? [undefined]);
for (const bundle of bundles) {
  if (bundle !== undefined && basename(bundle) !== 'sidecar.js') throw new Error(`Name each --bundles file sidecar.js, as npm run build does: the bundle runs only under that name: ${bundle}`);
}

function agentsFor(stack: Stack, variant: Variant): Promise<Agent[]> {
  const url = `${stack.url}/servers/everything/mcp`;
  const one = () => (variant.startsWith('m') ? Promise.resolve(modernAgent(url, TOKENS.modern)) : connectHttp(url, TOKENS.plain));
  return Promise.all(Array.from({ length: variant.endsWith('8') ? CONCURRENT : 1 }, one));
}

/** `count` echoes after `warm` untimed ones, shared out over `agents`: each agent's one after another, all agents at once. */
async function echoAll(agents: readonly Agent[], count: number, warm: number, tag: string): Promise<{ errors: number; firstError?: string }> {
  const share = (n: number) => Math.ceil(n / agents.length);
  const runs = await Promise.all(agents.map((agent, i) => echoLoop(agent, 'echo', share(count), share(warm), `${tag} ${i}`)));
  const firstError = runs.find((run) => run.firstError !== undefined)?.firstError;
  return { errors: runs.reduce((sum, run) => sum + run.errors, 0), ...(firstError !== undefined ? { firstError } : {}) };
}

/** A floor that constrains nothing (no paths, no network rule): servers run uncontained, but each open resolves it. */
const FLOOR = { 'bench-floor': { description: 'Benchmark: a floor that constrains nothing' } };

interface Measured {
  stack: Stack;
  /** µs of sidecar CPU per timed call, by variant. */
  perCall: Record<string, number>;
  /** Each variant's timed loop, in µs of the monotonic clock. */
  windows: Record<string, Window>;
}

/** Starts a stack on `bundle` (this tree's when undefined) and times each variant's echoes on it; `around` wraps each timed loop. */
async function measure(bundle: string | undefined, variants: readonly Variant[], nodeFlags: string[] = [], around?: (pid: number, variant: Variant) => Promise<() => Promise<void>>): Promise<Measured> {
  const floor = values.floor ? { profiles: FLOOR, sidecarConfig: { 'trust-profile': 'bench-floor' } } : {};
  const stack = await startStack(registry, { ...(bundle !== undefined ? { sidecarBundle: bundle } : {}), sidecarNodeFlags: nodeFlags, ...floor });
  await configSettled(join(stack.dir, 'sidecar'));
  const perCall: Record<string, number> = {};
  const windows: Record<string, Window> = {};
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  for (const variant of variants) {
    const agents = await agentsFor(stack, variant);
    try {
      await echoAll(agents, 0, warmup, 'warmup');
      const done = await around?.(stack.sidecar.pid, variant);
      const before = cpuMs(stack.sidecar.pid)!;
      const fromUs = nowUs();
      const timed = await echoAll(agents, calls, 0, 'timed');
      windows[variant] = { fromUs, toUs: nowUs() };
      const after = cpuMs(stack.sidecar.pid)!;
      await done?.();
      if (timed.errors > 0) throw new Error(`(${variant}): ${timed.errors} errors, first: ${timed.firstError}`);
      perCall[variant] = round(((after - before) * 1000) / (Math.ceil(calls / agents.length) * agents.length), 0);
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
    }
  }
  return { stack, perCall, windows };
}

/**
 * Waits until every file of the sidecar dir is older than `SETTLE_MS`: before that the host keeps
 * no parsed mcp.json or profile (a file too recently changed has no stamp, `file-stamp.ts`), and
 * each open parses them again, which is not what a running host does, and how much of a timed
 * loop fell inside that time varied with how fast the stack started.
 */
async function configSettled(dir: string): Promise<void> {
  let newest = 0;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const stat = statSync(join(dir, name));
    newest = Math.max(newest, stat.mtimeMs, stat.ctimeMs);
  }
  const wait = newest + SETTLE_MS + 100 - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

async function stop(stack: Stack): Promise<void> {
  await registry.stop(stack.sidecar);
  await registry.stop(stack.worker);
}

async function compare(): Promise<void> {
  const results = bundles.map(() => [] as Array<Record<string, number>>);
  for (let r = 0; r < Number(values.rounds); r++) {
    const order = bundles.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    for (const i of order) {
      const { stack, perCall } = await measure(bundles[i], chosen, flagSides?.[i] ?? []);
      await stop(stack);
      results[i]!.push(perCall);
      log(`round ${r + 1} ${String.fromCharCode(65 + i)}: ${JSON.stringify(perCall)} µs sidecar CPU per call`);
    }
  }
  for (const variant of chosen) {
    const medians = results.map((rows) => median(rows.map((row) => row[variant]!)));
    const line = medians.map((m, i) => `${String.fromCharCode(65 + i)} ${m}`).join(', ');
    const ratios = results.length === 2 ? `; B/A per round ${results[0]!.map((row, r) => round(results[1]![r]![variant]! / row[variant]!, 2)).join(' ')}` : '';
    log(`(${variant}) median µs per call: ${line}${ratios}`);
  }
}

/** One stack per variant, its sidecar under `--cpu-prof`; the report covers the timed loop only. */
async function profile(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-prof-'));
  registry.afterStop(() => rmSync(scratch, { recursive: true, force: true }));
  const bundle = bundles[0] ?? (await buildSidecarBundle(scratch, { sourcemap: true }));
  for (const variant of chosen) {
    const since = Date.now();
    const { stack, perCall, windows } = await measure(bundle, [variant], ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100']);
    await stop(stack);
    const written = readdirSync(dir).filter((name) => name.endsWith('.cpuprofile') && statSync(join(dir, name)).mtimeMs >= since);
    log(`\n(${variant}) ${perCall[variant]} µs sidecar CPU per call with the profiler on; ${written.join(', ')}`);
    for (const name of written) log(profileReport(join(dir, name), calls, windows[variant]));
  }
}

/**
 * `perf record` of the sidecar during each timed loop (on-CPU samples, kernel included, which a
 * V8 profile cannot tell apart from waiting). JIT frames stay unnamed unless `--jit-names` starts
 * the sidecar with `--perf-basic-prof` (a map file in /tmp that perf reads; it costs a little itself).
 */
async function perf(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const record = async (pid: number, variant: Variant) => {
    const out = join(dir, `${variant}.perf.data`);
    const child = spawn('perf', ['record', '-F', '4999', '-g', '-p', String(pid), '-o', out], { stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise((resolve) => setTimeout(resolve, 500)); // perf attaches
    return async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
      log(`(${variant}) ${out}`);
    };
  };
  for (const variant of chosen) {
    const { stack, perCall } = await measure(bundles[0], [variant], values['jit-names'] ? nodePerfMapFlags(dir) : [], record);
    log(`(${variant}) ${perCall[variant]} µs sidecar CPU per call under perf`);
    await stop(stack);
  }
}

const main = values['cpu-prof'] !== undefined ? profile(resolve(values['cpu-prof'])) : values.perf !== undefined ? perf(resolve(values.perf)) : compare();
main
  .then(async () => {
    await cleanup();
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`sidecar-cpu: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
