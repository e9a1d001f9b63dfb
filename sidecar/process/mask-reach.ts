/**
 * How high a spawn can mask. libuv (1.46, `uv__process_child_init`) sets up a child's `stdio` in
 * two passes between fork and exec: first every entry whose source descriptor is below its own
 * index is copied to a free number at or above the array's length (`F_DUPFD_CLOEXEC`), then each
 * is `dup2`ed into place. A mask's `/dev/null` is opened low, below the numbers it masks, so each
 * of those takes one such copy, and the array is as long as the highest masked number plus one.
 * The copies must fit between that length and the open-files limit (RLIMIT_NOFILE, which the
 * child has from the sidecar); a stray at the limit's last number leaves no room at all, and
 * `fcntl` fails with EINVAL (EMFILE when the room is merely taken). The spawn then fails
 * before exec, with an `EINVAL` that names nothing; this module lets the mask say why instead.
 *
 * The count is an upper bound where libuv's own choices are not known ahead: each of the spawn's
 * own entries above 2 may need a copy too, and the descriptors libuv opens for the spawn (two per
 * pipe, two for its exec check) land above the highest only when none are free below it.
 *
 * @module
 */
import { readFileSync } from 'node:fs';

export interface MaskRoom {
  /** The soft RLIMIT_NOFILE: descriptors are numbered below it. */
  readonly limit: number;
  /** Every descriptor open in the sidecar as the mask is made, its `/dev/null` included. */
  readonly open: readonly number[];
  /** The mask's `/dev/null`. */
  readonly placeholder: number;
  /** The masked numbers, ascending, non-empty. */
  readonly masked: readonly number[];
  /** The spawn's own `stdio` length (the mask's entries follow it). */
  readonly firstFree: number;
}

/**
 * @returns How many free descriptors the child would lack above the highest masked number: 0 when the mask fits.
 * @example A stray at the last number the limit allows
 * ```ts
 * maskShortfall({ limit: 256, open: [0, 1, 2, 20, 255], placeholder: 20, masked: [255], firstFree: 3 }); // 1
 * ```
 */
export function maskShortfall(room: MaskRoom): number {
  const length = room.masked.at(-1)! + 1;
  const copies = room.masked.filter((fd) => fd > room.placeholder).length + Math.max(0, room.firstFree - 3);
  const opened = 2 * room.firstFree + 2;
  const openBelow = room.open.filter((fd) => fd < length).length;
  const openAbove = room.open.length - openBelow;
  const openedAbove = Math.max(0, opened - (length - openBelow));
  const free = room.limit - length - openAbove - openedAbove;
  return Math.max(0, copies - Math.max(0, free));
}

/** The soft open-files limit from `/proc/self/limits`, or `null` when it cannot be read (the spawn then reports for itself). */
export function openFilesLimit(limits: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | null {
  let text: string;
  try {
    text = limits();
  } catch {
    return null;
  }
  const soft = /^Max open files\s+(\d+|unlimited)\s/m.exec(text)?.[1];
  return soft === undefined || soft === 'unlimited' ? null : Number(soft);
}
