/**
 * Cold start: from the agent's `initialize` to the first tool result, server spawn included —
 * what an agent waits for the first time it touches a server. Measured for Switchyard ordinary
 * (`plain` agent) and contained (`boxed`, bubblewrap), with direct stdio (the SDK client spawning
 * the server itself) as the floor.
 *
 * Samples are interleaved (ordinary, contained, direct, ordinary, …) so that background noise
 * hits every kind alike, one untimed round first warms the worker's and sidecar's code paths, and
 * each sample starts only once every earlier server process has exited, so the teardown of the
 * previous sample is never measured. The median is reported, with min and max.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { connectHttp, connectStdio, echo, type Agent } from './client.ts';
import { isAlive, sleep } from './processes.ts';
import { TOKENS, type Stack } from './stack.ts';
import { median, round } from './stats.ts';

export type ColdStartKind = 'ordinary' | 'contained' | 'direct';

export interface ColdStartResult {
  kind: ColdStartKind;
  samples: number[];
  median: number;
  min: number;
  max: number;
  errors: number;
}

export async function measureColdStart(stack: Stack, options: { samples: number; log(line: string): void }): Promise<ColdStartResult[]> {
  const connect: Record<ColdStartKind, () => Promise<Agent>> = {
    ordinary: () => connectHttp(`${stack.url}/servers/everything/mcp`, TOKENS.plain),
    contained: () => connectHttp(`${stack.url}/servers/everything/mcp`, TOKENS.boxed),
    direct: () => connectStdio(),
  };
  const kinds = Object.keys(connect) as ColdStartKind[];
  const samples: Record<ColdStartKind, number[]> = { ordinary: [], contained: [], direct: [] };
  const errors: Record<ColdStartKind, number> = { ordinary: 0, contained: 0, direct: 0 };
  for (let pass = -1; pass < options.samples; pass++) {
    for (const kind of kinds) {
      await serversGone(stack);
      const start = performance.now();
      let agent: Agent | undefined;
      try {
        agent = await connect[kind]();
        await echo(agent.client, 'echo', `cold ${kind} ${pass}`);
        if (pass >= 0) samples[kind].push(performance.now() - start);
      } catch {
        if (pass >= 0) errors[kind]++;
      } finally {
        await agent?.close();
      }
    }
  }
  return kinds.map((kind) => {
    const list = samples[kind].map((v) => round(v, 1));
    const result = { kind, samples: list, median: round(median(list), 1), min: Math.min(...list), max: Math.max(...list), errors: errors[kind] };
    options.log(`  ${kind}: median ${result.median} ms (min ${result.min}, max ${result.max}, ${result.errors} errors)`);
    return result;
  });
}

/** Waits (bounded) until every server the sidecar started so far has exited. */
async function serversGone(stack: Stack): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (stack.serverPids().some(isAlive) && Date.now() < deadline) await sleep(20);
}
