/**
 * Concurrency against (b) `/servers/everything/mcp`: N agent sessions (each its own server
 * process), then every session calling `echo` sequentially, all sessions at once. Reported per
 * level: throughput over the wall time of the call phase, latency percentiles over every call,
 * errors (a failed call or a session that did not open), and how long opening all N took.
 *
 * Sessions are opened at most `OPEN_PARALLEL` at a time: opening 64 at once on two cores measures
 * the scheduler, and the open time is reported separately anyway. While the largest level is still
 * open, `atPeak` runs (memory is sampled there), then every session is closed.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { connectHttp, echo, echoLoop, type Agent, type Timed } from './client.ts';
import { TOKENS, type Stack } from './stack.ts';
import { mergeParallel, round, summarize, type LatencySummary } from './stats.ts';

const OPEN_PARALLEL = 16;

export interface ConcurrencyResult {
  sessions: number;
  callsPerSession: number;
  openMs: number;
  openErrors: number;
  summary: LatencySummary;
}

/** Calls per session so each level does enough work to measure: 500, 100, 20 for 1, 8, 64. */
export function callsPerSession(sessions: number, total: number): number {
  return Math.max(20, Math.ceil(total / sessions));
}

export async function measureConcurrency(
  stack: Stack,
  options: {
    levels: readonly number[];
    totalCalls: number;
    /** Runs just before the largest level's sessions are opened, and while they are all open. */
    beforePeak?: () => void;
    atPeak?: (agents: readonly Agent[]) => Promise<void>;
    log(line: string): void;
  },
): Promise<ConcurrencyResult[]> {
  const results: ConcurrencyResult[] = [];
  const peak = Math.max(...options.levels);
  for (const sessions of options.levels) {
    if (sessions === peak) options.beforePeak?.();
    const openStart = performance.now();
    const { agents, errors: openErrors } = await openSessions(`${stack.url}/servers/everything/mcp`, sessions);
    const openMs = round(performance.now() - openStart, 1);
    try {
      const calls = callsPerSession(sessions, options.totalCalls);
      // One untimed call per session first, so every server has answered once (JIT, lazy init).
      await Promise.all(agents.map((a, i) => echo(a.client, 'echo', `c${sessions}-${i} warmup`).catch(() => {})));
      const start = performance.now();
      const loops: Timed[] = await Promise.all(agents.map((a, i) => echoLoop(a.client, 'echo', calls, 0, `c${sessions}-${i}`)));
      const merged = mergeParallel(loops, performance.now() - start);
      merged.errors += openErrors;
      const summary = summarize(merged);
      results.push({ sessions, callsPerSession: calls, openMs, openErrors, summary });
      options.log(
        `  ${sessions} session(s) × ${calls} calls: ${summary.callsPerSec} calls/s, p50 ${summary.p50} ms, p99 ${summary.p99} ms, ${summary.errors} errors (open ${openMs} ms)`,
      );
      if (sessions === peak) await options.atPeak?.(agents);
    } finally {
      await Promise.all(agents.map((a) => a.close()));
    }
  }
  return results;
}

/** Opens `count` sessions, `OPEN_PARALLEL` at a time; failures are counted, not thrown. */
async function openSessions(url: string, count: number): Promise<{ agents: Agent[]; errors: number }> {
  const agents: Agent[] = [];
  let errors = 0;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      try {
        agents.push(await connectHttp(url, TOKENS.plain));
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(OPEN_PARALLEL, count) }, worker));
  return { agents, errors };
}
