/**
 * The worker's CPU per echo call, and two worker checkouts against each other: `node --import tsx
 * test/bench/worker-cpu.ts [--trees A,B] [--deno-flags 'A;B'] [--rounds 4] [--calls 1000] [--variants b,m,b8,m8]`.
 *
 * Each round starts the whole stack (this tree's sidecar bundle, server-everything) once per
 * worker checkout, all at once, and per variant runs `calls` echoes on each in `--batches`
 * batches taken in turns (A B B A …), after a warm-up: (b) one legacy session on
 * `/servers/everything/mcp`, (m) sequential modern stateless requests, (b8) 8 legacy sessions and
 * (m8) 8 modern agents calling at once. Every agent is the light `node:http` client, so the box's
 * two cores go to the gateway. What it prints is the Deno process's own CPU per call (its
 * threads' run time from /proc schedstat, in µs), per round (the mean of its batches) and as the
 * median over all batches, and the median of the ratios B/A of batches run side by side:
 * interleaved batches put the load of other work on the machine on both alike, so that ratio
 * says more than either column. Without `--trees` it measures this
 * tree's worker alone. A tree is a checkout with `node_modules` beside its sources
 * (`git worktree add DIR COMMIT`, then a symlink to this tree's `node_modules`). `--deno-flags`
 * compares Deno flags instead, on one tree: `--deno-flags ';--v8-flags=--max-semi-space-size=32'`
 * runs side A with no flags and side B with that one (both started as the profiling tools start
 * Deno, not through the CLI).
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { echoLoop, type Agent } from './client.ts';
import { connectLight, connectLightModern } from './light-client.ts';
import { installCleanup, ProcessRegistry } from './processes.ts';
import { schedCpuNs } from './sched-cpu.ts';
import { buildSidecarBundle } from './sidecar-bundle.ts';
import { startStack, TOKENS, type Stack } from './stack.ts';
import { median, round } from './stats.ts';

type Variant = 'b' | 'm' | 'b8' | 'm8';

const { values } = parseArgs({
  options: {
    trees: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    calls: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '200' },
    batches: { type: 'string', default: '40' },
    variants: { type: 'string', default: 'b,m,b8,m8' },
    /** Deno flags per side, `;` between sides, spaces between flags: `--deno-flags ';--v8-flags=--max-semi-space-size=32'`. */
    'deno-flags': { type: 'string' },
  },
});
const log = (line: string) => process.stdout.write(line + '\n');
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);
const calls = Number(values.calls);
const warmup = Number(values.warmup);
const batches = Number(values.batches);
const chosen = values.variants.split(',') as Variant[];
const flagSides = values['deno-flags']?.split(';').map((side) => side.split(' ').filter((flag) => flag !== ''));
const givenTrees = values.trees?.split(',').map((path) => resolve(path)) ?? [undefined];
/** One worker per side: the trees given, or this tree once per `--deno-flags` side. */
const trees = flagSides !== undefined && givenTrees.length === 1 ? flagSides.map(() => givenTrees[0]) : givenTrees;
async function agentsFor(stack: Stack, variant: Variant): Promise<Agent[]> {
  const url = `${stack.url}/servers/everything/mcp`;
  const count = variant.endsWith('8') ? 8 : 1;
  const make = () => (variant.startsWith('m') ? Promise.resolve(connectLightModern(url, TOKENS.modern)) : connectLight(url, TOKENS.plain));
  return Promise.all(Array.from({ length: count }, make));
}

/** `calls` echoes spread over `agents` at once; the worker's CPU they cost, in ns. */
async function batch(stack: Stack, agents: readonly Agent[], calls: number): Promise<number> {
  const each = Math.ceil(calls / agents.length);
  const before = schedCpuNs(stack.worker.pid);
  const timed = await Promise.all(agents.map((agent) => echoLoop(agent, 'echo', each, 0, 'timed')));
  const used = schedCpuNs(stack.worker.pid) - before;
  const failed = timed.find((t) => t.errors > 0);
  if (failed !== undefined) throw new Error(`${failed.errors} errors, first: ${failed.firstError}`);
  return used / (each * agents.length);
}

/** Per tree, per variant: µs of worker CPU per call of each batch, in batch order. */
type Batches = Array<Record<string, number[]>>;

/**
 * One round: a stack per tree, all started at once; per variant, batches run on each stack in
 * turns (A B B A …), so load from other work on the machine falls on both alike.
 */
async function runRound(bundle: string, r: number): Promise<Batches> {
  const stacks: Stack[] = [];
  try {
    for (const [i, tree] of trees.entries()) {
      const denoFlags = flagSides?.[i];
      stacks.push(await startStack(registry, { sidecarBundle: bundle, ...(tree !== undefined ? { workerRoot: tree } : {}), ...(denoFlags !== undefined ? { denoFlags } : {}) }));
    }
    const perBatch: Batches = trees.map(() => ({}));
    for (const variant of chosen) {
      const agents = await Promise.all(stacks.map((stack) => agentsFor(stack, variant)));
      try {
        for (const [i, stack] of stacks.entries()) await batch(stack, agents[i]!, warmup);
        for (const row of perBatch) row[variant] = [];
        for (let b = 0; b < batches; b++) {
          const order = stacks.map((_, i) => i);
          if ((b + r) % 2 === 1) order.reverse();
          for (const i of order) perBatch[i]![variant]!.push(round((await batch(stacks[i]!, agents[i]!, calls / batches)) / 1000, 1));
        }
      } finally {
        await Promise.all(agents.flat().map((agent) => agent.close()));
      }
    }
    return perBatch;
  } finally {
    for (const stack of stacks) {
      await registry.stop(stack.sidecar);
      await registry.stop(stack.worker);
    }
  }
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

async function main(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), 'switchyard-worker-cpu-'));
  registry.afterStop(() => rmSync(scratch, { recursive: true, force: true }));
  const bundle = await buildSidecarBundle(scratch);
  const all: Batches = trees.map(() => Object.fromEntries(chosen.map((v) => [v, [] as number[]])));
  for (let r = 0; r < Number(values.rounds); r++) {
    const perBatch = await runRound(bundle, r);
    perBatch.forEach((row, i) => {
      for (const variant of chosen) all[i]![variant]!.push(...row[variant]!);
      log(`round ${r + 1} ${String.fromCharCode(65 + i)}: ${JSON.stringify(Object.fromEntries(chosen.map((v) => [v, round(mean(row[v]!), 1)])))} µs worker CPU per call (mean of batches)`);
    });
  }
  // Each batch of B beside the batch of A run next to it: the median of those ratios is what a
  // burst of load elsewhere on the machine moves least.
  for (const variant of chosen) {
    const medians = all.map((row) => round(median(row[variant]!), 1));
    const line = medians.map((m, i) => `${String.fromCharCode(65 + i)} ${m}`).join(', ');
    const pairs = all.length === 2 ? all[0]![variant]!.map((a, b) => all[1]![variant]![b]! / a) : [];
    const ratio = pairs.length > 0 ? `; B/A median of ${pairs.length} paired batches ${round(median(pairs), 3)} (quartiles ${round(quartile(pairs, 0.25), 3)}-${round(quartile(pairs, 0.75), 3)})` : '';
    log(`(${variant}) median µs per call: ${line}${ratio}`);
  }
}

function quartile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

main()
  .then(async () => {
    await cleanup();
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`worker-cpu: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
