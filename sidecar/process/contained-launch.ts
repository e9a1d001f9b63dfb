/**
 * What the process executor needs from a compiled containment policy, and nothing more.
 *
 * The executor knows no sandbox backend: a policy (compiled in `sidecar/sandbox/`, one backend
 * per folder, the hono `adapter/<runtime>/` way) wraps the server's command line into the sandbox
 * tool's own, says when the sandbox runs the command, and tells the tool's setup failure from the
 * server's exit. The dependency points from `sandbox/` to here, never back.
 *
 * @module
 */
import type { Duplex } from 'node:stream';
import type { WireError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import type { DescriptorMask } from './inherited-fds.ts';
import type { ProcessExit } from './process-handle.ts';

/**
 * One descriptor of the sandbox tool beyond stdin, stdout and stderr:
 * - `'pipe'`: a pipe between the sidecar and the tool (bwrap's status and block fds);
 * - `{ data }`: a pipe the executor writes `data` to and then closes (a file bwrap copies in, or
 *   the seccomp filter it loads);
 * - `{ fd }`: a descriptor the sidecar opened for this launch, passed as is (a grant's source,
 *   or the `/dev/null` of a mask, `inherited-fds.ts`);
 * - `'ignore'`: nothing put at this number (a gap below a masked one).
 */
export type SandboxDescriptor = 'pipe' | 'ignore' | { readonly data: string | Uint8Array } | { readonly fd: number };

/** The sandbox tool's command line that runs one server inside the sandbox. */
export interface SandboxSpawn {
  readonly file: string;
  readonly args: readonly string[];
  /** The complete environment of the sandbox tool (and so of the server). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** The tool's fds 3, 4, …, in order; the tool's arguments name them by number. */
  readonly descriptors?: readonly SandboxDescriptor[];
  /**
   * The mask over the descriptors the sidecar holds without `O_CLOEXEC` (`inherited-fds.ts`),
   * whose entries end `descriptors`, and whose numbers the tool's arguments close before it runs
   * the command. `null`: there were none. Absent: the backend cannot close any, so the executor
   * refuses the launch while the sidecar holds one the tool's own descriptors do not replace.
   */
  readonly inherited?: DescriptorMask | null;
  /**
   * Closes the sidecar's copies of the `{ fd }` descriptors, and the mask. The executor calls it
   * exactly once, right after the spawn (the child holds its own copies by then) or when the
   * spawn fails.
   */
  release?(): void;
}

/**
 * The `LocalError` code a backend's `whenReady` throws when the sandbox it set up cannot be
 * finished but a new one may be (a race the backend lost, not a refusal): the executor ends that
 * sandbox and launches again, a bounded number of times.
 */
export const LAUNCH_AGAIN = 'sandbox-launch-again';

/** `unknown`: the sandbox cannot tell; the executor then watches a fixed setup window. */
export type SandboxReadiness = 'ready' | 'unknown';

/** The spawned sandbox tool as {@link ContainedLaunch.whenReady} sees it. */
export interface SpawnedSandbox {
  readonly pid: number;
  /** The tool's fds 3, 4, … as the sidecar holds them: a stream for each pipe, `null` for the others. */
  readonly descriptors: readonly (Duplex | null)[];
  /** Settles when the tool exits: helpers started beside the sandbox end with it. */
  readonly exited: Promise<ProcessExit>;
  /** Ends the sandbox at once (a helper the sandbox waits for failed after the launch was handed out). */
  kill(): void;
  /**
   * Names a process of the sandbox outside the tool's process group (bwrap's PID 1, which calls
   * `setsid` for `--new-session`): from now on it is killed with the group, however the launch
   * ends. bwrap binds it to the tool (`--die-with-parent`) only once its setup is done, so a
   * sandbox ended before that outlived its tool (CI, s26).
   */
  adopt(pid: number): void;
  /** The executor's logger, for what a helper reports. */
  readonly log: Logger;
}

/** A compiled containment policy as the executor sees it: it knows how to launch under itself. */
export interface ContainedLaunch {
  /** The backend's name, for spawn reports, logs and error detail (`bubblewrap`, `seatbelt`). */
  readonly backend: string;
  /**
   * @param command The resolved file of the server.
   * @param args Its arguments.
   * @returns What to spawn instead.
   * @throws WireError `containment-unavailable` when the backend cannot run on this host, or
   *   `launch-failed` when what the policy mounts is not what it was compiled for.
   */
  wrap(command: string, args: readonly string[]): SandboxSpawn;
  /**
   * Finishes the sandbox's setup (starting what it needs beside it, such as its network) and
   * resolves once the sandbox runs the command, or `unknown`. `signal` ends only the wait; setup
   * the sandbox is blocked on goes on.
   *
   * @throws WireError when a helper the sandbox needs cannot start.
   */
  whenReady(sandbox: SpawnedSandbox, signal: AbortSignal): Promise<SandboxReadiness>;
  /** The launch failure the tool's stderr explains, or `undefined` when the server itself exited. */
  classifyFailure(stderr: string, exit: ProcessExit): WireError | undefined;
}
