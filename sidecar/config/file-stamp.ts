/**
 * A file's version as the file system tells it, without reading the file: device, inode, size,
 * modification and change time. What the host derives from a config file (a parsed mcp.json, a
 * composed trust profile) is reused while the stamps of the files it came from are unchanged, so
 * a channel open does not read and parse the same files again (issue 17), and an edit, a rename
 * over the file or its removal is still seen at the next open, as when every open read the disk.
 *
 * A file changed within the last `SETTLE_MS` gets no stamp (null: read it): the kernel's file
 * times are coarse (a few ms), so two writes of the same size that close together could leave
 * one stamp; once a file has been quiet that long, any later write changes its times (git's
 * "racily clean" rule).
 *
 * @module
 */
import { statSync } from 'node:fs';

/** How long after its last change a file's stamp is trusted. */
export const SETTLE_MS = 2000;

/**
 * @returns The file's stamp, `absent` when there is no file at `path`, or null when it cannot be
 *   stamped (changed too recently, or stat failed otherwise): the caller reads it afresh.
 * @example A missing file has a stamp too
 * ```ts
 * fileStamp('/nonexistent/mcp.json') === 'absent';
 * ```
 */
export function fileStamp(path: string, now = Date.now()): string | null {
  let stat;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    return (error as { code?: string }).code === 'ENOTDIR' ? 'absent' : null;
  }
  if (stat === undefined) return 'absent';
  if (now - Math.max(stat.mtimeMs, stat.ctimeMs) < SETTLE_MS) return null;
  return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
}

/** The stamps of `paths` joined into one key, or null when any of them has none. */
export function filesStamp(paths: readonly string[], now = Date.now()): string | null {
  const stamps: string[] = [];
  for (const path of paths) {
    const stamp = fileStamp(path, now);
    if (stamp === null) return null;
    stamps.push(stamp);
  }
  return stamps.join('|');
}
