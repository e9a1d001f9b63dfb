/**
 * Where the sidecar finds the tools it runs around a server (bubblewrap, slirp4netns, prlimit,
 * setpriv): on `PATH`, but only where no server can have put them, and once.
 *
 * Each of them runs outside every sandbox, so a file of that name a server planted would run with
 * the sidecar's rights: a `PATH` entry inside a read-write grant (`~/.local/bin`, `~/bin`, a
 * project's `node_modules/.bin` under `npm start`) made that one file away. A server runs as the
 * sidecar's user, so a candidate is taken only when that user can change neither it nor the way to
 * it: the file and every directory on its way, each symlink followed where it lies, are owned by
 * root and not writable by group or others (a sticky directory such as `/tmp` may be: the
 * root-owned entry below it is then safe from everyone else), and, for a sidecar that is not
 * root, not writable by this user either (`access(2)`, which counts its groups and ACLs).
 *
 * A sidecar running as root gains nothing from ownership: its servers run as uid 0 too, and may
 * write any root-owned file a grant shows them. It takes no tool from inside `$HOME` or a
 * `node_modules` tree, the places such grants cover; a grant on a system directory is beyond any
 * lookup.
 *
 * Refused candidates are skipped, as a shell skips a file it cannot run, and reported to the
 * caller, which fails closed where the tool is the sandbox itself. Relative entries are skipped:
 * they would resolve against each server's working directory at its spawn. The answer is kept per
 * `PATH` value for the life of the sidecar, so every launch runs what the first one checked.
 *
 * @module
 */
import { accessSync, constants, lstatSync, readlinkSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';

/** A candidate the lookup would not take, and why. */
export interface RefusedTool {
  readonly file: string;
  readonly why: string;
}

export interface HostToolLookup {
  /** The first trusted candidate, as found on `PATH` (a multi-call binary goes by that name), or null. */
  readonly path: string | null;
  /** The candidates before it (or all of them) that were refused. */
  readonly refused: readonly RefusedTool[];
}

/** Who the sidecar runs as: what the tools must be safe from. */
export interface ToolOwner {
  readonly uid: number;
  readonly home: string;
  /** Whether this user may write `path` (for a sidecar that is not root). */
  readonly writable: (path: string) => boolean;
}

/** Linux's own limit (`MAXSYMLINKS`). */
const MAX_LINKS = 40;
const S_ISVTX = 0o1000;

const canWrite = (path: string): boolean => {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
};

/** The sidecar's own user. */
export function sidecarUser(): ToolOwner {
  return { uid: process.getuid?.() ?? -1, home: homedir(), writable: canWrite };
}

function within(path: string, ancestor: string): boolean {
  return path === ancestor || path.startsWith(`${ancestor}/`);
}

/** Why `stat` at `path` could be changed by a server, or undefined. */
function changeable(path: string, stat: Stats, owner: ToolOwner): string | undefined {
  if (stat.uid !== 0) return `"${path}" is owned by uid ${stat.uid}, not root`;
  const sticky = stat.isDirectory() && (stat.mode & S_ISVTX) !== 0;
  if ((stat.mode & 0o022) !== 0 && !sticky) return `"${path}" is writable by its group or by everyone`;
  if (owner.uid !== 0 && !sticky && owner.writable(path)) return `"${path}" is writable by this user`;
  return undefined;
}

/**
 * Why `file` (absolute) is not a tool the sidecar may run, or undefined when it is.
 *
 * @param owner Who the sidecar runs as; {@link sidecarUser} by default.
 */
export function untrustedBecause(file: string, owner: ToolOwner = sidecarUser()): string | undefined {
  const pending = file.split('/').filter((c) => c !== '');
  let dir = '/';
  let links = 0;
  const check = (path: string): string | undefined => changeable(path, lstatSync(path), owner);
  try {
    let why = check('/');
    while (why === undefined && pending.length > 0) {
      const name = pending.shift()!;
      if (name === '.' || name === '..') {
        if (name === '..') dir = dirname(dir);
        continue;
      }
      const here = join(dir, name);
      const stat = lstatSync(here);
      if (stat.isSymbolicLink()) {
        // Its directory is checked already, but a sticky one (/tmp) lets others make links there
        // that only their owner can change: a link counts only when root owns it.
        if (stat.uid !== 0) return `"${here}" is a symlink owned by uid ${stat.uid}, who can point it elsewhere`;
        if (++links > MAX_LINKS) return `"${file}" does not resolve: too many symlinks`;
        const target = readlinkSync(here);
        pending.unshift(...target.split('/').filter((c) => c !== ''));
        if (target.startsWith('/')) dir = '/';
        continue;
      }
      why = changeable(here, stat, owner);
      if (why === undefined && pending.length > 0 && !stat.isDirectory()) return `"${here}" is not a directory`;
      if (why === undefined && pending.length === 0 && !stat.isFile()) return `"${here}" is not a regular file`;
      dir = here;
    }
    if (why !== undefined) return why;
  } catch (error) {
    return `"${file}" cannot be checked: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
  if (owner.uid === 0) {
    if (owner.home !== '/' && (within(file, owner.home) || within(dir, owner.home))) return `"${file}" is in $HOME, which a root sidecar's servers may be granted`;
    if ([file, dir].some((p) => p.split('/').includes('node_modules'))) return `"${file}" is in a node_modules tree, which a root sidecar's servers may be granted`;
  }
  try {
    accessSync(dir, constants.X_OK);
  } catch {
    return `"${file}" is not executable`;
  }
  return undefined;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

const lookups = new Map<string, HostToolLookup>();

/**
 * The first trusted `name` on `pathValue`'s absolute entries, looked up once per `PATH` value.
 *
 * @param pathValue A `PATH` value.
 * @param owner Who the sidecar runs as (tests name another); a given owner skips the cache.
 */
export function findHostTool(name: string, pathValue: string, owner?: ToolOwner): HostToolLookup {
  const key = `${name}\0${pathValue}`;
  const known = owner === undefined ? lookups.get(key) : undefined;
  if (known !== undefined) return known;
  const refused: RefusedTool[] = [];
  let found: string | null = null;
  for (const dir of pathValue.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (!exists(candidate) || refused.some((r) => r.file === candidate)) continue;
    const why = untrustedBecause(candidate, owner);
    if (why === undefined) {
      found = candidate;
      break;
    }
    refused.push({ file: candidate, why });
  }
  const lookup = { path: found, refused };
  if (owner === undefined) lookups.set(key, lookup);
  return lookup;
}

/**
 * Why a tool may not run: by default (`executable` undefined), when the lookup found only refused
 * ones; a named one, when the lookup refused that very file (doctor names what it was given).
 */
export function toolRefusal(executable: string | undefined, found: HostToolLookup): RefusedTool | undefined {
  return executable === undefined ? (found.path === null ? found.refused[0] : undefined) : found.refused.find((r) => r.file === executable);
}
