/**
 * Whether bubblewrap can actually run on this host, checked once per binary.
 *
 * Installing bubblewrap is not enough: it needs unprivileged user namespaces, which some
 * distributions disable (Debian's `kernel.unprivileged_userns_clone`, Ubuntu 24.04's AppArmor
 * restriction) and most containers forbid, and the sandbox uses options older versions lack
 * (`--disable-userns`, `--size`: bubblewrap 0.8). So the probe runs the smallest real sandbox with
 * the namespace options every policy uses, `bwrap --unshare-all --unshare-user --disable-userns
 * --ro-bind / / true`. Results are cached per executable path for the life of the sidecar (a
 * host does not gain namespaces while running; restart the sidecar after fixing it), unless the
 * check itself could not run (`cachedProbe`).
 *
 * bwrap itself runs unconfined, so it is taken from `PATH` only where no server can have put it
 * (`host-tool.ts`); with none there, containment is unavailable, saying which file was refused and
 * why, and nothing is run.
 *
 * @module
 */
import { type HelperResult, runHelper } from '../../process/masked-spawn.ts';
import { type BackendAvailability, cachedProbe, type ContainmentProbe, isLastingRun, type ProbeRun, sandboxHelper } from '../availability.ts';

const FALLBACK_BWRAP = '/usr/bin/bwrap';
const probed = new Map<string, Promise<BackendAvailability>>();

async function runBubblewrap(executable: string): Promise<ProbeRun> {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--ro-bind', '/', '/', 'true'];
  let result: HelperResult;
  try {
    result = await runHelper(executable, args, { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 15_000 });
  } catch (error) {
    // Not spawned: the sidecar's descriptors could not be listed or masked, so no helper runs.
    return { lasting: false, availability: { available: false, problem: 'unusable', message: `Containment unavailable: bubblewrap cannot be checked on this host: ${(error as Error).message}` } };
  }
  return { lasting: isLastingRun(result), availability: verdict(executable, result) };
}

function verdict(executable: string, result: HelperResult): BackendAvailability {
  if (result.ok) return { available: true, executable };
  if (result.errno === 'ENOENT') {
    return {
      available: false,
      problem: 'missing',
      message: `Containment unavailable: bubblewrap is not installed (no "${executable}"): install it with the OS package manager, e.g. apt-get install bubblewrap or dnf install bubblewrap`,
    };
  }
  const why = result.stderr.trim().split('\n')[0] || result.message;
  if (/unknown option|unrecognized option/i.test(why)) {
    return {
      available: false,
      problem: 'unusable',
      message: `Containment unavailable: bubblewrap "${executable}" is too old: ${why}; install bubblewrap 0.8 or later (for --disable-userns and --size)`,
    };
  }
  return {
    available: false,
    problem: 'unusable',
    message:
      `Containment unavailable: bubblewrap cannot create a sandbox on this host: ${why}; ` +
      'enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, and on Ubuntu 24.04+ ' +
      'kernel.apparmor_restrict_unprivileged_userns=0) or run the sidecar where they are allowed',
  };
}

/** `sandboxHelper` for bwrap: the path the lookup took, and the refusal when the one to run was refused. */
const helper = (executable?: string) => sandboxHelper('bwrap', executable, (file) => `bubblewrap "${file}"`);

/**
 * The `bwrap` a probe checks: `executable`, else the first on the sidecar's `PATH` that no server
 * can have put there, else `/usr/bin/bwrap`.
 */
export function bubblewrapExecutable(executable?: string): string {
  return executable ?? helper().path ?? FALLBACK_BWRAP;
}

/**
 * The bubblewrap probe.
 *
 * @param executable The `bwrap` to use, as tests and `switchyard doctor --bwrap` name one; by
 *   default the first trusted one on the sidecar's `PATH`, else `/usr/bin/bwrap`.
 * @returns A probe whose result is cached per executable.
 * @example Pointing at a missing binary
 * ```ts
 * (await bubblewrapProbe('/nonexistent/bwrap')()).available; // false
 * ```
 */
export function bubblewrapProbe(executable?: string): ContainmentProbe {
  return () => {
    const exe = bubblewrapExecutable(executable);
    const refused = helper(executable).refused;
    if (refused !== undefined) return Promise.resolve(refused);
    return cachedProbe(probed, exe, () => runBubblewrap(exe));
  };
}
