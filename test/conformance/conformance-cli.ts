/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, server mode) run as a
 * process against one URL, and its results read back as one status per check.
 *
 * Two releases are installed: 0.1.16 (`--suite active|all`, the legacy wire) and 0.2.0-alpha.12
 * as `@modelcontextprotocol/conformance-modern` (`--requirements 2026-07-28`, the modern wire); a
 * run with `requirements` uses the second.
 *
 * The CLI needs Node 22 (`fs.globSync`), so it runs under the repo's Deno binary. With `-o DIR` it
 * writes `DIR/server-<scenario>-<timestamp>/checks.json` per scenario: an array of checks, each
 * with an `id` and a `status` (SUCCESS, FAILURE, WARNING, INFO, SKIPPED). A scenario may report
 * the same id more than once (e.g. one INFO line per SSE event); such ids get their worst status.
 * The CLI's exit code only says whether anything failed, which is expected here (server-everything
 * lacks the conformance server's test tools), so it is not used; a run that wrote no results at
 * all throws with the CLI's output.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DENO, REPO } from '../support/paths.ts';
import type { ProcessSet } from '../support/processes.ts';

export const CONFORMANCE_CLI = `${REPO}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
export const MODERN_CONFORMANCE_CLI = `${REPO}node_modules/@modelcontextprotocol/conformance-modern/dist/index.js`;

/** Which scenarios a run covers: a 0.1.16 suite, or the 0.2 suite's requirements of a spec revision. */
export type Selection = { suite: 'active' | 'all' } | { requirements: '2026-07-28' };

export type CheckStatus = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';

export interface CheckResult {
  status: CheckStatus;
  /** The check's `errorMessage`, when it gave one. */
  message?: string;
}

/** `<scenario>/<check id>` → result, for every check of every scenario that ran. */
export type SuiteResults = Map<string, CheckResult>;

/** Worse statuses win when one check id is reported several times. */
const RANK: Record<CheckStatus, number> = { FAILURE: 4, WARNING: 3, SUCCESS: 2, INFO: 1, SKIPPED: 0 };

interface RawCheck {
  id?: unknown;
  status?: unknown;
  errorMessage?: unknown;
}

/** Runs `conformance server --url URL (--suite SUITE | --requirements REV) -o OUT_DIR` and reads the results. */
export async function runConformanceSuite(procs: ProcessSet, url: string, outDir: string, selection: Selection = { suite: 'active' }): Promise<SuiteResults> {
  const [cli, flags] = 'requirements' in selection ? [MODERN_CONFORMANCE_CLI, ['--requirements', selection.requirements]] : [CONFORMANCE_CLI, ['--suite', selection.suite]];
  const proc = procs.spawn(DENO, ['run', '-A', cli, 'server', '--url', url, ...flags, '-o', outDir]);
  await proc.exited;
  const results = readResults(outDir);
  if (results.size === 0) {
    throw new Error(`The conformance CLI wrote no results for ${url}\nstdout:\n${proc.stdout().slice(-4000)}\nstderr:\n${proc.stderr().slice(-4000)}`);
  }
  return results;
}

/** Reads every `server-<scenario>-<timestamp>/checks.json` under `outDir`. */
export function readResults(outDir: string): SuiteResults {
  const results: SuiteResults = new Map();
  if (!existsSync(outDir)) return results;
  for (const entry of readdirSync(outDir, { withFileTypes: true })) {
    const match = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry.name);
    if (!entry.isDirectory() || match === null) continue;
    const file = join(outDir, entry.name, 'checks.json');
    if (!existsSync(file)) continue;
    const checks = JSON.parse(readFileSync(file, 'utf8')) as RawCheck[];
    for (const check of checks) {
      if (typeof check.id !== 'string' || typeof check.status !== 'string' || !(check.status in RANK)) continue;
      const key = `${match[1]}/${check.id}`;
      const status = check.status as CheckStatus;
      const previous = results.get(key);
      if (previous !== undefined && RANK[previous.status] >= RANK[status]) continue;
      results.set(key, { status, ...(typeof check.errorMessage === 'string' ? { message: check.errorMessage } : {}) });
    }
  }
  return results;
}

/** Scenario names present in a result set. */
export function scenariosOf(results: SuiteResults): string[] {
  return [...new Set([...results.keys()].map((key) => key.slice(0, key.indexOf('/'))))].sort();
}

/** Keys whose status is SUCCESS. */
export function passed(results: SuiteResults): string[] {
  return [...results].filter(([, r]) => r.status === 'SUCCESS').map(([key]) => key).sort();
}

/** One check's result as a line of a failure message. */
export function describeResult(result: CheckResult | undefined): string {
  if (result === undefined) return 'not reported';
  return `${result.status}${result.message !== undefined ? `: ${result.message.slice(0, 300)}` : ''}`;
}

/** `passed/decided` (INFO and SKIPPED checks decide nothing). */
export function score(suite: SuiteResults): string {
  const decided = [...suite.values()].filter((r) => r.status === 'SUCCESS' || r.status === 'FAILURE').length;
  return `${passed(suite).length}/${decided}`;
}
