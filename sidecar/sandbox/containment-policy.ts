/**
 * A compiled containment policy: what the process executor needs to start one server contained.
 * Produced only on the launch host by the trust compiler (sidecar/trust + sidecar/sandbox), never
 * received over the link. Each policy is its backend's fields plus the {@link ContainedLaunch}
 * operations the executor calls (bound by `containedLaunch` in `sandbox-backend.ts`).
 *
 * @module
 */
import type { ContainedLaunch } from '../process/contained-launch.ts';
import type { ContainedNetwork } from '../trust/effective-profile.ts';
import type { PolicyFields } from './sandbox-backend.ts';

/** Linux: run the server under bubblewrap. */
export interface BubblewrapPolicyFields extends PolicyFields {
  readonly backend: 'bubblewrap';
  /** Absolute path of the `bwrap` binary found when the policy was compiled. */
  readonly executable: string;
  /**
   * Every bwrap option that goes before `--` and the server's command line, except the status and
   * block fds the backend adds. Grants and launch roots are mounted from descriptors (`--bind-fd N`,
   * `--ro-bind-fd N`), numbered as `bubblewrap-descriptors.ts` lays them out.
   */
  readonly args: readonly string[];
  /** The grant sources of the `--bind-fd` / `--ro-bind-fd` mounts in `args`, in descriptor order; opened at each launch. */
  readonly grantSources?: readonly string[];
  /** The implicit launch roots `args` mounts with `--ro-bind-fd` after the grants, in descriptor order; opened at each launch. */
  readonly launchRoots?: readonly string[];
  /** The sandbox's network; absent means `none` (a hand-written policy). */
  readonly network?: ContainedNetwork;
  /** The probed `slirp4netns`, present exactly when `network` is `internet-client`. */
  readonly userModeNetwork?: string;
  /**
   * The complete environment of the contained process. bwrap is spawned with exactly this
   * environment, so values never appear in an argv that other processes can read.
   */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory inside the sandbox. */
  readonly cwd: string;
}

/** macOS: run the server under `sandbox-exec -p <profile>`. Generated and tested as text here. */
export interface SeatbeltPolicyFields extends PolicyFields {
  readonly backend: 'seatbelt';
  readonly profile: string;
}

export interface BubblewrapPolicy extends BubblewrapPolicyFields, ContainedLaunch {
  readonly backend: 'bubblewrap';
}

export interface SeatbeltPolicy extends SeatbeltPolicyFields, ContainedLaunch {
  readonly backend: 'seatbelt';
}

export type ContainmentPolicy = BubblewrapPolicy | SeatbeltPolicy;
