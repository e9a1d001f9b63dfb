/**
 * One sandbox backend per folder (`bubblewrap/` on Linux, `seatbelt/` on macOS), the way hono
 * keeps one `adapter/<runtime>/` per runtime: each knows how to check it can run here, compile an
 * effective profile into its own policy fields, wrap a launch into its tool's command line, tell
 * when the sandbox runs the command, and explain its tool's setup failures.
 *
 * The process executor sees a compiled policy only as a {@link ContainedLaunch}
 * (`process/contained-launch.ts`); {@link containedLaunch} binds a backend's fields to its
 * operations so the executor never needs to know which backend it runs.
 *
 * @module
 */
import type { WireError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import type { ContainedLaunch, SandboxReadiness, SandboxSpawn, SpawnedSandbox } from '../process/contained-launch.ts';
import type { ProcessExit } from '../process/process-handle.ts';
import type { EffectiveProfile } from '../trust/effective-profile.ts';
import type { ContainmentProbe } from './availability.ts';
import type { ContainmentLaunch } from './launch-paths.ts';

/** The fields every backend's compiled policy has. */
export interface PolicyFields {
  readonly backend: string;
  /** The probed sandbox tool. */
  readonly executable: string;
  /** The complete environment of the contained process (see `environment.ts`). */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory of the contained process. */
  readonly cwd: string;
  /** `sha256:` revision of the trust profile this policy was compiled from. */
  readonly revision: string;
}

/** What a backend compiles from: the profile, the launch and the host facts. */
export interface CompileInput {
  readonly effective: EffectiveProfile;
  readonly launch: ContainmentLaunch;
  /** The probed sandbox tool. */
  readonly executable: string;
  readonly revision: string;
  /** The sidecar user's home directory (never exposed). */
  readonly home: string;
  readonly sidecarEnv: Readonly<Record<string, string | undefined>>;
  /** Size cap of each private tmpfs of the sandbox (`/tmp`, `/dev/shm`), in bytes. */
  readonly tmpSizeBytes: number;
  /** Checks the helper a sandbox network needs (bubblewrap: slirp4netns for `internet-client`). */
  readonly networkProbe?: ContainmentProbe;
  /** For what is refused: the paths go here, never into the error. */
  readonly log: Logger;
}

export interface SandboxBackend<F extends PolicyFields> {
  readonly name: F['backend'];
  /** What every sandbox of the backend shows, whatever the profile (system folders): kept away from the sidecar's own files too. */
  readonly systemPaths: readonly string[];
  /** The default availability check (the compiler's `probe` option overrides it). */
  probe(): ContainmentProbe;
  /**
   * @throws WireError `containment-unavailable` for what the backend cannot enforce.
   */
  compile(input: CompileInput): F | Promise<F>;
  /** The tool's command line running `command args` under `policy`; throws `containment-unavailable` off its platform. */
  wrap(policy: F, command: string, args: readonly string[]): SandboxSpawn;
  whenReady(policy: F, sandbox: SpawnedSandbox, signal: AbortSignal): Promise<SandboxReadiness>;
  classifyFailure(stderr: string, exit: ProcessExit): WireError | undefined;
}

type Operations = Pick<ContainedLaunch, 'wrap' | 'whenReady' | 'classifyFailure'>;
const operations = new WeakMap<object, Operations>();

/** One set of operations per backend, so two policies with equal fields are equal. */
function operationsOf<F extends PolicyFields>(backend: SandboxBackend<F>): Operations {
  let ops = operations.get(backend);
  if (ops === undefined) {
    ops = {
      wrap(this: F, command: string, args: readonly string[]) {
        return backend.wrap(this, command, args);
      },
      whenReady(this: F, sandbox: SpawnedSandbox, signal: AbortSignal) {
        return backend.whenReady(this, sandbox, signal);
      },
      classifyFailure: (stderr, exit) => backend.classifyFailure(stderr, exit),
    };
    operations.set(backend, ops);
  }
  return ops;
}

/**
 * @param backend The backend that compiled `fields`.
 * @param fields Its compiled policy fields.
 * @returns The policy, as data plus the operations the process executor calls. `wrap` and
 *   `whenReady` read `this`, so a spread copy with changed fields launches with the changed fields.
 */
export function containedLaunch<F extends PolicyFields>(backend: SandboxBackend<F>, fields: F): F & ContainedLaunch {
  return { ...fields, ...operationsOf(backend) };
}
