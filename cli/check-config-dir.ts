/**
 * `switchyard check DIR`: a sidecar config dir checked whole, as the sidecar will read it.
 *
 * Every file the sidecar reads is checked on its own (`sidecar.json`, `mcp-servers/mcp.json`,
 * `users/<user>/mcp-servers/mcp.json`, `machines/<entity-id>/mcp-servers/mcp.json`,
 * `trust-profiles/<ref>.json`), then across files: every trust profile a file names (sidecar.json's
 * floor, a server entry's own `"trust-profile"`) must exist in `trust-profiles/` and resolve with
 * its bases, and every profile's bases must exist and form no cycle. A cross-file problem is
 * reported on the file that names the missing or broken profile.
 *
 * @module
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ValidationIssue } from '../shared/validation.ts';
import { readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { type CheckResult, checkSidecarFile, type SidecarConfigKind } from './check-sidecar-file.ts';

export type FileCheck = CheckResult & { readonly file: string };

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  } catch {
    return [];
  }
}

/** The files of a config dir the sidecar reads, with what each is. */
function filesOf(dir: string): Array<{ file: string; kind: SidecarConfigKind }> {
  const files: Array<{ file: string; kind: SidecarConfigKind }> = [{ file: join(dir, 'sidecar.json'), kind: 'sidecar config' }];
  const mcp = [join(dir, 'mcp-servers', 'mcp.json')];
  for (const group of ['users', 'machines']) for (const name of subdirs(join(dir, group))) mcp.push(join(dir, group, name, 'mcp-servers', 'mcp.json'));
  for (const file of mcp) if (existsSync(file)) files.push({ file, kind: 'mcp.json' });
  const profiles = join(dir, 'trust-profiles');
  let names: string[] = [];
  try {
    names = readdirSync(profiles).filter((n) => n.endsWith('.json')).sort();
  } catch {
    // no profiles: nothing to check, and a reference to one is reported below
  }
  for (const name of names) files.push({ file: join(profiles, name), kind: 'trust profile' });
  return files;
}

/** Why `ref` cannot be used on this host, or `null` when it resolves with all its bases. */
async function profileProblem(store: TrustProfileStore, ref: string): Promise<string | null> {
  if (!existsSync(join(store.dir, `${ref}.json`))) return `no trust profile "${ref}" in trust-profiles/: add trust-profiles/${ref}.json or fix the name`;
  try {
    await store.load(ref);
    return null;
  } catch (error) {
    return `trust profile "${ref}" cannot be used: ${(error as Error).message}`;
  }
}

/**
 * @param dir A sidecar config dir.
 * @returns One result per file, cross-file problems included; never throws for bad content.
 */
export async function checkConfigDir(dir: string): Promise<FileCheck[]> {
  const store = new TrustProfileStore(join(dir, 'trust-profiles'));
  const results: FileCheck[] = [];
  for (const { file, kind } of filesOf(dir)) {
    const own = checkSidecarFile(file, kind);
    const issues: ValidationIssue[] = [...own.issues];
    if (issues.length === 0) {
      const read = readJsonFile(file);
      const json = read.ok ? (read.json as Record<string, unknown>) : {};
      const named: Array<[string, string]> = [];
      if (kind === 'sidecar config' && typeof json['trust-profile'] === 'string') named.push(['trust-profile', json['trust-profile']]);
      if (kind === 'mcp.json') {
        for (const [name, server] of parseMcpServersFile(json, dir)) if (server.trustProfile !== undefined) named.push([`mcpServers.${name}.trust-profile`, server.trustProfile]);
      }
      if (kind === 'trust profile') {
        const ref = file.slice(join(dir, 'trust-profiles').length + 1, -'.json'.length);
        const problem = await profileProblem(store, ref);
        if (problem !== null) issues.push({ path: 'base-trust-profiles', message: problem.replace(`trust profile "${ref}" cannot be used: `, '') });
      }
      for (const [path, ref] of named) {
        const problem = await profileProblem(store, ref);
        if (problem !== null) issues.push({ path, message: problem });
      }
    }
    results.push({ file, ...own, issues });
  }
  return results;
}
