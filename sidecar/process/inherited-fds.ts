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
 * Linux only (it reads `/proc/self/fd` and `/proc/self/fdinfo`), and closed there: a launch
 * whose sidecar cannot list them is refused (`launch-failed`), never started with whatever the
 * list would have held. Elsewhere (macOS, Windows) there is no such list, nothing is taken as
 * inheritable and nothing masked: `seatbelt` and Windows launches go on as before.
 *
 * @module
 */
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { LocalError, WireError } from '../../shared/errors.ts';
import { maskShortfall, openFilesLimit } from './mask-reach.ts';

/** `O_CLOEXEC` as `/proc/self/fdinfo/N` prints it in its octal `flags:` line. */
const O_CLOEXEC = 0o2000000;

/** What {@link inheritableDescriptorsIn} reads of a process's descriptor table. */
export interface DescriptorTable {
  /** The names in `/proc/self/fd`; throws when the directory cannot be read. */
  list(): string[];
  /** `/proc/self/fdinfo/N`; throws when it cannot be read (ENOENT: N was closed meanwhile, or there is no fdinfo). */
  info(fd: number): string;
  /** Whether N is open now (`fstat`): tells a descriptor closed meanwhile from a `/proc` without fdinfo. */
  isOpen(fd: number): boolean;
}

/** The running process's own table, from `/proc/self`. */
export const ownDescriptorTable: DescriptorTable = {
  list: () => readdirSync('/proc/self/fd'),
  info: (fd) => readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'),
  isOpen: (fd) => {
    try {
      fstatSync(fd);
      return true;
    } catch {
      return false;
    }
  },
};

const errnoOf = (error: unknown): string => String((error as NodeJS.ErrnoException | null)?.code ?? 'unknown');

function unreadable(what: string, error: unknown): WireError {
  const errno = errnoOf(error);
  return new WireError('launch-failed', `Cannot start process: cannot list the descriptors a child would inherit, ${what} is unreadable: ${errno}`, {
    detail: { errno },
    cause: new LocalError('descriptors-unreadable', `Cannot read ${what}: ${(error as Error | null)?.message ?? String(error)}`, { cause: error }),
  });
}

/**
 * The descriptors ≥ 3 that a child of the process `table` describes would inherit, on `platform`.
 *
 * @returns Their numbers, ascending; empty, without reading `table`, off Linux. A descriptor whose
 *   `flags:` line cannot be parsed counts as inheritable (masking one more costs nothing).
 * @throws WireError `launch-failed` (cause: LocalError `descriptors-unreadable`) on Linux when the
 *   list, or one descriptor's flags, cannot be read: the launch must not go ahead blind.
 */
export function inheritableDescriptorsIn(platform: NodeJS.Platform, table: DescriptorTable): number[] {
  if (platform !== 'linux') return [];
  let entries: string[];
  try {
    entries = table.list();
  } catch (error) {
    throw unreadable('/proc/self/fd', error);
  }
  const found: number[] = [];
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || fd < 3) continue;
    let info: string;
    try {
      info = table.info(fd);
    } catch (error) {
      // Closed meanwhile (the directory handle the listing itself used, say) is skipped; still open
      // with no fdinfo to read is masked, as an unparsable one is: a /proc without fdinfo must not
      // let every descriptor through.
      if (errnoOf(error) === 'ENOENT') {
        if (table.isOpen(fd)) found.push(fd);
        continue;
      }
      throw unreadable(`/proc/self/fdinfo/${fd}`, error);
    }
    const flags = /^flags:\s*([0-7]+)/m.exec(info);
    if (flags === null || (Number.parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) found.push(fd);
  }
  return found.sort((a, b) => a - b);
}

/**
 * The descriptors ≥ 3 of this process that a spawned child would inherit.
 *
 * @returns Their numbers, ascending; empty off Linux.
 * @throws WireError `launch-failed` on Linux when `/proc/self/fd`, or a descriptor's fdinfo, cannot be read.
 */
export function inheritableDescriptors(): number[] {
  return inheritableDescriptorsIn(process.platform, ownDescriptorTable);
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

/** Refuses a mask libuv could not set up in the child (`mask-reach.ts`), naming the descriptor and the limit. */
function checkReach(masked: readonly number[], placeholder: number, firstFree: number): void {
  const limit = openFilesLimit();
  if (limit === null) return; // the spawn itself still fails before exec, with its own errno
  let open: number[];
  try {
    open = ownDescriptorTable.list().map(Number).filter(Number.isInteger);
  } catch {
    return;
  }
  const lacking = maskShortfall({ limit, open, placeholder, masked, firstFree });
  if (lacking === 0) return;
  const fd = masked.at(-1)!;
  throw new WireError('launch-failed', `Cannot start process: the sidecar holds fd ${fd} without close-on-exec, too near its open-files limit (${limit}) for a spawn to mask it: close it before the sidecar starts, or raise the limit (ulimit -n)`, {
    detail: { fd, limit },
    cause: new LocalError('descriptor-out-of-reach', `A spawn would need ${lacking} more free descriptors above fd ${fd} (${descriptorTargets([fd])[0]!.target}) than the limit of ${limit} leaves`),
  });
}

/**
 * The mask for `fds` on a spawn whose `stdio` already fills the indices below `firstFree` (a
 * descriptor there is replaced by the spawn's own entry anyway).
 *
 * @returns `null` when nothing needs masking.
 * @throws When `/dev/null` cannot be opened (the spawn must not go ahead then); WireError
 *   `launch-failed` when the highest is too near the open-files limit to be masked (`mask-reach.ts`).
 */
export function descriptorMask(fds: readonly number[], firstFree: number): DescriptorMask | null {
  const masked = [...new Set(fds)].filter((fd) => fd >= firstFree).sort((a, b) => a - b);
  if (masked.length === 0) return null;
  const placeholder = openSync('/dev/null', 'r'); // close-on-exec, as Node opens everything
  try {
    checkReach(masked, placeholder, firstFree);
  } catch (error) {
    closeSync(placeholder);
    throw error;
  }
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
 * `spawnMasked` (`masked-spawn.ts`) does this for every spawn; a sandbox backend calls it itself,
 * to name the numbers to its tool.
 *
 * @param firstFree The spawn's `stdio` length without the mask (3 plus its own descriptors).
 * @throws WireError `launch-failed` when the descriptors cannot be listed, or the highest is out of reach.
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
