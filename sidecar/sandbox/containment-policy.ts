/**
 * A compiled containment policy: what the process executor needs to start one server contained.
 * Produced only on the launch host by the trust compiler (sidecar/trust + sidecar/sandbox), never
 * received over the link.
 *
 * @module
 */

/** Linux: run the server under bubblewrap. */
export interface BubblewrapPolicy {
  readonly backend: 'bubblewrap';
  /** Absolute path of the `bwrap` binary found when the policy was compiled. */
  readonly executable: string;
  /** Every bwrap option that goes before `--` and the server's command line. */
  readonly args: readonly string[];
  /**
   * The complete environment of the contained process. bwrap is spawned with exactly this
   * environment, so values never appear in an argv that other processes can read.
   */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory inside the sandbox. */
  readonly cwd: string;
  /** `sha256:` revision of the trust profile this policy was compiled from. */
  readonly revision: string;
}

/** macOS: run the server under `sandbox-exec -p <profile>`. Generated and tested as text here. */
export interface SeatbeltPolicy {
  readonly backend: 'seatbelt';
  readonly executable: string;
  readonly profile: string;
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly revision: string;
}

export type ContainmentPolicy = BubblewrapPolicy | SeatbeltPolicy;
