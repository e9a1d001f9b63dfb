/**
 * What a contained server must be able to read to start at all, beyond the system directories:
 * its interpreter, its own install dir and its working directory. Shared by every backend.
 *
 * The rule keeps the exposure small without knowing anything about the server:
 * - the resolved command and its real path, plus, for `node`, its install prefix (`…/bin/node` →
 *   `…`), so nvm-style installs work;
 * - for the command and every absolute argument naming the server's code (an existing file with
 *   a script extension such as `.js`/`.mjs`/`.ts`/`.py`, or any file inside a `node_modules`
 *   tree): a path inside a `node_modules` tree exposes that outermost `node_modules` (where Node
 *   resolves the server's dependencies from); otherwise the nearest ancestor holding a
 *   `package.json`; otherwise the containing directory. Other path arguments (data, config files,
 *   directories) expose nothing: what the server may touch is the profile's business, so a
 *   `--config ~/.config/x.json` argument needs a grant like any other data;
 * - the configured `cwd`.
 * No directory chosen this way may be `/`, `$HOME` or an ancestor of it, or a shared temp dir
 * (`/tmp`, `/var/tmp`, `os.tmpdir()`): the walk stops below them and falls back to the file alone,
 * so "nothing else of `$HOME`" holds even for a script saved directly in `$HOME`. A `cwd` that is
 * one of them is not exposed; the backend creates it empty instead (`/` and `/tmp` exist anyway).
 *
 * Inside the profile's grants the contained server decides what is there: it can replace its
 * script with a symlink, or delete a `package.json`, and so pick the root the rule above would
 * expose on its next launch. So a file or `cwd` inside a grant source is the grant's business: it
 * adds no root, and nothing walks above the grant source. Its resolution must stay in the grants
 * (or end in `/usr`, `/bin`, `/sbin`, which every sandbox shows read-only anyway, as a Python venv's
 * interpreter does); one that leaves them is refused with `launch-failed`, and so is a path outside
 * the grants that reaches them through a symlink, since whatever its roots resolve to at mount
 * time would be the server's choice. Paths that touch no grant are exposed as before.
 *
 * @module
 */
import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { LocalError, WireError } from '../../shared/errors.ts';
import type { FilesystemGrant } from '../trust/effective-profile.ts';
import { isWithin } from '../trust/filesystem-grants.ts';

/** The launch a policy is compiled for, as read from the sidecar's own server config. */
export interface ContainmentLaunch {
  /** The resolved absolute path of the command. */
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** The server config's own `env` (written by the sidecar admin). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Which part of a launch a read-only root is exposed for (`config-dir-exposure.ts` names it). */
export type LaunchPart = 'command' | 'script' | 'cwd';

/** One read-only root and the part of the launch it is for. */
export interface LaunchRoot {
  readonly path: string;
  readonly for: LaunchPart;
}

export interface LaunchPaths {
  /** Host paths to expose read-only at the same path, deduplicated, shallowest first. */
  readonly readOnly: readonly string[];
  /** Directories to create empty in the sandbox (an unexposable `cwd`). */
  readonly emptyDirs: readonly string[];
  /** Every root before deduplication, with the part of the launch it is for. */
  readonly roots: readonly LaunchRoot[];
}

const SHARED_TEMP = ['/tmp', '/var/tmp'];
/** Shown read-only by every backend (bubblewrap binds them, Seatbelt allows reading them). */
const SYSTEM = ['/usr', '/bin', '/sbin'];
/** Linux's own limit (`MAXSYMLINKS`): a longer chain does not resolve there either. */
const MAX_LINKS = 40;
const CODE_FILE = /\.(c|m)?(j|t)sx?$|\.(py|pyz|rb|pl|php|lua|jar|sh)$/;

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether the name exists, a dangling symlink included: what it points to may be the server's to change. */
function named(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves `path` one component at a time, as the kernel does, and records every place it looks
 * at: each symlink is read where it lies, so a link inside a grant shows up even when the path
 * leaves the grant again. `real` is undefined when the path does not resolve.
 */
function resolution(path: string): { readonly real: string | undefined; readonly visited: readonly string[] } {
  const pending = path.split('/').filter((c) => c !== '');
  const visited: string[] = [];
  let dir = '/';
  let links = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '.') continue;
    if (name === '..') {
      dir = dirname(dir);
      continue;
    }
    const here = join(dir, name);
    visited.push(here);
    let link: string | undefined;
    try {
      link = lstatSync(here).isSymbolicLink() ? readlinkSync(here) : undefined;
    } catch {
      return { real: undefined, visited };
    }
    if (link === undefined) {
      dir = here;
      continue;
    }
    if (++links > MAX_LINKS) return { real: undefined, visited };
    pending.unshift(...link.split('/').filter((c) => c !== ''));
    if (link.startsWith('/')) dir = '/';
  }
  return { real: dir, visited };
}

const WHAT: Record<LaunchPart, string> = { command: 'its command', script: 'its script', cwd: 'its working directory' };

// The message crosses the link, so it names no path (DESIGN §4); the cause holds them for the host.
function outsideGrants(part: LaunchPart, path: string, real: string, inside: boolean): WireError {
  const message = inside
    ? `Cannot start contained process: ${WHAT[part]} lies in a path its trust profile grants and resolves to outside every grant, which the contained server could have arranged: on the host, look there for a planted symlink, and keep the server's own files outside the paths its profile grants`
    : `Cannot start contained process: ${WHAT[part]} reaches a path its trust profile grants through a symlink, so the contained server could choose what it resolves to: on the host, name its real path in the server config`;
  const local = inside ? `"${path}" (${WHAT[part]}) lies in a grant but resolves to "${real}"` : `"${path}" (${WHAT[part]}) resolves through a grant to "${real}"`;
  return new WireError('launch-failed', message, { detail: { part }, cause: new LocalError('launch-path-outside-grant', local) });
}

/**
 * Finds the read-only roots for one launch.
 *
 * @param home The sidecar user's home directory.
 * @param grants The effective profile's grants: what lies in their sources adds no root.
 * @throws WireError `launch-failed` when the command, a script or `cwd` lies in a grant source and
 *   resolves outside every grant, or lies outside and resolves through one.
 */
export function launchPaths(launch: ContainmentLaunch, home: string, grants: readonly Pick<FilesystemGrant, 'sourcePath'>[] = []): LaunchPaths {
  const temps = new Set([...SHARED_TEMP, tmpdir(), ...SHARED_TEMP.map(realPath), realPath(tmpdir())].filter((p): p is string => p !== undefined));
  // The home as spelled and as it resolves: with a symlinked home (/home -> /var/home on ostree
  // systems) a real path's install root would otherwise be the whole real home.
  const homes = [...new Set([home, realPath(home)].filter((p): p is string => p !== undefined))];
  const exposable = (dir: string): boolean => dir !== '/' && !homes.some((h) => isWithin(h, dir)) && !temps.has(dir);
  const granted = (path: string): boolean => grants.some((g) => isWithin(path, g.sourcePath));

  const installRoot = (file: string): string => {
    const segments = file.split('/');
    const modules = segments.indexOf('node_modules');
    if (modules > 0) {
      const tree = segments.slice(0, modules + 1).join('/');
      if (exposable(tree)) return tree;
    }
    for (let dir = dirname(file); exposable(dir); dir = dirname(dir)) {
      if (named(join(dir, 'package.json'))) return dir;
    }
    return exposable(dirname(file)) ? dirname(file) : file;
  };

  /**
   * How `path` relates to the grants: `outside` (its roots are computed as ever, `real` is its
   * real path if it resolves), or `covered` (the grants show it; no root). Throws when the grants
   * would let the server choose where it leads.
   */
  const placed = (path: string, part: LaunchPart): { covered: true } | { covered: false; real: string | undefined } => {
    const { real, visited } = resolution(path);
    const inside = granted(path);
    if (!inside && !visited.some(granted)) return { covered: false, real };
    // Unresolvable: nothing to mount, and the sandbox sees only what the grants show.
    if (real === undefined) return { covered: true };
    if (inside && (granted(real) || SYSTEM.some((d) => isWithin(real, d)))) return { covered: true };
    throw outsideGrants(part, path, real, inside);
  };

  const roots: LaunchRoot[] = [];
  const isCode = (arg: string) => isAbsolute(arg) && (CODE_FILE.test(arg) || arg.split('/').includes('node_modules')) && isFile(arg);
  const files: [string, LaunchPart][] = [[launch.file, 'command'], ...launch.args.filter(isCode).map((arg): [string, LaunchPart] => [arg, 'script'])];
  let interpreter: string | undefined;
  for (const [file, part] of files) {
    const place = placed(file, part);
    if (place.covered) continue;
    const { real } = place;
    roots.push({ path: installRoot(file), for: part });
    if (real !== undefined && real !== file) roots.push({ path: real, for: part }, { path: installRoot(real), for: part });
    if (part === 'command') interpreter = real ?? file;
  }
  if (interpreter !== undefined && /^node(js)?$/.test(basename(interpreter))) {
    const prefix = dirname(dirname(interpreter));
    roots.push({ path: exposable(prefix) ? prefix : interpreter, for: 'command' });
  }
  const emptyDirs: string[] = [];
  if (launch.cwd !== undefined && !placed(launch.cwd, 'cwd').covered) {
    if (exposable(launch.cwd)) roots.push({ path: launch.cwd, for: 'cwd' });
    else if (launch.cwd !== '/' && launch.cwd !== '/tmp') emptyDirs.push(launch.cwd);
  }
  const unique = [...new Set(roots.map((r) => r.path))].sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : 1));
  const readOnly = unique.filter((p, i) => !unique.slice(0, i).some((q) => q !== p && isWithin(p, q)));
  return { readOnly, emptyDirs, roots };
}
