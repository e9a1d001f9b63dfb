/**
 * Whether Seatbelt can run here: macOS ships `sandbox-exec`; it only has to be there and executable.
 *
 * @module
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { ContainmentProbe } from '../availability.ts';

/**
 * The Seatbelt probe.
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
      return { available: false, problem: 'missing', message: `Containment unavailable: "${executable}" is missing: Seatbelt ships with macOS; check that the system is intact` };
    }
  };
}
