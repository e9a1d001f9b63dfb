/**
 * One config file checked on its own: what it is (by content and place) and every problem in it,
 * as `path: message`. Used by `switchyard check FILE` and, per file, by `check DIR`.
 *
 * @module
 */
import { basename, dirname } from 'node:path';
import { ValidationError } from '../shared/validation.ts';
import { parseWorkerConfigText, type WorkerConfig, type WorkerRuntime } from '../worker/config/worker-config.ts';
import { cloudflareConfigWarnings, parseCloudflareConfigText, secretSizeIssues } from '../worker/adapters/cloudflare/cloudflare-config.ts';
import { workerConfigWarnings } from '../worker/config/config-warnings.ts';
import { readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { type CheckResult, checkSidecarFile, type ConfigKind, unusableFile } from './check-sidecar-file.ts';
import { auditFileIssues } from './check-audit-file.ts';

export { type CheckResult, configDirOfMcpFile, type ConfigKind } from './check-sidecar-file.ts';

/**
 * Where a worker config will run, as check names it: a runtime of `switchyard worker`, or
 * `cloudflare`, the Workers bundle, which refuses more than the edge does and reads the config
 * from a secret of bounded size.
 */
export type CheckRuntime = WorkerRuntime | 'cloudflare';

/** A worker config parsed by the very function its runtime parses it with; throws `ValidationError`. */
export function parseCheckedWorkerConfig(text: string, runtime: CheckRuntime): WorkerConfig {
  return runtime === 'cloudflare' ? parseCloudflareConfigText(text) : parseWorkerConfigText(text, { runtime });
}

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
 * Every problem in a file, or an empty list; never throws for bad content.
 *
 * @param known What the file is when its place says so (a config dir's files); guessed otherwise.
 */
export function checkFile(path: string, runtime: CheckRuntime = 'edge', known?: ConfigKind): CheckResult {
  const read = readJsonFile(path);
  if (!read.ok) return unusableFile(path, read.issue);
  const { text, json } = read;
  const kind = known ?? kindOf(path, json);
  if (kind !== 'worker config') return checkSidecarFile(path, kind);
  // Told beside any other problem: fixing those rarely makes a config small enough.
  const size = runtime === 'cloudflare' ? secretSizeIssues(text) : [];
  try {
    const config = parseCheckedWorkerConfig(text, runtime);
    // Workers refuse an audit.file in the parse above; elsewhere it is opened at the start.
    const audit = runtime !== 'cloudflare' && config.audit?.file !== undefined ? auditFileIssues(config.audit.file, dirname(path)) : [];
    return { kind, issues: [...size, ...audit], warnings: [...workerConfigWarnings(config), ...(runtime === 'cloudflare' ? cloudflareConfigWarnings(config) : [])] };
  } catch (error) {
    if (error instanceof ValidationError) return { kind, issues: [...error.issues, ...size], warnings: [] };
    throw error;
  }
}
