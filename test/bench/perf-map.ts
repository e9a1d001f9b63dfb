/**
 * Node flags that name JIT frames for Linux `perf`: `--perf-basic-prof` writes the map perf reads
 * (`/tmp/perf-<pid>.map`), and in Node 20 also a V8 code log, `isolate-…-v8.log`, into the working
 * directory, which is the repository's when a bench tool runs. `--logfile` sends that log to `dir`.
 *
 * @module
 */
import { join } from 'node:path';

export function nodePerfMapFlags(dir: string): string[] {
  return ['--perf-basic-prof', `--logfile=${join(dir, 'v8.log')}`];
}
