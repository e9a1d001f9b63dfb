/**
 * A per-process memory limit without root or cgroups: RLIMIT_AS (the address space a process may
 * map), set by util-linux's `prlimit` just before it execs the launch, so the limit holds from the
 * first instruction and every process of the tree inherits it. bubblewrap has no cgroups, and
 * setting the limit after the spawn (`prlimit --pid`) would miss children forked meanwhile.
 *
 * RLIMIT_AS bounds what a process can map, not what it touches: a runaway server fails its
 * allocation (Node aborts with "heap out of memory") instead of taking the workstation with it.
 * Node reserves about 1 GiB of address space at start, so limits well under that stop it from
 * starting at all.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where `prlimit` is, or null (not Linux, or util-linux absent). */
export function findPrlimit(env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  if (platform !== 'linux') return null;
  for (const dir of (env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'prlimit');
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

export interface AddressSpaceLimit {
  /** The `prlimit` binary that applies it. */
  readonly prlimit: string;
  readonly bytes: number;
}

/** The command line that runs `file args` under the limit (prlimit execs it: same pid, same descriptors). */
export function limitedCommand(limit: AddressSpaceLimit, file: string, args: readonly string[]): { file: string; args: string[] } {
  return { file: limit.prlimit, args: [`--as=${limit.bytes}`, '--', file, ...args] };
}
