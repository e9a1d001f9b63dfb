/**
 * For `switchyard check` and `doctor`: whether the trust profile a launch on this host would run
 * under grants a path that contains or lies in the host's config dir, which the sidecar refuses
 * (`compileContainment`, `launch-failed`) for every server. Both questions are asked of the host's
 * own rules, so that what check and doctor predict is what the host does: the profile a launch
 * runs under is `resolveEffectiveTrust`'s (the agent's pin composed under the floor), and the
 * exposure is `grantExposures`'.
 *
 * - {@link floorExposure}: a floor (sidecar.json's, or a server's own in its mcp.json) on its own.
 *   Not every launch under a floor is refused: an agent's pin narrows it, so an agent whose own
 *   profile grants narrower paths runs (the README's `base.json` is such a ceiling). Only a launch
 *   for an agent that names no profile runs under the floor alone.
 * - {@link launchExposure}: one server launched for one agent (its pin, or none), which is refused
 *   every time when it exposes the dir.
 *
 * No worker code: the workstation's `sidecar.js` runs doctor with it.
 *
 * @module
 */
import { silentLogger } from '../sidecar/log.ts';
import { grantExposureReason, grantExposures, type ConfigDirRole, type OwnFile } from '../sidecar/sandbox/config-dir-exposure.ts';
import { type HostTrustPolicy, resolveEffectiveTrust } from '../sidecar/trust/host-floor.ts';
import type { TrustProfileStore } from '../sidecar/trust/profile-store.ts';

/** Which launches under a floor that exposes the dir are refused, and which are not. */
export const FLOOR_REFUSES = 'an agent that names no trust profile runs under this floor alone and is refused (launch-failed), while one whose own profile grants narrower paths runs';

/**
 * @param dir The host's config dir.
 * @param store Its `trust-profiles/`.
 * @param ref A floor's profile reference.
 * @param files The host's own files kept outside the dir (`ownFiles`), kept out as the dir is.
 * @returns Why launches under it alone are refused (begins with "grants"), or `null` when its
 *   grants keep away from the dir or it cannot be loaded (reported elsewhere).
 */
export async function floorExposure(dir: string, store: TrustProfileStore, ref: string, role: ConfigDirRole = 'sidecar', files: readonly OwnFile[] = []): Promise<string | null> {
  let grants;
  try {
    grants = (await store.load(ref)).effective.filesystemPaths;
  } catch {
    return null;
  }
  const exposures = grantExposures(dir, grants, files);
  return exposures.length === 0 ? null : grantExposureReason(dir, exposures, FLOOR_REFUSES, role, files);
}

export interface LaunchRequest {
  readonly server: string;
  /** The server entry's own `"trust-profile"`. */
  readonly serverFloor?: string | undefined;
  /** The agent's pin: its profile at the revision the worker sends. */
  readonly requested?: { readonly ref: string; readonly revision: string } | undefined;
}

/**
 * @param dir The host's config dir.
 * @param store Its `trust-profiles/`.
 * @param host sidecar.json's floor and `"allow-uncontained"`.
 * @param request A stdio server of the host, launched for one agent.
 * @param files As for {@link floorExposure}.
 * @returns Why every such launch is refused, starting "the trust profile it runs under (…)", or
 *   `null` when it is not refused for its grants: no exposing grant, uncontained, or refused for
 *   another reason (a stale pin, no profile at all), which check and doctor report as that.
 */
export async function launchExposure(dir: string, store: TrustProfileStore, host: HostTrustPolicy, request: LaunchRequest, role: ConfigDirRole = 'sidecar', files: readonly OwnFile[] = []): Promise<string | null> {
  let trust;
  try {
    trust = await resolveEffectiveTrust(store, host, request, silentLogger);
  } catch {
    return null;
  }
  if (trust === null) return null;
  const exposures = grantExposures(dir, trust.effective.filesystemPaths, files);
  if (exposures.length === 0) return null;
  const floor = trust.floor === null ? null : request.serverFloor !== undefined ? `the server's own floor "${trust.floor}"` : `the host's floor "${trust.floor}"`;
  const under =
    trust.requested === null ? `${floor}; the agent names none` : floor === null ? `"${trust.requested}", pinned by the agent; no floor` : `"${trust.requested}", pinned by the agent, under ${floor}`;
  return `the trust profile it runs under (${under}) ${grantExposureReason(dir, exposures, undefined, role, files)}`;
}
