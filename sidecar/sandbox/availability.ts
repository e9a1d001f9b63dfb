/**
 * Whether a containment backend can actually run on this host, checked once per binary.
 *
 * Installing bubblewrap is not enough: it needs unprivileged user namespaces, which some
 * distributions disable (Debian's `kernel.unprivileged_userns_clone`, Ubuntu 24.04's AppArmor
 * restriction) and most containers forbid. So the probe runs the smallest real sandbox,
 * `bwrap --unshare-all --ro-bind / / true`, and a failure becomes an actionable
 * `containment-unavailable` at compile time instead of a confusing server exit later. Results are
 * cached per executable path for the life of the sidecar (a host does not gain namespaces while
 * running; restart the sidecar after fixing it).
 *
 * @module
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

export type BackendAvailability = { readonly available: true; readonly executable: string } | { readonly available: false; readonly message: string };

/** Checks a backend; the compiler calls it before producing a policy. */
export type ContainmentProbe = () => Promise<BackendAvailability>;

const FALLBACK_BWRAP = '/usr/bin/bwrap';
const probed = new Map<string, Promise<BackendAvailability>>();

/** The first executable `name` on a `PATH` value, if any. */
export function findOnPath(name: string, pathValue: string | undefined): string | undefined {
  for (const dir of (pathValue ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

function runBubblewrap(executable: string): Promise<BackendAvailability> {
  return new Promise((resolve) => {
    const args = ['--unshare-all', '--ro-bind', '/', '/', 'true'];
    execFile(executable, args, { env: { PATH: '/usr/bin:/bin' }, timeout: 15_000 }, (error, _stdout, stderr) => {
      if (error === null) return resolve({ available: true, executable });
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return resolve({
          available: false,
          message: `Containment unavailable: bubblewrap is not installed (no "${executable}"): install it with the OS package manager, e.g. apt-get install bubblewrap or dnf install bubblewrap`,
        });
      }
      const why = String(stderr).trim().split('\n')[0] || error.message;
      resolve({
        available: false,
        message:
          `Containment unavailable: bubblewrap cannot create a sandbox on this host: ${why}; ` +
          'enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu 24.04+ ' +
          'kernel.apparmor_restrict_unprivileged_userns=0) or run the sidecar where they are allowed',
      });
    });
  });
}

/**
 * The bubblewrap probe.
 *
 * @param executable The `bwrap` to use; by default the first on the sidecar's `PATH`, else `/usr/bin/bwrap`.
 * @returns A probe whose result is cached per executable.
 * @example Pointing at a missing binary
 * ```ts
 * (await bubblewrapProbe('/nonexistent/bwrap')()).available; // false
 * ```
 */
export function bubblewrapProbe(executable?: string): ContainmentProbe {
  return () => {
    const exe = executable ?? findOnPath('bwrap', process.env['PATH']) ?? FALLBACK_BWRAP;
    let result = probed.get(exe);
    if (result === undefined) {
      result = runBubblewrap(exe);
      probed.set(exe, result);
    }
    return result;
  };
}

/**
 * The Seatbelt probe: macOS ships `sandbox-exec`; it only has to be there and executable.
 *
 * @param executable Path of `sandbox-exec`.
 * @returns A probe (not cached: it is one `access` call).
 */
export function seatbeltProbe(executable = '/usr/bin/sandbox-exec'): ContainmentProbe {
  return async () => {
    try {
      await access(executable, constants.X_OK);
      return { available: true, executable };
    } catch {
      return { available: false, message: `Containment unavailable: "${executable}" is missing: Seatbelt ships with macOS; check that the system is intact` };
    }
  };
}
