/**
 * Warm against cold starts on `/mcp` with the three demo servers (everything, filesystem, memory):
 * from the agent's `initialize` to the first tool result (`everything__echo`), as an agent waits
 * for it. Each sample uses its own agent (`demo-<i>`): its first session is cold (the host's warm
 * pool knows nothing of that agent yet, so every server is spawned and initialized while the agent
 * waits); then, once the sidecar has logged a ready warm instance of each server for that agent,
 * its second session is warm. Samples are interleaved (cold, warm, cold, …) so background load
 * hits both alike.
 *
 * Also: how long opening `fleet` sessions at once takes on `/servers/everything/mcp`, cold (no
 * pool) and warm (on a second stack whose sidecar pool is sized for them), both measured here.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { connectHttp, echo, type Agent } from './client.ts';
import { openSessions } from './concurrency.ts';
import { cpuMs, sleep, type ProcessRegistry } from './processes.ts';
import { DEMO_AGENTS, DEMO_SERVERS, startStack, TOKENS, type Stack } from './stack.ts';
import { median, round } from './stats.ts';

export interface WarmStartResult {
  cold: Summary;
  warm: Summary;
  /** Opening `sessions` sessions at once, cold and with a pool sized for them; null when not run. */
  fleet: { sessions: number; coldMs: number; warmMs: number; coldErrors: number; warmErrors: number } | null;
}

interface Summary {
  samples: number[];
  median: number;
  min: number;
  max: number;
  errors: number;
}

const READY_TIMEOUT_MS = 60_000;
const FLEET_READY_TIMEOUT_MS = 300_000;

export async function measureWarmStart(registry: ProcessRegistry, stack: Stack, options: { samples: number; fleet: number; log(line: string): void }): Promise<WarmStartResult> {
  const cold: number[] = [];
  const warm: number[] = [];
  let coldErrors = 0;
  let warmErrors = 0;
  for (let i = 0; i < Math.min(options.samples, DEMO_AGENTS); i++) {
    const agent = `demo-${i}`;
    const once = () => firstToolResult(`${stack.url}/mcp`, TOKENS.demo(i), `${agent}`);
    const c = await once();
    if (c === null) coldErrors++;
    else cold.push(c);
    await waitFor(() => DEMO_SERVERS.every((server) => stack.warmReady().some((r) => r.agent === agent && r.server === server)), `warm instances of ${agent}`);
    const w = await once();
    if (w === null) warmErrors++;
    else warm.push(w);
  }
  const result: WarmStartResult = { cold: summary(cold, coldErrors), warm: summary(warm, warmErrors), fleet: null };
  options.log(`  /mcp with ${DEMO_SERVERS.length} servers, initialize → first tool result: cold median ${result.cold.median} ms, warm median ${result.warm.median} ms`);
  if (options.fleet > 0) result.fleet = await measureFleet(registry, stack, options.fleet, options.log);
  return result;
}

/** `initialize` → first tool result on `url`, in ms; null when it failed. */
async function firstToolResult(url: string, token: string, tag: string): Promise<number | null> {
  const start = performance.now();
  let agent: Agent | undefined;
  try {
    agent = await connectHttp(url, token);
    await echo(agent.client, 'everything__echo', `warm ${tag}`);
    return round(performance.now() - start, 1);
  } catch {
    return null;
  } finally {
    await agent?.close();
  }
}

/**
 * Opening `sessions` sessions: cold on the main stack (its pool holds one instance per agent and
 * server at most), warm on a second stack whose sidecar keeps `sessions` instances for the agent.
 */
async function measureFleet(registry: ProcessRegistry, stack: Stack, sessions: number, log: (line: string) => void): Promise<WarmStartResult['fleet']> {
  const open = async (s: Stack) => {
    const cpu = { worker: cpuMs(s.worker.pid) ?? 0, sidecar: cpuMs(s.sidecar.pid) ?? 0, client: process.cpuUsage() };
    const spawned = s.serverPids().length;
    const start = performance.now();
    const { agents, errors } = await openSessions(`${s.url}/servers/everything/mcp`, sessions, TOKENS.plain);
    const ms = round(performance.now() - start, 1);
    const client = process.cpuUsage(cpu.client);
    // Where the opening's time went: CPU of each process while the sessions opened, and how many
    // servers the sidecar spawned meanwhile (cold sessions' own, or the warm pool's refills).
    const spent = `worker ${Math.round((cpuMs(s.worker.pid) ?? 0) - cpu.worker)} ms CPU, sidecar ${Math.round((cpuMs(s.sidecar.pid) ?? 0) - cpu.sidecar)} ms, bench client ${Math.round((client.user + client.system) / 1000)} ms; ${s.serverPids().length - spawned} servers spawned meanwhile`;
    await Promise.all(agents.map((a) => echo(a.client, 'echo', 'fleet').catch(() => {})));
    await Promise.all(agents.map((a) => a.close()));
    return { ms, errors, spent };
  };
  const coldRun = await open(stack);
  const sized = await startStack(registry, { sidecarConfig: { 'warm-pool': { size: sessions, 'max-instances': sessions } } });
  try {
    // The pool learns the agent's `initialize` from its first session, then fills in the background.
    const first = await connectHttp(`${sized.url}/servers/everything/mcp`, TOKENS.plain);
    await echo(first.client, 'echo', 'fleet learn');
    await first.close();
    // 64 server-everything starts, two at a time, take a minute or more on a loaded two-core machine.
    const ready = () => sized.warmReady().filter((r) => r.agent === 'plain').length;
    await waitFor(() => ready() >= sessions, `${sessions} warm instances`, FLEET_READY_TIMEOUT_MS, () => `${ready()} ready`);
    const warmRun = await open(sized);
    log(`  opening ${sessions} sessions: cold ${coldRun.ms} ms (${coldRun.errors} errors; ${coldRun.spent}), warm ${warmRun.ms} ms (${warmRun.errors} errors; ${warmRun.spent})`);
    return { sessions, coldMs: coldRun.ms, warmMs: warmRun.ms, coldErrors: coldRun.errors, warmErrors: warmRun.errors };
  } finally {
    await registry.stop(sized.sidecar);
    await registry.stop(sized.worker);
    sized.dispose();
  }
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = READY_TIMEOUT_MS, progress?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}${progress ? ` (${progress()})` : ''}`);
    await sleep(20);
  }
}

function summary(list: number[], errors: number): Summary {
  return { samples: list, median: round(median(list), 1), min: Math.min(...list), max: Math.max(...list), errors };
}
