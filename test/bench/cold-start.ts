/**
 * Cold start: from the agent's `initialize` to the first tool result, server spawn included —
 * what an agent waits for the first time it touches a server. Measured for Switchyard ordinary
 * (`plain` agent) and contained (`boxed`, bubblewrap), with direct stdio (the SDK client spawning
 * the server itself) as the floor.
 *
 * Each Switchyard sample is the first and only session of its own agent (`cold-plain-<i>`,
 * `cold-boxed-<i>`), so the host's warm pool, which serves an agent's later sessions, never
 * serves one (warm starts are measured in `warm-start.ts`).
 *
 * Samples are interleaved (ordinary, contained, direct, ordinary, …) so that background noise
 * hits every kind alike, one untimed round first warms the worker's and sidecar's code paths, and
 * each sample starts only once the previous one's server has exited and the pool's instance for
 * its agent is ready, so neither the teardown nor that background start is measured. The median is reported, with min and max.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { connectHttp, connectStdio, echo, type Agent } from './client.ts';
import { isAlive, sleep } from './processes.ts';
import { COLD_AGENTS, TOKENS, type Stack } from './stack.ts';
import { median, round } from './stats.ts';

export type ColdStartKind = 'ordinary' | 'contained' | 'direct';

export interface ColdStartResult {
  kind: ColdStartKind;
  samples: number[];
  median: number;
  min: number;
  max: number;
  errors: number;
  /**
   * Contained only: what containment adds, the median over the passes where both ran of this
   * pass's contained sample minus its ordinary one, taken back to back. Load that drifts over the
   * section moves both alike, so this says more than the difference of the two medians.
   */
  overOrdinary?: { median: number; pairs: number };
}

export async function measureColdStart(stack: Stack, options: { samples: number; log(line: string): void }): Promise<ColdStartResult[]> {
  const connect: Record<ColdStartKind, (i: number) => Promise<Agent>> = {
    ordinary: (i) => connectHttp(`${stack.url}/servers/everything/mcp`, TOKENS.coldPlain(i)),
    contained: (i) => connectHttp(`${stack.url}/servers/everything/mcp`, TOKENS.coldBoxed(i)),
    direct: () => connectStdio(),
  };
  const kinds = Object.keys(connect) as ColdStartKind[];
  // Each kind's samples by pass, so that a failed one leaves its pass out of the pairs instead of shifting them.
  const byPass: Record<ColdStartKind, Map<number, number>> = { ordinary: new Map(), contained: new Map(), direct: new Map() };
  const errors: Record<ColdStartKind, number> = { ordinary: 0, contained: 0, direct: 0 };
  for (let pass = -1; pass < Math.min(options.samples, COLD_AGENTS - 1); pass++) {
    for (const kind of kinds) {
      const spawnedBefore = stack.serverPids().length;
      const start = performance.now();
      let agent: Agent | undefined;
      try {
        agent = await connect[kind](pass + 1);
        await echo(agent.client, 'echo', `cold ${kind} ${pass}`);
        if (pass >= 0) byPass[kind].set(pass, performance.now() - start);
      } catch {
        if (pass >= 0) errors[kind]++;
      } finally {
        await agent?.close();
      }
      if (kind !== 'direct') await quiet(stack, spawnedBefore, `cold-${kind === 'ordinary' ? 'plain' : 'boxed'}-${pass + 1}`);
    }
  }
  return kinds.map((kind) => {
    const list = [...byPass[kind].values()].map((v) => round(v, 1));
    const result: ColdStartResult = { kind, samples: list, median: round(median(list), 1), min: Math.min(...list), max: Math.max(...list), errors: errors[kind] };
    if (kind === 'contained') {
      const over = pairedExcess(byPass.contained, byPass.ordinary);
      if (over !== null) result.overOrdinary = over;
    }
    options.log(`  ${kind}: median ${result.median} ms (min ${result.min}, max ${result.max}, ${result.errors} errors)${result.overOrdinary ? `, +${result.overOrdinary.median} ms over ordinary (median of ${result.overOrdinary.pairs} pairs)` : ''}`);
    return result;
  });
}

/** The median of `a − b` over the passes both have, or null when none; rounded to 0.1 ms. */
export function pairedExcess(a: ReadonlyMap<number, number>, b: ReadonlyMap<number, number>): { median: number; pairs: number } | null {
  const differences = [...a].flatMap(([pass, value]) => (b.has(pass) ? [value - b.get(pass)!] : []));
  return differences.length === 0 ? null : { median: round(median(differences), 1), pairs: differences.length };
}

/**
 * Waits (bounded) until the sample's own server has exited and the warm instance the pool starts
 * for that agent afterwards is ready, so neither lands in the next sample.
 */
async function quiet(stack: Stack, spawnedBefore: number, agent: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  const own = stack.serverPids()[spawnedBefore];
  while (Date.now() < deadline && ((own !== undefined && isAlive(own)) || !stack.warmReady().some((r) => r.agent === agent))) await sleep(20);
}
