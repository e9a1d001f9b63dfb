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
 * A floor whose grants contain or lie in the config dir is a warning on the file that names it
 * (`check-exposure.ts`): an agent that names no profile runs under it alone and is refused, but a
 * floor is also a ceiling that agents' own narrower profiles run under, so it is not an error
 * here; `check worker.json DIR` knows the agents, and fails each one so refused.
 *
 * A config dir, key file or audit file under the folders every sandbox shows (`/usr`, …) is a
 * warning on sidecar.json: every contained launch is refused, and ordinary ones still run.
 *
 * A profile's own grants, network and environment names that its restrictive bases drop or
 * narrow are a warning on it (`check-profile-narrowing.ts`): by design, and silent at launch.
 *
 * `singleMachine` (`check --runtime node`): DIR read as `switchyard worker --runtime node` reads
 * it when its sidecar.json names no `worker` and no `entity-id`: the file is optional, and only
 * its `"trust-profile"` and `"allow-uncontained"` are read (`loadHostTrustConfig`).
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ValidationIssue } from '../shared/validation.ts';
import { ConfigFileError, readJsonFile } from '../sidecar/config/config-file-problems.ts';
import { loadHostTrustConfig, loadSidecarConfig, ownFilesNamed } from '../sidecar/config/sidecar-config.ts';
import { loadHostKey } from '../sidecar/link/host-key.ts';
import { LocalError } from '../shared/errors.ts';
import { ProfileRefSchema } from '../shared/names.ts';
import { systemExposureReason, systemPathsHere } from '../sidecar/sandbox/index.ts';
import { configDirFiles } from '../sidecar/config/config-snapshot.ts';
import { parseMcpServersFile } from '../sidecar/host/server-config.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { effectiveFromFile } from '../sidecar/trust/effective-profile.ts';
import { trustProfileFileSchema } from '../sidecar/trust/profile-schema.ts';
import { narrowedByBases } from './check-profile-narrowing.ts';
import { floorExposure } from './check-exposure.ts';
import { type CheckResult, checkSidecarFile, type SidecarConfigKind } from './check-sidecar-file.ts';

export type FileCheck = CheckResult & { readonly file: string };

/** The files of a config dir the sidecar reads (`configDirFiles`: symlinks followed, as the host reads them), with what each is. */
function filesOf(dir: string): Array<{ file: string; kind: SidecarConfigKind }> {
  const profiles = join(dir, 'trust-profiles');
  return configDirFiles(dir).flatMap((file): Array<{ file: string; kind: SidecarConfigKind }> => {
    if (file === join(dir, 'sidecar.json')) return [{ file, kind: 'sidecar config' }];
    if (dirname(file) === profiles) return [{ file, kind: 'trust profile' }];
    return existsSync(file) ? [{ file, kind: 'mcp.json' }] : [];
  });
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

/** What the sidecar's start would refuse in its host key, and whether that is only that it is not there. */
async function hostKeyProblem(dir: string): Promise<{ message: string; missing: boolean } | undefined> {
  const keyFile = loadSidecarConfig(dir).keyFile;
  try {
    await loadHostKey(keyFile);
    return undefined;
  } catch (error) {
    if (!(error instanceof LocalError)) throw error;
    return { message: error.message, missing: !existsSync(keyFile) };
  }
}

/**
 * Whether DIR is a single-machine dir rather than a linked host's: its sidecar.json is absent, or
 * names neither `worker` nor `entity-id` (which only a linked host needs).
 */
export function isSingleMachineDir(dir: string): boolean {
  const read = readJsonFile(join(dir, 'sidecar.json'));
  if (!read.ok) return read.missing === true;
  const json = read.json;
  return typeof json === 'object' && json !== null && !Array.isArray(json) && !('worker' in json) && !('entity-id' in json);
}

/** A single-machine dir's sidecar.json, as `loadHostTrustConfig` reads it. */
function checkHostTrustFile(dir: string, file: string): CheckResult {
  try {
    loadHostTrustConfig(dir);
    return { kind: 'sidecar config', issues: [], warnings: [] };
  } catch (error) {
    if (error instanceof ConfigFileError) return { kind: 'sidecar config', issues: [...error.issues], warnings: [] };
    throw error;
  }
}

/**
 * @param dir A sidecar config dir.
 * @param options `singleMachine`: DIR may be the dir of `switchyard worker --runtime node` (see above).
 * @returns One result per file, cross-file problems included; never throws for bad content.
 */
export async function checkConfigDir(dir: string, options: { singleMachine?: boolean } = {}): Promise<FileCheck[]> {
  const store = new TrustProfileStore(join(dir, 'trust-profiles'));
  const singleMachine = options.singleMachine === true && isSingleMachineDir(dir);
  const sidecarJson = readJsonFile(join(dir, 'sidecar.json'));
  const files = singleMachine || !sidecarJson.ok ? [] : ownFilesNamed(dir, sidecarJson.json);
  const results: FileCheck[] = [];
  for (const { file, kind } of filesOf(dir)) {
    if (singleMachine && kind === 'sidecar config' && !existsSync(file)) continue;
    const own = singleMachine && kind === 'sidecar config' ? checkHostTrustFile(dir, file) : checkSidecarFile(file, kind);
    const issues: ValidationIssue[] = [...own.issues];
    const warnings: ValidationIssue[] = [...own.warnings];
    if (issues.length === 0 && kind === 'sidecar config') {
      const shown = systemExposureReason(dir, files, systemPathsHere(), singleMachine ? 'single-machine' : 'sidecar');
      if (shown !== null) warnings.push({ path: '(root)', message: shown });
      // The key the sidecar's start reads, refused as the start refuses it (not a key, readable by
      // others). One not there yet is not judged: a config dir kept in a repository has no key.
      if (!singleMachine) {
        const key = await hostKeyProblem(dir);
        if (key !== undefined && !key.missing) issues.push({ path: 'key-file', message: key.message });
      }
    }
    if (issues.length === 0) {
      const read = readJsonFile(file);
      const json = read.ok ? (read.json as Record<string, unknown>) : {};
      // Each profile named, and whether a launch runs under it (an HTTP entry's floor contains no process).
      const named: Array<[string, string, boolean]> = [];
      if (kind === 'sidecar config' && typeof json['trust-profile'] === 'string') named.push(['trust-profile', json['trust-profile'], true]);
      if (kind === 'mcp.json') {
        for (const [name, server] of parseMcpServersFile(json, dir)) {
          if (server.trustProfile !== undefined) named.push([`mcpServers.${name}.trust-profile`, server.trustProfile, server.kind === 'stdio']);
        }
      }
      if (kind === 'trust profile') {
        const ref = file.slice(join(dir, 'trust-profiles').length + 1, -'.json'.length);
        const name = ProfileRefSchema.safeParse(ref);
        if (!name.success) {
          // The file's name is the profile's reference: a bad one is the name's problem, not a key's.
          issues.push({ path: '(file name)', message: `"${ref}" names the profile, and a profile's name ${name.error.issues[0]?.message ?? 'is not valid'}: rename the file` });
        } else {
          const problem = await profileProblem(store, ref);
          if (problem !== null) issues.push({ path: 'base-trust-profiles', message: problem.replace(`trust profile "${ref}" cannot be used: `, '') });
          else warnings.push(...narrowedByBases(effectiveFromFile(trustProfileFileSchema.parse(json)), (await store.load(ref)).effective));
        }
      }
      for (const [path, ref, launches] of named) {
        const problem = await profileProblem(store, ref);
        if (problem !== null) issues.push({ path, message: problem });
        const exposure = problem === null && launches ? await floorExposure(dir, store, ref, singleMachine ? 'single-machine' : 'sidecar', files) : null;
        if (exposure !== null) warnings.push({ path, message: `trust profile "${ref}" ${exposure}` });
      }
    }
    results.push({ file, ...own, issues, warnings });
  }
  return results;
}
