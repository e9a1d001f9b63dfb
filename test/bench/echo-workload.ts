/**
 * A fixed end-to-end workload for before/after comparisons of a change, meant to be timed from
 * outside as a whole process (`/usr/bin/time -v`, or any harness that runs it several times,
 * A B A B): starts the stack (worker under Deno, the sidecar from its bundle), runs `--calls`
 * sequential echo calls through one variant, stops everything, and prints one JSON line with the
 * worker's and the sidecar's CPU µs per call during the loop (from /proc), so the figure for the
 * hot path is read apart from start-up.
 *
 *   node --import tsx test/bench/echo-workload.ts --variant b --calls 2000
 *
 * Variants: `b` legacy session on /servers/everything/mcp, `m` modern stateless request there,
 * `d` /mcp. `--payload N` adds N bytes to each echo.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { connectHttp, echoLoop, modernAgent, type Agent } from './client.ts';
import { cpuMs, installCleanup, ProcessRegistry } from './processes.ts';
import { startStack, TOKENS } from './stack.ts';
import { summarize } from './stats.ts';

const { values } = parseArgs({
  options: { variant: { type: 'string', default: 'b' }, calls: { type: 'string', default: '2000' }, payload: { type: 'string', default: '0' } },
});
const registry = new ProcessRegistry();
const cleanup = installCleanup(registry);

async function main(): Promise<void> {
  const stack = await startStack(registry);
  const path = values.variant === 'd' ? '/mcp' : '/servers/everything/mcp';
  const tool = values.variant === 'd' ? 'everything__echo' : 'echo';
  const agent: Agent = values.variant === 'm' ? modernAgent(`${stack.url}${path}`, TOKENS.modern) : await connectHttp(`${stack.url}${path}`, TOKENS.plain);
  const payload = ' ' + 'x'.repeat(Number(values.payload));
  await echoLoop(agent, tool, 0, 200, 'workload warmup', payload);
  const before = { worker: cpuMs(stack.worker.pid) ?? 0, sidecar: cpuMs(stack.sidecar.pid) ?? 0 };
  const timed = await echoLoop(agent, tool, Number(values.calls), 0, 'workload', payload);
  const after = { worker: cpuMs(stack.worker.pid) ?? 0, sidecar: cpuMs(stack.sidecar.pid) ?? 0 };
  const s = summarize(timed);
  const perCall = (ms: number) => Math.round((ms * 1000) / Math.max(1, s.calls));
  console.log(JSON.stringify({ variant: values.variant, calls: s.calls, errors: s.errors, p50: s.p50, p99: s.p99, workerUs: perCall(after.worker - before.worker), sidecarUs: perCall(after.sidecar - before.sidecar) }));
  await agent.close();
}

main()
  .then(cleanup, async (error: unknown) => {
    process.stderr.write(`echo-workload: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanup();
    process.exitCode = 1;
  })
  .finally(() => process.exit());
