/**
 * Runs the hot-path micro-benchmarks (`hot-path.ts`, `body-read.ts`) each in a fresh process of
 * the runtime it belongs to — the link and bridge under Node (the sidecar's runtime), the
 * passthrough session and the body read under Deno (the worker's) — and collects their JSON lines.
 *
 * @module
 */
import type { HotPathResult } from './hot-path.ts';
import { DENO, type ProcessRegistry } from './processes.ts';

export interface HotPathResults {
  /** Worker channel → link → sidecar bridge → server transport and back, under Node. */
  link: HotPathResult;
  /** One tools/call POST through `PassthroughSession`, under Deno. */
  passthrough: HotPathResult;
  /** µs to get a POST body under `Deno.serve`: the SDK's stream reader vs `Request.text()` (`body-read.ts`). */
  bodyRead: { sdkReaderUs: number; requestTextUs: number } | null;
}

export async function measureHotPath(registry: ProcessRegistry, log: (line: string) => void): Promise<HotPathResults> {
  const run = async (name: string, command: string, args: string[]): Promise<HotPathResult> => {
    const proc = registry.spawn(`hot-path ${name}`, command, args);
    const code = await proc.exited;
    const line = proc.stdout().trim().split('\n').pop() ?? '';
    if (code !== 0 || !line.startsWith('{')) throw new Error(`hot-path ${name} failed (${code}): ${proc.stderr().slice(-1000)}`);
    const result = JSON.parse(line) as HotPathResult;
    log(`  ${name}: ${result.cpuMinUs} µs CPU per round trip (best of ${result.rounds} rounds; wall best ${result.minUs}, median ${result.medianUs})`);
    return result;
  };
  const link = await run('link', process.execPath, ['--import', 'tsx', 'test/bench/hot-path-main.ts', 'link']);
  const passthrough = await run('passthrough', DENO, ['run', '--quiet', '--allow-env', '--allow-read', 'test/bench/hot-path-main.ts', 'passthrough']);
  const proc = registry.spawn('body-read', DENO, ['run', '--quiet', '--allow-net=127.0.0.1', '--allow-read', 'test/bench/body-read.ts']);
  const ok = (await proc.exited) === 0;
  const bodyRead = ok ? (JSON.parse(proc.stdout().trim().split('\n').pop()!) as { sdkReaderUs: number; requestTextUs: number }) : null;
  log(bodyRead === null ? `  body-read failed: ${proc.stderr().slice(-500)}` : `  POST body under Deno.serve: SDK reader ${bodyRead.sdkReaderUs} µs, Request.text() ${bodyRead.requestTextUs} µs`);
  return { link, passthrough, bodyRead };
}
