/**
 * A per-process memory limit without root or cgroups: RLIMIT_DATA (the private writable memory a
 * process may have: heap, anonymous mappings, what it has made writable), set by util-linux's
 * `prlimit` just before it execs the launch, so the limit holds from the first instruction and
 * every process of the tree inherits it. bubblewrap has no cgroups, and setting the limit after
 * the spawn (`prlimit --pid`) would miss children forked meanwhile.
 *
 * Why not RLIMIT_AS: it counts reserved address space, and runtimes reserve far more than they use
 * (V8 reserves its heap cage, every WebAssembly memory reserves ~10 GiB of guard pages: Node's own
 * `fetch` instantiates one), so a 4 GiB RLIMIT_AS kills ordinary Node servers on their first
 * request. RLIMIT_DATA counts only what is made writable, close to what a process really commits:
 * a runaway server fails its allocation (Node: "Array buffer allocation failed", "heap out of
 * memory") instead of taking the workstation with it.
 *
 * @module
 */
import { findUtilLinuxTool } from './util-linux.ts';

/** Where `prlimit` is, or null (not Linux, or util-linux absent). */
export function findPrlimit(env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  return findUtilLinuxTool('prlimit', env, platform);
}

export interface AddressSpaceLimit {
  /** The `prlimit` binary that applies it. */
  readonly prlimit: string;
  readonly bytes: number;
}

/** The command line that runs `file args` under the limit (prlimit execs it: same pid, same descriptors). */
export function limitedCommand(limit: AddressSpaceLimit, file: string, args: readonly string[]): { file: string; args: string[] } {
  return { file: limit.prlimit, args: [`--data=${limit.bytes}`, '--', file, ...args] };
}
