/**
 * `switchyard check FILE|DIR …`: validates any Switchyard config file and prints every problem as
 * `path: message`. The kind of file is recognised by its content and, for trust profiles, by its
 * folder, so one command serves all four. A sidecar config dir is checked whole: every file in it
 * (`check-config-dir.ts`), and the trust profiles its files name must exist and resolve.
 *
 * A worker config is validated exactly as the runtime it will run on validates it, by the same
 * function (`parseWorkerConfigText`) that `switchyard worker` and the deployed bundle call:
 * `--runtime edge` (the default: `dist/worker.js`, Deno) or `--runtime node` (the single-machine
 * mode, which also serves top-level `{"type":"local"}` servers).
 *
 * @module
 */
import { statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ValidationError, formatIssue, parseWith, type ValidationIssue } from '../shared/validation.ts';
import { parseWorkerConfigText, type WorkerRuntime } from '../worker/config/worker-config.ts';
import { LocalError } from '../shared/errors.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { trustProfileFileSchema } from '../sidecar/trust/profile-schema.ts';
import { parseSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { configDirWarnings } from '../sidecar/sandbox/config-dir-exposure.ts';
import { describeFileProblems, readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { checkConfigDir } from './check-config-dir.ts';

export type ConfigKind = 'worker config' | 'sidecar config' | 'mcp.json' | 'trust profile';

/** Guesses what a file is; a file that fits none is checked as what it most resembles. */
export function kindOf(path: string, json: unknown): ConfigKind {
  const keys = typeof json === 'object' && json !== null && !Array.isArray(json) ? Object.keys(json) : [];
  if (keys.includes('mcpServers')) return 'mcp.json';
  if (basename(path) === 'sidecar.json' || keys.includes('entity-id') || keys.includes('key-file')) return 'sidecar config';
  if (basename(dirname(path)) === 'trust-profiles') return 'trust profile';
  if (keys.some((k) => k === 'agents' || k === 'hosts' || k === 'servers')) return 'worker config';
  if (keys.some((k) => k.includes('trust') || k.includes('filesystem') || k.includes('network') || k === 'environment')) return 'trust profile';
  return 'worker config';
}

/**
 * The sidecar config dir an `mcp.json` belongs to: `DIR/mcp-servers/`, `DIR/users/<user>/mcp-servers/`
 * or `DIR/machines/<entity-id>/mcp-servers/`. Relative `cwd`s resolve against it, as on the sidecar.
 */
export function configDirOfMcpFile(path: string): string {
  const servers = dirname(path);
  const owner = dirname(servers);
  const group = basename(dirname(owner));
  return basename(servers) === 'mcp-servers' && (group === 'users' || group === 'machines') ? dirname(dirname(owner)) : owner;
}

export interface CheckResult {
  kind: ConfigKind | 'file';
  /** What makes the file unusable: check exits 1. */
  issues: ValidationIssue[];
  /** What would work but should not be so (a server that exposes the config dir): printed, exit 0. */
  warnings: ValidationIssue[];
}

/**
 * Every problem in a file, or an empty list; never throws for bad content.
 *
 * @param known What the file is when its place says so (a config dir's files); guessed otherwise.
 */
export function checkFile(path: string, runtime: WorkerRuntime = 'edge', known?: ConfigKind): CheckResult {
  const read = readJsonFile(path);
  if (!read.ok) return { kind: 'file', issues: [read.issue], warnings: [] };
  const { text, json } = read;
  const kind = known ?? kindOf(path, json);
  try {
    if (kind === 'worker config') parseWorkerConfigText(text, { runtime });
    else if (kind === 'sidecar config') parseSidecarConfig(json);
    else if (kind === 'mcp.json') {
      const configDir = configDirOfMcpFile(path);
      return { kind, issues: [], warnings: configDirWarnings(configDir, parseMcpServersFile(json, configDir)) };
    } else parseWith(trustProfileFileSchema, json, 'trust profile');
    return { kind, issues: [], warnings: [] };
  } catch (error) {
    if (error instanceof ValidationError) return { kind, issues: [...error.issues], warnings: [] };
    throw error;
  }
}

/** `--runtime` as check names it; `deno` is an edge runtime, the default of `switchyard worker`. */
export function checkRuntime(value: string | undefined): WorkerRuntime {
  if (value === undefined || value === 'edge' || value === 'deno') return 'edge';
  if (value === 'node') return 'node';
  throw new LocalError('usage', `Unknown runtime "${value}": expected edge (the default, also for deno) or node`);
}

export async function runCheck(argv: string[]): Promise<number> {
  const { values, positionals: files } = parseArgs({ args: argv, options: { runtime: { type: 'string' } }, allowPositionals: true });
  const runtime = checkRuntime(values.runtime);
  if (files.length === 0) {
    process.stderr.write('switchyard check: name a file or a sidecar config dir to check, e.g. switchyard check worker.json\n');
    return 1;
  }
  let failed = false;
  for (const target of files) {
    const results = isDirectory(target) ? await checkConfigDir(target) : [{ file: target, ...checkFile(target, runtime) }];
    for (const result of results) {
      process.stdout.write(`${formatResult(result)}\n`);
      if (result.issues.length > 0) failed = true;
    }
  }
  return failed ? 1 : 0;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** `FILE: ok (kind)` with its warnings, or the problem report a failing command prints too. */
export function formatResult({ file, kind, issues, warnings }: CheckResult & { file: string }): string {
  if (issues.length > 0) return describeFileProblems(file, kind, issues);
  const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
  return [`${file}: ok (${kind}${warned})`, ...warnings.map((w) => `  warning: ${formatIssue(w)}`)].join('\n');
}
