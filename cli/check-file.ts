/**
 * One config file checked on its own: what it is (by content and place) and every problem in it,
 * as `path: message`. Used by `switchyard check FILE` and, per file, by `check DIR`.
 *
 * @module
 */
import { basename, dirname } from 'node:path';
import { ValidationError, parseWith, type ValidationIssue } from '../shared/validation.ts';
import { parseWorkerConfigText, type WorkerRuntime } from '../worker/config/worker-config.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { trustProfileFileSchema } from '../sidecar/trust/profile-schema.ts';
import { parseSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { configDirWarnings } from '../sidecar/sandbox/config-dir-exposure.ts';
import { readJsonFile } from '../sidecar/config/config-file-problems.ts';

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
