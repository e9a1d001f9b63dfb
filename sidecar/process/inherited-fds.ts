/**
 * Descriptors a spawned child would inherit, and how a spawn keeps them from it (DESIGN §5: no
 * stray descriptors).
 *
 * libuv does not close a parent's descriptors when it spawns a child: every descriptor without
 * `O_CLOEXEC` reaches the child, and through bwrap the server inside the sandbox (a pipe a shell
 * left open showed up as fd 251 inside). Node and libuv open everything `O_CLOEXEC`, but not
 * everything in the process is theirs: what the sidecar inherited from whoever started it has no
 * flag, and neither have the files V8 opens for its own flags (`--perf-basic-prof`'s
 * `/tmp/perf-PID.map`, `--prof`'s log), which it writes to for as long as the process runs. The
 * two look the same from here, so the sidecar closes neither: closing V8's map let the link's
 * socket take its number, and V8 then wrote its map into the link.
 *
 * The child drops them instead, between fork and exec, where libuv already works: each such
 * descriptor at or above the spawn's own gets a `stdio` entry, a descriptor on `/dev/null` that
 * libuv's `dup2` puts over it in the child only. The sidecar's own copy stays as it was. An
 * ordinary server then holds `/dev/null` at that number, which opens nothing; a sandbox backend
 * masks them in the spawn it wraps and has its tool close those numbers before it runs the
 * command (`SandboxSpawn.inherited`), so a contained server holds none.
 *
 * The list is read in the same synchronous step as the spawn, and the sidecar's own code opens
 * nothing between the two; a native thread that opened a descriptor without `O_CLOEXEC` in that
 * instant is the one case left, and none of the sidecar's threads does (libuv's pool opens
 * everything `O_CLOEXEC`).
 *
 * Linux only (it reads `/proc/self/fdinfo`); elsewhere nothing is inheritable and nothing masked.
 *
 * @module
 */
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** `O_CLOEXEC` as `/proc/self/fdinfo/N` prints it in its octal `flags:` line. */
const O_CLOEXEC = 0o2000000;

/**
 * The descriptors ≥ 3 of this process that a spawned child would inherit.
 *
 * @returns Their numbers, ascending; empty off Linux.
 */
export function inheritableDescriptors(): number[] {
  if (process.platform !== 'linux') return [];
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd < 3) continue;
    let info: string;
    try {
      info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // gone meanwhile, or the directory handle readdirSync itself used
    }
    const flags = /^flags:\s*([0-7]+)/m.exec(info);
    if (flags !== null && (Number.parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) found.push(fd);
  }
  return found.sort((a, b) => a - b);
}

/** One masked descriptor and what it is in the sidecar, for the log (never for the link). */
export interface MaskedDescriptor {
  readonly fd: number;
  /** `readlink /proc/self/fd/N`: a path, `pipe:[…]`, `socket:[…]`, or `unknown`. */
  readonly target: string;
}

/** What one spawn adds to keep the sidecar's inheritable descriptors from its child. */
export interface DescriptorMask {
  /** The masked numbers, ascending, all at or above the spawn's first free index. */
  readonly fds: readonly number[];
  /**
   * The spawn's `stdio` entries from its first free index on: the `/dev/null` descriptor at each
   * masked number, `'ignore'` (which libuv leaves alone above 2) between them.
   */
  readonly stdio: readonly (number | 'ignore')[];
  /** Each masked number with what it points to in the sidecar. */
  describe(): MaskedDescriptor[];
  /** Closes the sidecar's `/dev/null` descriptor; once the spawn returned (or failed). */
  close(): void;
}

/** Each of `fds` with what it points to in this process. */
export function descriptorTargets(fds: readonly number[]): MaskedDescriptor[] {
  return fds.map((fd) => {
    try {
      return { fd, target: readlinkSync(`/proc/self/fd/${fd}`) };
    } catch {
      return { fd, target: 'unknown' };
    }
  });
}

/**
 * The mask for `fds` on a spawn whose `stdio` already fills the indices below `firstFree` (a
 * descriptor there is replaced by the spawn's own entry anyway).
 *
 * @returns `null` when nothing needs masking.
 * @throws When `/dev/null` cannot be opened (the spawn must not go ahead then).
 */
export function descriptorMask(fds: readonly number[], firstFree: number): DescriptorMask | null {
  const masked = [...new Set(fds)].filter((fd) => fd >= firstFree).sort((a, b) => a - b);
  if (masked.length === 0) return null;
  const placeholder = openSync('/dev/null', 'r'); // close-on-exec, as Node opens everything
  const stdio: (number | 'ignore')[] = Array.from({ length: masked.at(-1)! + 1 - firstFree }, () => 'ignore');
  for (const fd of masked) stdio[fd - firstFree] = placeholder;
  let open = true;
  return {
    fds: masked,
    stdio,
    describe: () => descriptorTargets(masked),
    close() {
      if (open) closeSync(placeholder);
      open = false;
    },
  };
}

/**
 * The mask for every descriptor this process holds that a child would inherit.
 *
 * @param firstFree The spawn's `stdio` length without the mask (3 plus its own descriptors).
 * @example Before a spawn
 * ```ts
 * const mask = maskInheritableDescriptors(3);
 * try {
 *   spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe', ...(mask?.stdio ?? [])] });
 * } finally {
 *   mask?.close();
 * }
 * ```
 */
export function maskInheritableDescriptors(firstFree: number): DescriptorMask | null {
  return descriptorMask(inheritableDescriptors(), firstFree);
}
