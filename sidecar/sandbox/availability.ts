/**
 * Whether a containment backend can actually run on this host: the result every backend's probe
 * gives (`bubblewrap/bubblewrap-probe.ts`, `seatbelt/seatbelt-probe.ts`), so the compiler fails
 * closed with an actionable `containment-unavailable` at compile time instead of a confusing
 * server exit later, and `switchyard doctor` reports the same verdict.
 *
 * @module
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * `missing`: the tool is not installed; `unusable`: it is, but cannot sandbox on this host.
 * `message` says what to do.
 */
export type BackendAvailability =
  | { readonly available: true; readonly executable: string }
  | { readonly available: false; readonly problem: 'missing' | 'unusable'; readonly message: string };

/** Checks a backend; the compiler calls it before producing a policy. */
export type ContainmentProbe = () => Promise<BackendAvailability>;

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
