/**
 * Containment: when a server must be sandboxed, and the one platform switch that picks the
 * backend (`bubblewrap/` on Linux, `seatbelt/` on macOS, nothing elsewhere; each a
 * `SandboxBackend`, see `sandbox-backend.ts`).
 *
 * DESIGN §5: containment is required exactly when the effective profile grants a filesystem path
 * or lists network capabilities (an empty list means "no network"). Required containment that
 * cannot be applied fails closed with `containment-unavailable`: there is no fallback to an
 * uncontained launch anywhere in this module. A contained launch that would show the sandbox any
 * of the sidecar's own config dir is refused with `launch-failed` (`config-dir-exposure.ts`).
 *
 * @module
 */
import { homedir } from 'node:os';
import { LocalError, WireError } from '../../shared/errors.ts';
import { type Logger, silentLogger } from '../log.ts';
import { constrainsProcess, type EffectiveProfile } from '../trust/effective-profile.ts';
import type { ContainmentProbe } from './availability.ts';
import { bubblewrapBackend } from './bubblewrap/bubblewrap-backend.ts';
import { configDirExposures, configDirRefusal, type ConfigDirRole, type OwnFile } from './config-dir-exposure.ts';
import type { ContainmentPolicy } from './containment-policy.ts';
import type { ContainmentLaunch } from './launch-paths.ts';
import { containedLaunch, type PolicyFields, type SandboxBackend } from './sandbox-backend.ts';
import { seatbeltBackend } from './seatbelt/seatbelt-backend.ts';
import type { ContainedLaunch } from '../process/contained-launch.ts';

export type { BackendAvailability, ContainmentProbe } from './availability.ts';
export { bubblewrapExecutable, bubblewrapProbe } from './bubblewrap/bubblewrap-probe.ts';
export { NSENTER, userModeNetworkExecutable, userModeNetworkProbe } from './bubblewrap/user-mode-network.ts';
export { configDirExposures, configDirWarnings, systemExposureReason, type ConfigDirExposure, type OwnFile } from './config-dir-exposure.ts';
export { seatbeltProbe } from './seatbelt/seatbelt-probe.ts';
export type { BubblewrapPolicy, ContainmentPolicy, SeatbeltPolicy } from './containment-policy.ts';
export type { ContainmentLaunch } from './launch-paths.ts';
export { PolicyCache, type PolicyCacheKey } from './policy-cache.ts';

/**
 * @param effective An effective trust profile.
 * @returns Whether a server launched under it must be contained.
 * @example
 * ```ts
 * containmentRequired({ ...NEUTRAL_PROFILE, networkCapabilities: [] }); // true
 * containmentRequired(NEUTRAL_PROFILE); // false
 * ```
 */
export function containmentRequired(effective: EffectiveProfile): boolean {
  return constrainsProcess(effective);
}

export interface CompileOptions {
  /** The trust profile revision, recorded in the policy. */
  readonly revision: string;
  /** Defaults to `process.platform`. */
  readonly platform?: NodeJS.Platform;
  /** Defaults to the platform backend's probe (`bubblewrapProbe()`, `seatbeltProbe()`). */
  readonly probe?: ContainmentProbe;
  /** Where `environment.inherit` reads from; defaults to `process.env`. */
  readonly sidecarEnv?: Readonly<Record<string, string | undefined>>;
  /** The home directory never exposed; defaults to `os.homedir()`. */
  readonly home?: string;
  /** The sidecar's config dir: a launch that would expose any of it is refused. */
  readonly configDir?: string;
  /** The sidecar's own files kept outside the config dir (`key-file`, `audit.file`): refused as the dir is. */
  readonly ownFiles?: readonly OwnFile[];
  /** Whose dir `configDir` is, for the refusal's words; a sidecar's by default. */
  readonly configDirRole?: ConfigDirRole;
  /** The server being compiled for, named in refusals. */
  readonly server?: string;
  /** Size cap of the sandbox's `/tmp` and `/dev/shm`; default {@link DEFAULT_TMP_SIZE_BYTES}. */
  readonly tmpSizeBytes?: number;
  /** Checks the user-mode network helper (`internet-client`); defaults to `userModeNetworkProbe()`. */
  readonly networkProbe?: ContainmentProbe;
  /** Where refusals log the paths they keep out of their messages. */
  readonly log?: Logger;
}

/** The default cap of a sandbox's private `/tmp` (and `/dev/shm`): 64 MiB. */
export const DEFAULT_TMP_SIZE_BYTES = 64 * 1024 * 1024;

/**
 * Compiles the containment policy for one server launch.
 *
 * @param effective The effective trust profile.
 * @param launch The server as configured on this host, its command already resolved to a path.
 * @param options Revision, platform and probe.
 * @returns `null` when containment is not required, else the policy for the process executor.
 * @throws WireError `containment-unavailable` when no usable backend exists or the backend
 *   cannot enforce the profile; `launch-failed` when the launch would expose the config dir, or a
 *   grant or launch root is not its own real path (a symlink, or a path inside a grant that leads
 *   out of every grant); LocalError `invalid-launch` for a relative command path.
 */
export async function compileContainment(effective: EffectiveProfile, launch: ContainmentLaunch, options: CompileOptions): Promise<ContainmentPolicy | null> {
  if (!containmentRequired(effective)) return null;
  if (!launch.file.startsWith('/')) throw new LocalError('invalid-launch', `Cannot contain a relative command path: resolve "${launch.file}" first`);
  const platform = options.platform ?? process.platform;
  switch (platform) {
    case 'linux':
      return compileWith(bubblewrapBackend, effective, launch, options);
    case 'darwin':
      return compileWith(seatbeltBackend, effective, launch, options);
    default:
      throw new WireError(
        'containment-unavailable',
        `Containment unavailable: no sandbox backend on platform "${platform}": run servers that need containment on a Linux host (bubblewrap) or a macOS host (Seatbelt)`,
        { detail: { platform } },
      );
  }
}

/** What the backend of `platform` shows every sandbox (none where there is no backend). */
export function systemPathsHere(platform: NodeJS.Platform = process.platform): readonly string[] {
  return platform === 'linux' ? bubblewrapBackend.systemPaths : platform === 'darwin' ? seatbeltBackend.systemPaths : [];
}

/** The last reason containment was unavailable for, logged once until it changes or containment works. */
let lastUnavailable: string | undefined;

async function compileWith<F extends PolicyFields>(
  backend: SandboxBackend<F>,
  effective: EffectiveProfile,
  launch: ContainmentLaunch,
  options: CompileOptions,
): Promise<F & ContainedLaunch> {
  // Before the probe, as a refusal that no install fixes.
  if (options.configDir !== undefined) refuseConfigDirExposure(effective, launch, options, options.configDir, backend.systemPaths);
  const availability = await (options.probe ?? backend.probe())();
  if (!availability.available) {
    // The agent is told why; the operator reading the sidecar's log is too, once per reason
    // (the audit lines carry only the stable reason).
    if (availability.message !== lastUnavailable) (options.log ?? silentLogger).warn('Containment unavailable: launches that need it are refused', { backend: backend.name, why: availability.message });
    lastUnavailable = availability.message;
    throw new WireError('containment-unavailable', availability.message, { detail: { backend: backend.name } });
  }
  lastUnavailable = undefined;
  const facts = {
    home: options.home ?? homedir(),
    sidecarEnv: options.sidecarEnv ?? process.env,
    revision: options.revision,
    tmpSizeBytes: options.tmpSizeBytes ?? DEFAULT_TMP_SIZE_BYTES,
    log: options.log ?? silentLogger,
    ...(options.networkProbe ? { networkProbe: options.networkProbe } : {}),
  };
  return containedLaunch(backend, await backend.compile({ effective, launch, executable: availability.executable, ...facts }));
}

function refuseConfigDirExposure(effective: EffectiveProfile, launch: ContainmentLaunch, options: CompileOptions, configDir: string, system: readonly string[]): void {
  const exposures = configDirExposures(configDir, launch, { home: options.home ?? homedir(), grants: effective.filesystemPaths, files: options.ownFiles ?? [], system });
  const first = exposures[0];
  if (first === undefined) return;
  (options.log ?? silentLogger).warn('Refused a contained launch that would expose the sidecar config dir or its own files', { configDir, ...(options.ownFiles?.length ? { ownFiles: options.ownFiles } : {}), exposures, ...(options.server ? { server: options.server } : {}) });
  throw new WireError('launch-failed', configDirRefusal(first, options.server, options.configDirRole), { detail: { ...(options.server ? { server: options.server } : {}), exposedBy: first.by } });
}
