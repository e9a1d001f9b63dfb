/**
 * Nothing of the sidecar's own config dir inside a sandbox (DESIGN §5): the dir holds the host's
 * private key, every server config and every trust profile, so a contained server that could read
 * it could impersonate the host or learn what its neighbours may do.
 *
 * A launch exposes the dir when anything the backend would mount, the launch's own read-only
 * roots (`launch-paths.ts`: the command and its install dir, a script and its install dir, the
 * working directory) or a profile grant, lies inside the config dir or contains it. Both sides are
 * compared as given and as real paths, since bubblewrap mounts what a symlink points to. A relative
 * `"cwd": "."` in an mcp.json is the config dir itself (`server-config.ts` resolves it there).
 *
 * The compiler refuses such a launch (`compileContainment`); {@link configDirWarnings} tells
 * `switchyard check` the same thing about an mcp.json before anything runs.
 *
 * @module
 */
import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute } from 'node:path';
import type { ValidationIssue } from '../../shared/validation.ts';
import { joinPath } from '../../shared/validation.ts';
import { resolveStdioCommand } from '../process/stdio-command-resolver.ts';
import { isWithin } from '../trust/filesystem-grants.ts';
import type { FilesystemGrant } from '../trust/effective-profile.ts';
import { type ContainmentLaunch, type LaunchPart, launchPaths } from './launch-paths.ts';

/** What would carry the config dir into the sandbox. */
export type ExposedBy = LaunchPart | 'grant';

/**
 * Whose config dir it is, for the words of a refusal: a sidecar's (the host key in it) or that of
 * `switchyard worker --runtime node` (its server configs and trust profiles, and by default the
 * worker config and OAuth state beside them), which has no sidecar and no host key.
 */
export type ConfigDirRole = 'sidecar' | 'single-machine';

const DIR_NAMED: Record<ConfigDirRole, (dir?: string) => string> = {
  sidecar: (dir) => (dir === undefined ? "the sidecar's config dir, which holds the host key," : `the sidecar config dir (${dir}, which holds the host key)`),
  'single-machine': (dir) => (dir === undefined ? "the single-machine mode's config dir" : `the single-machine mode's config dir (${dir})`),
};

export interface ConfigDirExposure {
  /** The host path that would be mounted. */
  readonly path: string;
  readonly by: ExposedBy;
}

function spellings(path: string): string[] {
  try {
    const real = realpathSync(path);
    return real === path ? [path] : [path, real];
  } catch {
    return [path];
  }
}

/** Whether mounting `path` would show anything of `configDir` (either lies within the other). */
function touches(path: string, configDirs: readonly string[]): boolean {
  return spellings(path).some((p) => configDirs.some((c) => isWithin(p, c) || isWithin(c, p)));
}

/**
 * Every mount of a contained launch that would expose the sidecar's config dir.
 *
 * @param configDir The sidecar config dir (absolute).
 * @param launch The launch, its command resolved to an absolute path.
 * @param options `home`: the sidecar user's home (default `os.homedir()`); `grants`: the profile's.
 * @returns The exposing mounts, empty when the launch exposes nothing of the dir.
 * @example A server kept in the config dir
 * ```ts
 * configDirExposures('/etc/switchyard', { file: '/usr/bin/node', args: ['/etc/switchyard/server.mjs'] });
 * // [{ path: '/etc/switchyard', by: 'script' }]
 * ```
 */
export function configDirExposures(
  configDir: string,
  launch: ContainmentLaunch,
  options: { readonly home?: string; readonly grants?: readonly FilesystemGrant[] } = {},
): ConfigDirExposure[] {
  const configDirs = spellings(configDir);
  const found: ConfigDirExposure[] = [];
  const seen = new Set<string>();
  const add = (path: string, by: ExposedBy) => {
    if (seen.has(`${by}:${path}`) || !touches(path, configDirs)) return;
    seen.add(`${by}:${path}`);
    found.push({ path, by });
  };
  for (const root of launchPaths(launch, options.home ?? homedir(), options.grants).roots) add(root.path, root.for);
  return [...found, ...grantExposures(configDir, options.grants ?? [])];
}

/**
 * The grants that expose the config dir: the part of {@link configDirExposures} a profile decides
 * alone, so that every contained launch under it is refused, whatever the server. `switchyard
 * check` and `doctor` ask it of the profile a launch would run under, ahead of any launch.
 *
 * @param configDir The sidecar config dir (absolute).
 * @param grants An effective profile's filesystem grants.
 * @returns The exposing grants (`by: 'grant'`), empty when none shows anything of the dir.
 * @example The README's layout: a profile granting the home around `~/.config/switchyard`
 * ```ts
 * grantExposures('/home/alice/.config/switchyard', [{ sourcePath: '/home/alice', targetPath: '/home/alice', accessMode: 'read-only' }]);
 * // [{ path: '/home/alice', by: 'grant' }]
 * ```
 */
export function grantExposures(configDir: string, grants: readonly FilesystemGrant[]): ConfigDirExposure[] {
  const configDirs = spellings(configDir);
  const paths = [...new Set(grants.map((g) => g.sourcePath))];
  return paths.filter((path) => touches(path, configDirs)).map((path) => ({ path, by: 'grant' as const }));
}

/**
 * Why launches under a profile that grants `exposures` are refused, with the sidecar's own fix,
 * for `check` and `doctor`: they run on the operator's machine, so it names the paths (a refusal
 * that crosses the link does not, {@link configDirRefusal}). Begins with "grants"; `refused` says
 * which launches are refused, when not every one under the profile is (a floor an agent narrows).
 */
export function grantExposureReason(configDir: string, exposures: readonly ConfigDirExposure[], refused = 'a contained launch that would show any of it is refused', role: ConfigDirRole = 'sidecar'): string {
  const configDirs = spellings(configDir);
  const around = exposures.filter((e) => spellings(e.path).some((p) => configDirs.some((c) => isWithin(c, p)))).length;
  const relation = around === exposures.length ? 'contains' : around === 0 ? 'lies in' : 'contains or lies in';
  const paths = exposures.map((e) => `"${e.path}"`).join(', ');
  return `grants ${paths}, which ${relation} ${DIR_NAMED[role](configDir)}, and ${refused}; ${FIX.grant}`;
}

const WHAT: Record<ExposedBy, string> = {
  cwd: 'its working directory',
  command: 'its command (or the install dir around it)',
  script: 'its script (or the install dir around it)',
  grant: 'its trust profile grants a path that',
};

const FIX: Record<ExposedBy, string> = {
  cwd: 'give the server an absolute "cwd" outside the config dir (a relative one is relative to the config dir)',
  command: 'install the server outside the config dir',
  script: 'keep the server\'s files outside the config dir',
  grant: 'grant narrower paths in the profile, or move the config dir out of the granted tree',
};

/**
 * The sentence that says why a launch is refused and what to do, without naming a path (it may
 * cross the link); the paths belong in the sidecar log.
 */
export function configDirRefusal(exposure: ConfigDirExposure, server?: string, role: ConfigDirRole = 'sidecar'): string {
  const who = server === undefined ? 'Contained server' : `Server "${server}"`;
  const verb = exposure.by === 'grant' ? 'contains or lies in' : 'would expose';
  return `${who} cannot start: ${WHAT[exposure.by]} ${verb} ${DIR_NAMED[role]()} inside the sandbox: on the host, ${FIX[exposure.by]}; the ${role === 'sidecar' ? 'sidecar' : 'worker'} log names the path`;
}

/** A stdio server entry as `server-config.ts` parses it (`cwd` already resolved against the config dir). */
export interface StdioEntryForCheck {
  readonly kind: 'stdio';
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * For `switchyard check` on an mcp.json: every stdio entry a contained launch would refuse
 * because it exposes the config dir. Commands are looked up on `env.PATH` the way the sidecar
 * does; a command not found here is checked as written.
 *
 * @param configDir The sidecar config dir the mcp.json belongs to (the folder above `mcp-servers/`).
 * @param servers The entries as `parseMcpServersFile(json, configDir)` returns them (HTTP entries are skipped).
 * @param options `env` for the command lookup (default `process.env`), `home` (default `os.homedir()`).
 * @returns Warnings as `mcpServers.<name>.<key>: message`, empty when nothing is exposed.
 * @example
 * ```ts
 * configDirWarnings(dir, parseMcpServersFile(json, dir)); // [{ path: 'mcpServers.files.cwd', message: 'a contained launch …' }]
 * ```
 */
export function configDirWarnings(
  configDir: string,
  servers: ReadonlyMap<string, StdioEntryForCheck | { readonly kind: 'http' }>,
  options: { readonly env?: Readonly<Record<string, string | undefined>>; readonly home?: string } = {},
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const [name, entry] of servers) {
    if (entry.kind !== 'stdio') continue;
    let file = entry.command;
    let args = entry.args;
    try {
      const resolved = resolveStdioCommand(entry.command, entry.args, { platform: 'linux', env: options.env ?? process.env, cwd: entry.cwd ?? configDir, isFile });
      file = resolved.file;
      args = resolved.args;
    } catch {
      // not on this machine's PATH: check the command as written
    }
    if (!isAbsolute(file)) file = '/nonexistent-command';
    const launch: ContainmentLaunch = { file, args, ...(entry.cwd !== undefined ? { cwd: entry.cwd } : {}) };
    const exposures = configDirExposures(configDir, launch, options.home === undefined ? {} : { home: options.home });
    for (const by of new Set(exposures.map((e) => e.by))) {
      const paths = exposures.filter((e) => e.by === by).map((e) => `"${e.path}"`).join(', ');
      const key = by === 'cwd' ? 'cwd' : by === 'command' ? 'command' : 'args';
      issues.push({
        path: joinPath(['mcpServers', name, key]),
        message: `a contained launch is refused: ${WHAT[by]} would expose the sidecar config dir inside the sandbox (${paths}); ${FIX[by]}`,
      });
    }
  }
  return issues;
}
