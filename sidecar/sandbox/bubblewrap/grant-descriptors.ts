/**
 * Symlink-safe grants: each grant's source is opened by the sidecar and bubblewrap mounts the
 * descriptor (`--bind-fd` / `--ro-bind-fd`), not the path.
 *
 * bwrap resolves a source path when it mounts it, following every symlink on the way. A server
 * with a read-write grant on `/x/shared` could replace `shared/public` with a symlink to
 * `~/.ssh`, and the next sandbox whose profile grants `/x/shared/public` read-only would mount
 * the keys. So a source is opened with `O_PATH | O_NOFOLLOW` (no symlink as the last component;
 * `O_PATH` needs no read permission and never blocks on a FIFO), and what the kernel says the
 * descriptor is (`/proc/self/fd/N`) must be the source itself: any symlink in an earlier
 * component shows as a different path. A swap after the open changes nothing, since the mount
 * follows the descriptor to the object it was opened on.
 *
 * A source that is not its own real path is refused rather than followed: the profile must name
 * the real path. The refusal crosses the link, so its message names no path; the `cause`
 * carries it for the sidecar log.
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync } from 'node:fs';
import { LocalError, WireError } from '../../../shared/errors.ts';

/** Linux `O_PATH` (not in `fs.constants`): a descriptor that names a file without opening it for I/O. */
const O_PATH = 0o10000000;

/** The sidecar's descriptors on the grant sources of one launch; `close` once bwrap holds its copies. */
export interface GrantDescriptors {
  readonly fds: readonly number[];
  close(): void;
}

function refused(problem: string, local: string): WireError {
  return new WireError('launch-failed', `Cannot start contained process: ${problem}: on the host, name the real path in the trust profile; the sidecar log names it`, {
    detail: { backend: 'bubblewrap' },
    cause: new LocalError('grant-not-real-path', local),
  });
}

/** Opens one source; throws unless the descriptor is the source itself, a directory or a file. */
function openOwnPath(source: string): number {
  let fd: number;
  try {
    fd = openSync(source, O_PATH | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new WireError('launch-failed', 'Cannot start contained process: a path its trust profile grants does not exist on this host; the sidecar log names it', {
        detail: { backend: 'bubblewrap' },
        cause: new LocalError('grant-missing', `Granted path "${source}" does not exist: ${code}`),
      });
    }
    throw refused('a path its trust profile grants cannot be opened', `Granted path "${source}" cannot be opened: ${code}`);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isSymbolicLink()) throw refused('a path its trust profile grants is a symlink', `Granted path "${source}" is a symlink`);
    if (!stat.isDirectory() && !stat.isFile()) throw refused('a path its trust profile grants is neither a directory nor a file', `Granted path "${source}" is neither a directory nor a file`);
    const actual = readlinkSync(`/proc/self/fd/${fd}`);
    if (actual !== source) throw refused('a path its trust profile grants goes through a symlink', `Granted path "${source}" resolves to "${actual}"`);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * @param sources Grant sources, absolute and normalised, in the order bwrap's arguments name their descriptors.
 * @returns One descriptor per source, in order.
 * @throws WireError `launch-failed` for a source that is missing, a symlink, behind a symlink, or
 *   neither a directory nor a file; nothing stays open then.
 */
export function openGrantSources(sources: readonly string[]): GrantDescriptors {
  const fds: number[] = [];
  const close = () => {
    for (const fd of fds.splice(0)) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    }
  };
  try {
    for (const source of sources) fds.push(openOwnPath(source));
  } catch (error) {
    close();
    throw error;
  }
  return { fds: [...fds], close };
}
