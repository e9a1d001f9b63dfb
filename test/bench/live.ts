/**
 * The measurements that need the running stack (worker under Deno + CLI sidecar): echo latency
 * per variant, link cost, cold start, and concurrency with memory sampled at its peak. They run in
 * this order on one stack, so that the heaviest (64 sessions) comes last and cannot leave slow
 * teardowns behind for the others.
 *
 * @module
 */
import { burnIn } from './burn-in.ts';
import { connectStdio, echoLoop, modernAgent } from './client.ts';
import { measureColdStart, type ColdStartResult } from './cold-start.ts';
import { measureConcurrency, type ConcurrencyResult } from './concurrency.ts';
import { measureFloor, type FloorResult } from './floor.ts';
import { measureLatency, type VariantId, type VariantResult } from './latency.ts';
import { measureLinkCost, type LinkCostResult } from './link-cost.ts';
import { medianServerKb, perSession, snapshot, treeRssKb, type MemoryResult } from './memory.ts';
import { isAlive, rssKb, sleep, type ProcessRegistry } from './processes.ts';
import { measureScale, type ScaleResult } from './scale.ts';
import { startStack, TOKENS, type Stack } from './stack.ts';
import { measureWarmStart, type WarmStartResult } from './warm-start.ts';

export const LIVE_SECTIONS = ['latency', 'link', 'cold', 'warm', 'concurrency', 'floor', 'scale'] as const;

export interface LiveResults {
  latency: VariantResult[];
  linkCost: LinkCostResult | null;
  coldStart: ColdStartResult[];
  concurrency: ConcurrencyResult[];
  memory: MemoryResult | null;
  warmStart: WarmStartResult | null;
  scale: ScaleResult | null;
  floor: FloorResult | null;
}

export interface LiveSettings {
  calls: number;
  warmup: number;
  /** Echo calls every gateway process serves before it is measured (`burn-in.ts`). */
  burnIn: number;
  /** Round-robin repetitions of the latency variants. */
  rounds: number;
  levels: number[];
  concurrencyCalls: number;
  coldSamples: number;
  /** Cold/warm samples on `/mcp` with the three demo servers. */
  warmSamples: number;
  /** Sessions opened at once for the warm/cold open-time comparison (0: not run). */
  fleet: number;
  scaleSessions: number[];
  scalePayloads: number[];
  scaleCalls: number;
  variants?: VariantId[];
}

/** Runs one named section; null when it is not selected or failed (the runner records why). */
export type Section = <T>(name: string, run: () => Promise<T>) => Promise<T | null>;

export async function measureLive(registry: ProcessRegistry, settings: LiveSettings, section: Section, log: (line: string) => void): Promise<LiveResults> {
  log('\nstarting the worker (deno) and the sidecar (CLI)…');
  const stack = await startStack(registry);
  try {
    const fresh = snapshot(stack);
    await warmUp(stack, settings.burnIn);
    const peakSessions = Math.max(...settings.levels);
    const memory: MemoryResult = { fresh, idle: snapshot(stack), beforePeak: null, atPeak: null, peakSessions, perSessionKb: { worker: null, sidecar: null }, serverKb: null, directServerKb: null };
    const only = settings.variants;
    const latency = (await section('latency', () => measureLatency(registry, stack, { calls: settings.calls, warmup: settings.warmup, burnIn: settings.burnIn, rounds: settings.rounds, ...(only ? { only } : {}), log }))) ?? [];
    const linkCost = await section('link', () => measureLinkCost(registry, stack, { calls: 200, log }));
    const coldStart = (await section('cold', () => measureColdStart(stack, { samples: settings.coldSamples, log }))) ?? [];
    const warmStart = await section('warm', () => measureWarmStart(registry, stack, { samples: settings.warmSamples, fleet: settings.fleet, log }));
    const concurrency = await section('concurrency', async () => {
      const spawnedBefore = stack.serverPids().length;
      const results = await measureConcurrency(registry, stack, {
        levels: settings.levels,
        totalCalls: settings.concurrencyCalls,
        burnIn: settings.burnIn,
        log,
        beforePeak: () => (memory.beforePeak = snapshot(stack)),
        atPeak: async () => {
          memory.atPeak = snapshot(stack);
          memory.serverKb = medianServerKb(stack.serverPids().slice(spawnedBefore));
        },
      });
      memory.perSessionKb = perSession(memory.beforePeak, memory.atPeak, peakSessions);
      const direct = await connectStdio();
      await echoLoop(direct.client, 'echo', 0, 20, 'direct rss');
      memory.directServerKb = direct.serverPid === undefined ? null : treeRssKb(direct.serverPid);
      await direct.close();
      log(`  memory now: worker ${rssKb(stack.worker.pid)} KiB, sidecar ${rssKb(stack.sidecar.pid)} KiB; per session ${JSON.stringify(memory.perSessionKb)} KiB; server ${memory.serverKb} KiB`);
      return results;
    });
    const floor = await section('floor', () => measureFloor(registry, stack, { calls: settings.calls, warmup: settings.warmup, burnIn: settings.burnIn, levels: settings.levels, concurrencyCalls: settings.concurrencyCalls, log }));
    const scale = await section('scale', () => measureScale(registry, stack, { sessions: settings.scaleSessions, payloads: settings.scalePayloads, totalCalls: settings.scaleCalls, burnIn: settings.burnIn, log }));
    return { latency, linkCost, coldStart, concurrency: concurrency ?? [], memory, warmStart, scale, floor };
  } finally {
    await registry.stopAll();
    stack.dispose();
  }
}

/**
 * The stack's burn-in (`burn-in.ts`): `calls` echo calls on each of the worker's and the sidecar's
 * code paths, so that every row measures them at their optimized tiers, as the other gateways'
 * rows measure theirs, and no row pays for V8's compiling. Then waits until those sessions'
 * servers have exited.
 */
async function warmUp(stack: Stack, calls: number): Promise<void> {
  const paths: Array<[string, string, string]> = [
    ['/servers/everything/mcp', TOKENS.plain, 'echo'],
    ['/mcp', TOKENS.plain, 'everything__echo'],
    ['modern', TOKENS.modern, 'echo'],
    ['/servers/everything/mcp', TOKENS.boxed, 'echo'],
  ];
  for (const [path, token, tool] of paths) {
    if (path !== 'modern') {
      await burnIn(`${stack.url}${path}`, calls, token, tool);
      continue;
    }
    const agent = modernAgent(`${stack.url}/servers/everything/mcp`, token);
    await echoLoop(agent, tool, 0, calls, 'burn-in');
    await agent.close();
  }
  const deadline = Date.now() + 5_000;
  while (stack.serverPids().some(isAlive) && Date.now() < deadline) await sleep(20);
  await sleep(500);
}
