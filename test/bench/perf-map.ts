/**
 * Runtime flags that name JIT frames for Linux `perf`: V8's `--perf-basic-prof` writes the map perf
 * reads (`/tmp/perf-<pid>.map`), and also a V8 code log, `isolate-…-v8.log`, into the working
 * directory, which is the repository's when a bench tool runs. `--logfile` sends that log to `dir`.
 *
 * @module
 */
import { join } from 'node:path';

export function nodePerfMapFlags(dir: string): string[] {
  return ['--perf-basic-prof', `--logfile=${join(dir, 'v8.log')}`];
}

/** The same for Deno, as its one `--v8-flags` argument. */
export function denoPerfMapFlag(dir: string): string {
  return `--v8-flags=--perf-basic-prof,--logfile=${join(dir, 'v8.log')}`;
}
