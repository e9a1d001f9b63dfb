/**
 * Two checkouts against each other, whole stack: `node --import tsx test/bench/link-pair.ts
 * --trees A,B [--rounds 2000] [--calls 1] [--variants b,m] [--payload CHARS]`, where A and B are checkouts with
 * `node_modules` (a worktree, or an export of a commit with the folder linked in).
 *
 * The link's cost is split between the worker (Deno) and the sidecar (Node), so a change to it is
 * measured on both at once: the two trees' stacks (each its own Deno worker from its sources, its
 * own sidecar bundle, server-everything) run side by side, and `rounds` batches of `calls`
 * sequential echoes alternate between them, A B B A, per variant after a warm-up: (b) a legacy
 * session on `/servers/everything/mcp`, (m) modern stateless requests. It prints the worker's and
 * the sidecar's CPU per call (user + system from /proc, around the whole loop) and the p50, for A
 * and B and as B/A. The legacy path is the control when only the modern one changed: its B/A is
 * what the two stacks differ by on their own.
 *
 * @module
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { connectHttp, echoLoop, modernAgent, type Agent } from './client.ts';
import { cpuMs, installCleanup, ProcessRegistry } from './processes.ts';
import { TOKENS, type Stack } from './stack.ts';
import { percentile, round } from './stats.ts';

type Variant = 'b' | 'm';

const { values } = parseArgs({
  options: {
    trees: { type: 'string' },
    rounds: { type: 'string', default: '2000' },
    calls: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '300' },
    variants: { type: 'string', default: 'b,m' },
    payload: { type: 'string', default: '0' },
  },
});
const log = (line: string) => process.stdout.write(line + '\n');
const chosen = values.variants.split(',') as Variant[];
const calls = Number(values.calls);
/** Characters added to every echo's message, both ways: large messages cost what small ones do not (pieces on the link, copies). */
const payload = 'p'.repeat(Number(values.payload));

function agentFor(stack: Stack, variant: Variant): Promise<Agent> {
  const url = `${stack.url}/servers/everything/mcp`;
  return variant === 'm' ? Promise.resolve(modernAgent(url, TOKENS.modern)) : connectHttp(url, TOKENS.plain);
}

interface StackModule {
  startStack(registry: ProcessRegistry): Promise<Stack>;
}

/** µs of CPU per call of one process over the loop, from /proc clock ticks. */
class Meter {
  cpuMs = 0;
  calls = 0;
  perCall(): number {
    return round((this.cpuMs * 1000) / this.calls, 0);
  }
}

/**
 * Both trees' stacks run at once, each from its own sources (its `stack.ts`, so its worker, its
 * sidecar bundle), and the calls alternate between them in batches, A B B A: on a machine whose
 * load drifts, both stacks are measured through the same moments.
 */
async function compare(): Promise<void> {
  const trees = (values.trees ?? '').split(',').map((tree) => resolve(tree));
  if (trees.length !== 2) throw new Error('--trees takes two checkouts: A,B');
  const registry = new ProcessRegistry();
  const cleanup = installCleanup(registry);
  try {
    const stacks: Stack[] = [];
    for (const tree of trees) {
      const module = (await import(join(tree, 'test/bench/stack.ts'))) as StackModule;
      stacks.push(await module.startStack(registry));
    }
    const batches = Number(values.rounds);
    for (const variant of chosen) {
      const agents = await Promise.all(stacks.map((stack) => agentFor(stack, variant)));
      for (const agent of agents) await echoLoop(agent, 'echo', 0, Number(values.warmup), 'warmup', payload);
      for (const stack of stacks) await stack.sparesSettled();
      const meters = stacks.map(() => ({ worker: new Meter(), sidecar: new Meter(), latencies: [] as number[] }));
      // Each process's CPU is read once around the whole loop: it serves only its own tree's calls,
      // so the batches can be as short as one call, and both trees see the same moments of load.
      const before = stacks.map((stack) => ({ worker: cpuMs(stack.worker.pid)!, sidecar: cpuMs(stack.sidecar.pid)! }));
      for (let b = 0; b < batches; b++) {
        for (const i of b % 2 === 0 ? [0, 1] : [1, 0]) {
          const timed = await echoLoop(agents[i]!, 'echo', calls, 0, 'timed', payload);
          if (timed.errors > 0) throw new Error(`(${variant}) ${timed.errors} errors, first: ${timed.firstError}`);
          meters[i]!.latencies.push(...timed.latencies);
        }
      }
      stacks.forEach((stack, i) => {
        const m = meters[i]!;
        m.worker.cpuMs = cpuMs(stack.worker.pid)! - before[i]!.worker;
        m.sidecar.cpuMs = cpuMs(stack.sidecar.pid)! - before[i]!.sidecar;
        m.worker.calls = m.sidecar.calls = batches * calls;
      });
      for (const agent of agents) await agent.close();
      const rows = meters.map((m) => ({ worker: m.worker.perCall(), sidecar: m.sidecar.perCall(), p50: round(percentile([...m.latencies].sort((x, y) => x - y), 50), 3) }));
      for (const key of ['worker', 'sidecar', 'p50'] as const) {
        log(`(${variant}) ${key.padEnd(7)} A ${rows[0]![key]}  B ${rows[1]![key]}  B/A ${round(rows[1]![key] / rows[0]![key], 3)}`);
      }
    }
  } finally {
    await cleanup();
  }
}

compare().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`link-pair: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
