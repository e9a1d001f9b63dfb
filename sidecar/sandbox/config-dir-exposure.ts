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
 * The host key and the audit file may be kept outside the dir (`key-file`, `audit.file`): each is
 * kept out of every sandbox as the dir is ({@link OwnFile}). So are they all from the folders the
 * backend shows every sandbox (bubblewrap's `/usr`, `/lib`, parts of `/etc`): a config dir kept
 * under `/usr/local/etc` would otherwise be readable by any contained server.
 *
 * The compiler refuses such a launch (`compileContainment`); {@link configDirWarnings} tells
 * `switchyard check` the same thing about an mcp.json before anything runs.
 *
 * @module
 */
import { type Dirent, readdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import type { ValidationIssue } from '../../shared/validation.ts';
import { joinPath } from '../../shared/validation.ts';
import { resolveStdioCommand } from '../process/stdio-command-resolver.ts';
import { isWithin } from '../trust/filesystem-grants.ts';
import type { FilesystemGrant } from '../trust/effective-profile.ts';
import { type ContainmentLaunch, type LaunchPart, launchPaths } from './launch-paths.ts';

/** What would carry the config dir into the sandbox: a launch root, a grant, or the backend's system mounts. */
export type ExposedBy = LaunchPart | 'grant' | 'system';

/**
 * A file of the host's own that may lie outside its config dir, by the key or flag that names it:
 * a sidecar's key and audit files (sidecar.json), or in single-machine mode the worker config, its
 * OAuth state dir and audit file (a server that could write the worker config could add an agent).
 */
export interface OwnFile {
  readonly path: string;
  readonly key: 'key-file' | 'audit.file' | '--config' | '--state-dir' | 'symlink';
}

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
  /** The own file it shows, when it shows one kept outside the dir and nothing of the dir. */
  readonly of?: OwnFile['key'];
}

/** The config dir's and the own files' spellings, compared against what would be mounted. */
interface Protected {
  readonly dir: readonly string[];
  readonly files: ReadonlyArray<{ readonly spellings: readonly string[]; readonly key: OwnFile['key'] }>;
}

function protectedPaths(configDir: string, files: readonly OwnFile[]): Protected {
  return { dir: spellings(configDir), files: [...files, ...linkedFromConfigDir(configDir)].map((f) => ({ spellings: spellings(f.path), key: f.key })) };
}

/** How deep and how wide {@link linkedFromConfigDir} looks: a config dir's files lie three levels down (`users/NAME/mcp-servers/mcp.json`). */
const LINK_WALK = { depth: 4, entries: 4096 };

/**
 * What the config dir's symbolic links lead to outside it: a trust profile, an mcp.json or a
 * folder of them kept elsewhere (in a dotfiles repository, say) is read by the sidecar as its own,
 * so a sandbox that could write it could widen its own floor at the next launch. Each is kept out
 * of every sandbox as the dir is.
 */
function linkedFromConfigDir(configDir: string): OwnFile[] {
  const dirs = spellings(configDir);
  const linked: OwnFile[] = [];
  let budget = LINK_WALK.entries;
  const walk = (dir: string, depth: number): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (--budget < 0) return;
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        let target: string;
        try {
          target = realpathSync(path);
        } catch {
          continue;
        }
        if (!dirs.some((d) => isWithin(d, target))) linked.push({ path: target, key: 'symlink' });
      } else if (entry.isDirectory() && depth < LINK_WALK.depth) walk(path, depth + 1);
    }
  };
  walk(configDir, 1);
  return linked;
}

/**
 * `path` as given and as its real path. One that does not exist (an audit file between logrotate's
 * move and its reopening) is taken through its folder's real path, where it will be.
 */
function spellings(path: string): string[] {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    try {
      real = join(realpathSync(dirname(path)), basename(path));
    } catch {
      return [path];
    }
  }
  return real === path ? [path] : [path, real];
}

/**
 * What mounting `path` would show: the config dir (either lies within the other), else the first
 * own file within it; `null` when nothing.
 */
function shows(path: string, own: Protected): { of?: OwnFile['key'] } | null {
  const mounted = spellings(path);
  if (mounted.some((p) => own.dir.some((c) => isWithin(p, c) || isWithin(c, p)))) return {};
  // Both ways, as for the dir: an own file may be a folder (the state dir), and a grant inside it shows part of it.
  const file = own.files.find((f) => mounted.some((p) => f.spellings.some((c) => isWithin(c, p) || isWithin(p, c))));
  return file === undefined ? null : { of: file.key };
}

/**
 * Every mount of a contained launch that would expose the sidecar's config dir.
 *
 * @param configDir The sidecar config dir (absolute).
 * @param launch The launch, its command resolved to an absolute path.
 * @param options `home`: the sidecar user's home (default `os.homedir()`); `grants`: the profile's;
 *   `files`: the own files kept out too; `system`: what the backend mounts in every sandbox.
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
  options: { readonly home?: string; readonly grants?: readonly FilesystemGrant[]; readonly files?: readonly OwnFile[]; readonly system?: readonly string[] } = {},
): ConfigDirExposure[] {
  const own = protectedPaths(configDir, options.files ?? []);
  const found: ConfigDirExposure[] = [];
  const seen = new Set<string>();
  const add = (path: string, by: ExposedBy) => {
    const shown = seen.has(`${by}:${path}`) ? null : shows(path, own);
    if (shown === null) return;
    seen.add(`${by}:${path}`);
    found.push({ path, by, ...shown });
  };
  for (const root of launchPaths(launch, options.home ?? homedir(), options.grants).roots) add(root.path, root.for);
  for (const path of options.system ?? []) add(path, 'system');
  return [...found, ...exposingGrants(options.grants ?? [], own)];
}

/**
 * The grants that expose the config dir: the part of {@link configDirExposures} a profile decides
 * alone, so that every contained launch under it is refused, whatever the server. `switchyard
 * check` and `doctor` ask it of the profile a launch would run under, ahead of any launch.
 *
 * @param configDir The sidecar config dir (absolute).
 * @param grants An effective profile's filesystem grants.
 * @param files The own files kept outside the dir ({@link ownFiles}), kept out too.
 * @returns The exposing grants (`by: 'grant'`), empty when none shows anything of the dir or files.
 * @example The README's layout: a profile granting the home around `~/.config/switchyard`
 * ```ts
 * grantExposures('/home/alice/.config/switchyard', [{ sourcePath: '/home/alice', targetPath: '/home/alice', accessMode: 'read-only' }]);
 * // [{ path: '/home/alice', by: 'grant' }]
 * ```
 */
export function grantExposures(configDir: string, grants: readonly FilesystemGrant[], files: readonly OwnFile[] = []): ConfigDirExposure[] {
  return exposingGrants(grants, protectedPaths(configDir, files));
}

/** {@link grantExposures} against paths already gathered: the dir's links are walked once per launch. */
function exposingGrants(grants: readonly FilesystemGrant[], own: Protected): ConfigDirExposure[] {
  return [...new Set(grants.map((g) => g.sourcePath))].flatMap((path) => {
    const shown = shows(path, own);
    return shown === null ? [] : [{ path, by: 'grant' as const, ...shown }];
  });
}

/**
 * Why launches under a profile that grants `exposures` are refused, with the sidecar's own fix,
 * for `check` and `doctor`: they run on the operator's machine, so it names the paths (a refusal
 * that crosses the link does not, {@link configDirRefusal}). Begins with "grants"; `refused` says
 * which launches are refused, when not every one under the profile is (a floor an agent narrows).
 */
export function grantExposureReason(
  configDir: string,
  exposures: readonly ConfigDirExposure[],
  refused = 'a contained launch that would show any of it is refused',
  role: ConfigDirRole = 'sidecar',
  files: readonly OwnFile[] = [],
): string {
  const configDirs = spellings(configDir);
  const targets = [...new Set(exposures.map((e) => e.of))];
  const parts = targets.map((of) => {
    const these = exposures.filter((e) => e.of === of);
    const around = of === undefined ? these.filter((e) => spellings(e.path).some((p) => configDirs.some((c) => isWithin(c, p)))).length : these.length;
    const relation = around === these.length ? 'contains' : around === 0 ? 'lies in' : 'contains or lies in';
    const file = files.find((f) => f.key === of);
    return `${these.map((e) => `"${e.path}"`).join(', ')}, which ${relation} ${of === undefined ? DIR_NAMED[role](configDir) : ownFileNamed(of, file?.path)}`;
  });
  return `grants ${parts.join(', and ')}, and ${refused}; ${fix('grant', targets[0])}`;
}

const OWN_FILE: Record<OwnFile['key'], { named: string; movable: string; place: string }> = {
  'key-file': { named: 'the host key file', movable: 'the key file', place: "the key file's folder" },
  'audit.file': { named: 'the audit file', movable: 'the audit file', place: "the audit file's folder" },
  '--config': { named: 'the worker config', movable: 'the worker config', place: "the worker config's folder" },
  '--state-dir': { named: "the worker's state dir", movable: 'the state dir', place: 'the state dir' },
  symlink: { named: 'a config file the config dir links to', movable: 'the linked file', place: "the linked file's folder" },
};

function ownFileNamed(key: OwnFile['key'], path?: string): string {
  return `${OWN_FILE[key].named} (${key}${path === undefined ? '' : `: ${path}`})`;
}

const WHAT: Record<ExposedBy, string> = {
  cwd: 'its working directory',
  command: 'its command (or the install dir around it)',
  script: 'its script (or the install dir around it)',
  grant: 'its trust profile grants a path that',
  system: 'the system folders every sandbox shows read-only (/usr, /lib, parts of /etc)',
};

/** What to do on the host, for what is shown: the config dir, or an own file kept outside it. */
function fix(by: ExposedBy, of: OwnFile['key'] | undefined): string {
  const place = of === undefined ? 'the config dir' : OWN_FILE[of].place;
  const movable = of === undefined ? 'the config dir' : OWN_FILE[of].movable;
  switch (by) {
    case 'cwd':
      return `give the server an absolute "cwd" outside ${place} (a relative one is relative to the config dir)`;
    case 'command':
      return `install the server outside ${place}`;
    case 'script':
      return `keep the server's files outside ${place}`;
    case 'grant':
      return `grant narrower paths in the profile, or move ${movable} out of the granted tree`;
    case 'system':
      return `move ${movable} out of those folders`;
  }
}

/**
 * For the sidecar's start, `check` and `doctor`: whether the backend's system mounts would show the
 * config dir or an own file to every sandbox, which refuses every contained launch whatever the
 * profile or server.
 *
 * @param system What the backend mounts in every sandbox (`systemPathsHere()`).
 * @returns Why, naming the paths (for the operator's machine), or `null`.
 * @example A config dir kept under `/usr/local/etc`
 * ```ts
 * systemExposureReason('/usr/local/etc/switchyard', [], ['/usr']);
 * // 'the sidecar config dir (/usr/local/etc/switchyard, which holds the host key) lies in "/usr", which every sandbox shows read-only: …'
 * ```
 */
export function systemExposureReason(configDir: string, files: readonly OwnFile[], system: readonly string[], role: ConfigDirRole = 'sidecar'): string | null {
  const own = protectedPaths(configDir, files);
  for (const path of system) {
    const shown = shows(path, own);
    if (shown === null) continue;
    const target = shown.of === undefined ? DIR_NAMED[role](configDir) : ownFileNamed(shown.of, files.find((f) => f.key === shown.of)?.path);
    const relation = shown.of === undefined && own.dir.some((c) => spellings(path).some((p) => isWithin(p, c))) ? 'holds' : 'lies in';
    return `${target} ${relation} "${path}", which every sandbox shows read-only: every contained launch is refused (launch-failed); ${fix('system', shown.of)}`;
  }
  return null;
}

/**
 * The sentence that says why a launch is refused and what to do, without naming a path (it may
 * cross the link); the paths belong in the sidecar log.
 */
export function configDirRefusal(exposure: ConfigDirExposure, server?: string, role: ConfigDirRole = 'sidecar'): string {
  const who = server === undefined ? 'Contained server' : `Server "${server}"`;
  const verb = exposure.by === 'grant' ? 'contains or lies in' : 'would expose';
  const shown = exposure.of === undefined ? DIR_NAMED[role]() : ownFileNamed(exposure.of);
  return `${who} cannot start: ${WHAT[exposure.by]} ${verb} ${shown} inside the sandbox: on the host, ${fix(exposure.by, exposure.of)}; the ${role === 'sidecar' ? 'sidecar' : 'worker'} log names the path`;
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
 * @param options `env` for the command lookup (default `process.env`), `home` (default `os.homedir()`), `files`: the own files kept outside the dir (`ownFilesNamed`).
 * @returns Warnings as `mcpServers.<name>.<key>: message`, empty when nothing is exposed.
 * @example
 * ```ts
 * configDirWarnings(dir, parseMcpServersFile(json, dir)); // [{ path: 'mcpServers.files.cwd', message: 'a contained launch …' }]
 * ```
 */
export function configDirWarnings(
  configDir: string,
  servers: ReadonlyMap<string, StdioEntryForCheck | { readonly kind: 'http' }>,
  options: { readonly env?: Readonly<Record<string, string | undefined>>; readonly home?: string; readonly files?: readonly OwnFile[] } = {},
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
    const exposures = configDirExposures(configDir, launch, { ...(options.home !== undefined ? { home: options.home } : {}), files: options.files ?? [] });
    for (const by of new Set(exposures.map((e) => e.by))) {
      const these = exposures.filter((e) => e.by === by);
      const paths = these.map((e) => `"${e.path}"`).join(', ');
      const of = these[0]!.of;
      const key = by === 'cwd' ? 'cwd' : by === 'command' ? 'command' : 'args';
      issues.push({
        path: joinPath(['mcpServers', name, key]),
        message: `a contained launch is refused: ${WHAT[by]} would expose ${of === undefined ? 'the sidecar config dir' : ownFileNamed(of)} inside the sandbox (${paths}); ${fix(by, of)}`,
      });
    }
  }
  return issues;
}
