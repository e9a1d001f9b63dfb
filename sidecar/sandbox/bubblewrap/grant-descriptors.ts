/**
 * Symlink-safe mounts: each grant's source, and each implicit launch root outside the grants
 * (`launch-paths.ts`: the interpreter, the install dir, `cwd`), is opened by the sidecar and
 * bubblewrap mounts the descriptor (`--bind-fd` / `--ro-bind-fd`), not the path.
 *
 * bwrap resolves a source path when it mounts it, following every symlink on the way. A server
 * with a read-write grant on `/x/shared` could replace `shared/public` with a symlink to
 * `~/.ssh`, and the next sandbox whose profile grants `/x/shared/public` read-only would mount
 * the keys; a shared install dir that another profile's server can write is a launch root open
 * to the same swap. So a source is opened with `O_PATH | O_NOFOLLOW` (no symlink as the last
 * component; `O_PATH` needs no read permission and never blocks on a FIFO), and what the kernel
 * says the descriptor is (`/proc/self/fd/N`) must be the source itself: any symlink in an earlier
 * component shows as a different path. A swap after the open changes nothing, since the mount
 * follows the descriptor to the object it was opened on.
 *
 * A source that is not its own real path is refused rather than followed: the profile, or for a
 * launch root the server config, must name the real path. The refusal crosses the link, so its
 * message names no path; the `cause` carries it for the sidecar log.
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync } from 'node:fs';
import { LocalError, WireError } from '../../../shared/errors.ts';

/** Linux `O_PATH` (not in `fs.constants`): a descriptor that names a file without opening it for I/O. */
const O_PATH = 0o10000000;

/** The sidecar's descriptors on the mount sources of one launch; `close` once bwrap holds its copies. */
export interface GrantDescriptors {
  readonly fds: readonly number[];
  close(): void;
}

/** What a source is to the launch, so a refusal says what to fix where. */
export type SourceRole = 'grant' | 'launch-root';

const ROLES: Record<SourceRole, { readonly subject: string; readonly fix: string; readonly local: string }> = {
  grant: { subject: 'a path its trust profile grants', fix: 'name the real path in the trust profile', local: 'Granted path' },
  'launch-root': {
    subject: 'a path its command, script or working directory is mounted from',
    fix: 'name real paths in the server config, and keep its install dir where no other server can write',
    local: 'Launch root',
  },
};

function refused(role: SourceRole, problem: string, local: string): WireError {
  const { subject, fix } = ROLES[role];
  return new WireError('launch-failed', `Cannot start contained process: ${subject} ${problem}: on the host, ${fix}; the sidecar log names it`, {
    detail: { backend: 'bubblewrap' },
    cause: new LocalError(`${role}-not-real-path`, local),
  });
}

/** Opens one source; throws unless the descriptor is the source itself, a directory or a file. */
function openOwnPath(source: string, role: SourceRole): number {
  const { subject, local } = ROLES[role];
  let fd: number;
  try {
    fd = openSync(source, O_PATH | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new WireError('launch-failed', `Cannot start contained process: ${subject} does not exist on this host; the sidecar log names it`, {
        detail: { backend: 'bubblewrap' },
        cause: new LocalError(`${role}-missing`, `${local} "${source}" does not exist: ${code}`),
      });
    }
    throw refused(role, 'cannot be opened', `${local} "${source}" cannot be opened: ${code}`);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isSymbolicLink()) throw refused(role, 'is a symlink', `${local} "${source}" is a symlink`);
    if (!stat.isDirectory() && !stat.isFile()) throw refused(role, 'is neither a directory nor a file', `${local} "${source}" is neither a directory nor a file`);
    const actual = readlinkSync(`/proc/self/fd/${fd}`);
    if (actual !== source) throw refused(role, 'goes through a symlink', `${local} "${source}" resolves to "${actual}"`);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * @param grants Grant sources, absolute and normalised, in the order bwrap's arguments name their descriptors.
 * @param launchRoots Implicit launch roots outside the grants, likewise; their descriptors follow the grants'.
 * @returns One descriptor per source, grants first, in order.
 * @throws WireError `launch-failed` for a source that is missing, a symlink, behind a symlink, or
 *   neither a directory nor a file; nothing stays open then.
 */
export function openGrantSources(grants: readonly string[], launchRoots: readonly string[] = []): GrantDescriptors {
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
    for (const source of grants) fds.push(openOwnPath(source, 'grant'));
    for (const source of launchRoots) fds.push(openOwnPath(source, 'launch-root'));
  } catch (error) {
    close();
    throw error;
  }
  return { fds: [...fds], close };
}
