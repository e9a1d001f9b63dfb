/**
 * One file of a sidecar config dir checked on its own (`sidecar.json`, an `mcp.json`, a trust
 * profile): every problem as `path: message`. Apart from `check-file.ts` because it needs no
 * worker code: the workstation's `dist/sidecar.js` checks its own dir with it on every reload
 * (`sidecar-reload.ts`), and must not carry the worker's config parser.
 *
 * @module
 */
import { basename, dirname, join } from 'node:path';
import { ValidationError, parseWith, type ValidationIssue } from '../shared/validation.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { trustProfileFileSchema } from '../sidecar/trust/profile-schema.ts';
import { limitWarnings, ownFilesNamed, parseSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { configDirWarnings } from '../sidecar/sandbox/config-dir-exposure.ts';
import { readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { locateSyntaxErrorInFile, unreadable } from './config-file-read.ts';
import type { FileReadProblem } from '../shared/file-read-problem.ts';
import { auditFileIssues } from './check-audit-file.ts';
import { grantSourceWarnings } from './check-grant-sources.ts';

export type ConfigKind = 'worker config' | 'sidecar config' | 'mcp.json' | 'trust profile';
export type SidecarConfigKind = Exclude<ConfigKind, 'worker config'>;

export interface CheckResult {
  kind: ConfigKind | 'file';
  /** What makes the file unusable: check exits 1. */
  issues: ValidationIssue[];
  /** What would work but should not be so (a server that exposes the config dir): printed, exit 0. */
  warnings: ValidationIssue[];
  /** Why the file cannot be read at all, reported as just that (`FILE: not found`). */
  unreadable?: FileReadProblem;
}

/** A file that is not JSON one can read: why it cannot be read, or its syntax error with line and column. */
export function unusableFile(path: string, issue: ValidationIssue): CheckResult {
  const why = unreadable(path);
  if (why !== undefined) return { kind: 'file', issues: [{ path: '(root)', message: why }], warnings: [], unreadable: why };
  return { kind: 'file', issues: locateSyntaxErrorInFile(path, [issue]), warnings: [] };
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

/** Every problem in a sidecar dir's file of `kind`, or an empty list; never throws for bad content. */
export function checkSidecarFile(path: string, kind: SidecarConfigKind): CheckResult {
  const read = readJsonFile(path);
  if (!read.ok) return unusableFile(path, read.issue);
  const { json } = read;
  try {
    if (kind === 'sidecar config') {
      const parsed = parseSidecarConfig(json);
      const file = parsed.audit?.file;
      return { kind, issues: file === undefined ? [] : auditFileIssues(file, dirname(path)), warnings: limitWarnings(parsed.limits) };
    } else if (kind === 'mcp.json') {
      const configDir = configDirOfMcpFile(path);
      // The key and audit files sidecar.json keeps outside the dir are kept out as the dir is.
      const sidecarJson = readJsonFile(join(configDir, 'sidecar.json'));
      const files = sidecarJson.ok ? ownFilesNamed(configDir, sidecarJson.json) : [];
      return { kind, issues: [], warnings: configDirWarnings(configDir, parseMcpServersFile(json, configDir), { files }) };
    }
    const profile = parseWith(trustProfileFileSchema, json, 'trust profile');
    return { kind, issues: [], warnings: grantSourceWarnings(profile['filesystem-paths'] ?? []) };
  } catch (error) {
    if (error instanceof ValidationError) return { kind, issues: [...error.issues], warnings: [] };
    throw error;
  }
}
