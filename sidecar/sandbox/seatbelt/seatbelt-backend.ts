/**
 * The Seatbelt backend (macOS): `sandbox-exec -p <profile> command ...args`. sandbox-exec cannot
 * report readiness, so the executor watches its fixed setup window; a `sandbox-exec: …` line on
 * stderr explains a setup failure. Off macOS a policy refuses to launch before anything spawns.
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import type { SeatbeltPolicy, SeatbeltPolicyFields } from '../containment-policy.ts';
import { containedLaunch, type SandboxBackend } from '../sandbox-backend.ts';
import { sandboxToolFailure } from '../setup-failure.ts';
import { SYSTEM_READ, seatbeltPolicy } from './seatbelt.ts';
import { seatbeltProbe } from './seatbelt-probe.ts';

/** @param platform Where launches happen; `process.platform` by default (tests pin `darwin`). */
export function seatbeltBackendOn(platform: NodeJS.Platform = process.platform): SandboxBackend<SeatbeltPolicyFields> {
  return {
    name: 'seatbelt',
    systemPaths: SYSTEM_READ,
    probe: () => seatbeltProbe(),
    compile: seatbeltPolicy,
    wrap: (policy, command, args) => {
      if (platform !== 'darwin') {
        throw new WireError('containment-unavailable', `Cannot start contained process: Seatbelt is only available on macOS, not on "${platform}"`, {
          detail: { backend: 'seatbelt' },
        });
      }
      return { file: policy.executable, args: ['-p', policy.profile, command, ...args], env: policy.env, cwd: policy.cwd };
    },
    whenReady: () => Promise.resolve('unknown' as const),
    classifyFailure: (stderr, exit) => sandboxToolFailure('seatbelt', 'sandbox-exec: ', stderr, exit),
  };
}

export const seatbeltBackend = seatbeltBackendOn();

/** A Seatbelt policy from its fields, launched on `platform` (`process.platform` by default). */
export function seatbeltLaunch(fields: SeatbeltPolicyFields, platform?: NodeJS.Platform): SeatbeltPolicy {
  return containedLaunch(platform === undefined ? seatbeltBackend : seatbeltBackendOn(platform), fields);
}
