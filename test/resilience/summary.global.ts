/**
 * vitest global setup for the resilience suite: gives the run an id and, after it, prints one
 * combined line with the totals of every resilience file that ran in this run:
 *
 *   resilience (7 files): 120 sessions, 10800 calls, 60 faults injected, 3100 inputs tried, 0 failures
 *
 * Test files run in separate worker processes and share nothing, so each writes its figures to
 * `test-results/resilience/<run id>/<file>.json` (see `figures.ts`); the run id reaches them
 * through `provide`/`inject`, so two vitest runs at once (other engineers' runs included) never
 * count each other's files. The combined figures go to `test-results/resilience.json`.
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Id of this vitest run, naming its folder of resilience figures. */
    resilienceRun: string;
  }
}

const RESULTS = fileURLToPath(new URL('../../test-results/', import.meta.url));
export const RUNS_DIR = join(RESULTS, 'resilience');
const KEYS = ['sessions', 'calls', 'faults', 'inputs', 'failures'] as const;
const DAY_MS = 24 * 3600 * 1000;

let run = '';

export function setup(project: TestProject): void {
  run = `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`;
  project.provide('resilienceRun', run);
  if (!existsSync(RUNS_DIR)) return;
  for (const old of readdirSync(RUNS_DIR)) {
    const path = join(RUNS_DIR, old);
    if (Date.now() - statSync(path).mtimeMs > DAY_MS) rmSync(path, { recursive: true, force: true });
  }
}

export function teardown(): void {
  const dir = join(RUNS_DIR, run);
  if (run === '' || !existsSync(dir)) return;
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  const totals = Object.fromEntries(KEYS.map((k) => [k, 0])) as Record<(typeof KEYS)[number], number>;
  const perFile: Record<string, unknown> = {};
  for (const file of files) {
    const figures = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, number> & { file: string };
    for (const key of KEYS) totals[key] += Number(figures[key] ?? 0);
    perFile[figures.file] = figures;
  }
  const line =
    `resilience (${files.length} file${files.length === 1 ? '' : 's'}): ${totals.sessions} sessions, ${totals.calls} calls, ` +
    `${totals.faults} faults injected, ${totals.inputs} inputs tried, ${totals.failures} failures`;
  writeFileSync(join(RESULTS, 'resilience.json'), JSON.stringify({ run, ...totals, files: perFile }, null, 2));
  process.stdout.write(`\n${line}\n`);
}
