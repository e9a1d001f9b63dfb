/**
 * The figures each resilience file reports: agent sessions opened, tool calls made, faults
 * injected, bad inputs tried, and failures (outcomes the suite did not expect: a lost or
 * misrouted call, a canary call that failed, a crash). Plus free-form measurements (times,
 * memory) worth printing.
 *
 * vitest runs test files in separate worker processes, so there is no shared counter: each file
 * prints one line (`resilience[file]: …`) from its `afterAll` and writes the same figures as JSON
 * to `test-results/resilience/<run id>/<file>.json`; `summary.global.ts` adds them up after the
 * run and prints the combined line.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { RUNS_DIR } from './summary.global.ts';

/**
 * Per-test timeout of the resilience files: their tests drive real processes, and on a loaded
 * 2-core machine a corpus that takes 3 s alone can take 20 s. Not a timing assertion: a bound on
 * a hang.
 */
export const SLOW_MS = 90_000;

export interface FigureCounts {
  sessions: number;
  calls: number;
  faults: number;
  inputs: number;
  failures: number;
}

export class Figures implements FigureCounts {
  sessions = 0;
  calls = 0;
  faults = 0;
  inputs = 0;
  failures = 0;
  /** Measurements worth printing, e.g. `{ 'relink ms': 412 }`. */
  readonly notes: Record<string, number | string> = {};

  constructor(readonly file: string) {}

  note(name: string, value: number | string): void {
    this.notes[name] = value;
  }

  /** Prints the file's line and writes its JSON; call once, from `afterAll`. */
  report(): string {
    const line = `resilience[${this.file}]: ${formatCounts(this)}${Object.keys(this.notes).length > 0 ? ` | ${Object.entries(this.notes).map(([k, v]) => `${k}: ${v}`).join(', ')}` : ''}`;
    console.info(line);
    // Without the suite's global setup (another config) there is no run id: the line is all there is.
    const run = inject('resilienceRun');
    if (run === undefined) return line;
    const dir = join(RUNS_DIR, run);
    mkdirSync(dir, { recursive: true });
    const { file, sessions, calls, faults, inputs, failures, notes } = this;
    writeFileSync(join(dir, `${file}.json`), JSON.stringify({ file, sessions, calls, faults, inputs, failures, notes }, null, 2));
    return line;
  }
}

export function formatCounts(c: FigureCounts): string {
  return `${c.sessions} sessions, ${c.calls} calls, ${c.faults} faults injected, ${c.inputs} inputs tried, ${c.failures} failures`;
}
