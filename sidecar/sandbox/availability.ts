/**
 * Whether a containment backend can actually run on this host: the result every backend's probe
 * gives (`bubblewrap/bubblewrap-probe.ts`, `seatbelt/seatbelt-probe.ts`), so the compiler fails
 * closed with an actionable `containment-unavailable` at compile time instead of a confusing
 * server exit later, and `switchyard doctor` reports the same verdict.
 *
 * @module
 */
import { findHostTool, toolRefusal } from '../process/host-tool.ts';
import type { HelperResult } from '../process/masked-spawn.ts';

/**
 * `missing`: the tool is not installed; `unusable`: it is, but cannot sandbox on this host.
 * `message` says what to do.
 */
export type BackendAvailability =
  | { readonly available: true; readonly executable: string }
  | { readonly available: false; readonly problem: 'missing' | 'unusable'; readonly message: string };

/** Checks a backend; the compiler calls it before producing a policy. */
export type ContainmentProbe = () => Promise<BackendAvailability>;

/** What one run of a probe found, and whether that holds for the life of the sidecar. */
export interface ProbeRun {
  readonly availability: BackendAvailability;
  /** The tool ran, or is not installed; not when the check itself could not run (EMFILE, a refused spawn, a timeout). */
  readonly lasting: boolean;
}

/**
 * Whether a helper's run says something for the life of the sidecar: it ran to its end, or the
 * tool is not installed. A spawn that failed for want of descriptors (EMFILE), or a run killed for
 * its time on a loaded host, says nothing lasting about the host.
 */
export function isLastingRun(run: Pick<HelperResult, 'errno' | 'timedOut'>): boolean {
  return run.timedOut !== true && (run.errno === undefined || run.errno === 'ENOENT');
}

/**
 * The probe's result for `executable`, run once and kept for the life of the sidecar (a host
 * does not gain namespaces while it runs), unless it was not lasting: then the next compile
 * checks again, so a moment without descriptors does not disable containment for good.
 */
export function cachedProbe(cache: Map<string, Promise<BackendAvailability>>, executable: string, run: () => Promise<ProbeRun>): Promise<BackendAvailability> {
  let result = cache.get(executable);
  if (result === undefined) {
    result = run().then(({ availability, lasting }) => {
      if (!lasting) cache.delete(executable);
      return availability;
    });
    cache.set(executable, result);
  }
  return result;
}

/**
 * The sidecar's own tool lookup for a sandbox helper that runs outside the sandbox it serves (bwrap,
 * slirp4netns): its `PATH`, then `/usr/bin`, taken only where no server can have put it
 * (`host-tool.ts`); and, when the one to run was refused, the availability that says so.
 *
 * @param executable The tool named explicitly (doctor, tests), else undefined for the lookup's pick.
 * @param needs What needs it, for the message: `bubblewrap "…"`, `the "internet-client" network needs slirp4netns, and "…"`.
 */
export function sandboxHelper(name: string, executable: string | undefined, needs: (file: string) => string): { path: string | null; refused?: BackendAvailability } {
  const found = findHostTool(name, `${process.env['PATH'] ?? ''}:/usr/bin`);
  const refused = toolRefusal(executable, found);
  if (refused === undefined) return { path: found.path };
  return {
    path: found.path,
    refused: {
      available: false,
      problem: 'missing',
      message: `Containment unavailable: ${needs(refused.file)} is not used, since a contained server could have put it there: ${refused.why}; install ${name === 'bwrap' ? 'bubblewrap' : name} with the OS package manager, e.g. apt-get install ${name === 'bwrap' ? 'bubblewrap' : name}, and keep directories the sidecar's user can write off its PATH`,
    },
  };
}
