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
 * @module
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
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

/** Finds the read-only roots for one launch. `home` is the sidecar user's home directory. */
export function launchPaths(launch: ContainmentLaunch, home: string): LaunchPaths {
  const temps = new Set([...SHARED_TEMP, tmpdir(), ...SHARED_TEMP.map(realPath), realPath(tmpdir())].filter((p): p is string => p !== undefined));
  const exposable = (dir: string): boolean => dir !== '/' && !isWithin(home, dir) && !temps.has(dir);

  const installRoot = (file: string): string => {
    const segments = file.split('/');
    const modules = segments.indexOf('node_modules');
    if (modules > 0) {
      const tree = segments.slice(0, modules + 1).join('/');
      if (exposable(tree)) return tree;
    }
    for (let dir = dirname(file); exposable(dir); dir = dirname(dir)) {
      if (existsSync(join(dir, 'package.json'))) return dir;
    }
    return exposable(dirname(file)) ? dirname(file) : file;
  };

  const roots: LaunchRoot[] = [];
  const isCode = (arg: string) => isAbsolute(arg) && (CODE_FILE.test(arg) || arg.split('/').includes('node_modules')) && isFile(arg);
  const files: [string, LaunchPart][] = [[launch.file, 'command'], ...launch.args.filter(isCode).map((arg): [string, LaunchPart] => [arg, 'script'])];
  for (const [file, part] of files) {
    const real = realPath(file);
    roots.push({ path: installRoot(file), for: part });
    if (real !== undefined && real !== file) roots.push({ path: real, for: part }, { path: installRoot(real), for: part });
  }
  const interpreter = realPath(launch.file) ?? launch.file;
  if (/^node(js)?$/.test(basename(interpreter))) {
    const prefix = dirname(dirname(interpreter));
    roots.push({ path: exposable(prefix) ? prefix : interpreter, for: 'command' });
  }
  const emptyDirs: string[] = [];
  if (launch.cwd !== undefined) {
    if (exposable(launch.cwd)) roots.push({ path: launch.cwd, for: 'cwd' });
    else if (launch.cwd !== '/' && launch.cwd !== '/tmp') emptyDirs.push(launch.cwd);
  }
  const unique = [...new Set(roots.map((r) => r.path))].sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : 1));
  const readOnly = unique.filter((p, i) => !unique.slice(0, i).some((q) => q !== p && isWithin(p, q)));
  return { readOnly, emptyDirs, roots };
}
