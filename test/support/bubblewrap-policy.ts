/**
 * A minimal working bubblewrap policy for this Debian host, for executor and transport tests that
 * launch a contained process without going through trust compilation.
 *
 * @module
 */
import { bubblewrapLaunch } from '../../sidecar/sandbox/bubblewrap/bubblewrap-backend.ts';
import type { BubblewrapPolicy } from '../../sidecar/sandbox/containment-policy.ts';

/** Read-only /usr and `repo`, no network, a tmpfs /tmp; `extra` appends bubblewrap arguments. */
export function testBubblewrapPolicy(
  repo: string,
  options: { extra?: readonly string[]; executable?: string; env?: Record<string, string> } = {},
): BubblewrapPolicy {
  return bubblewrapLaunch({
    backend: 'bubblewrap',
    executable: options.executable ?? '/usr/bin/bwrap',
    args: [
      '--unshare-all', '--die-with-parent', '--new-session',
      '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64',
      '--symlink', 'usr/bin', '/bin', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp',
      '--ro-bind', repo, repo, ...(options.extra ?? []),
    ],
    env: { PATH: '/usr/bin:/bin', ...options.env },
    cwd: repo,
    revision: 'sha256:test',
  });
}
