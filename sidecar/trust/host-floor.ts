/**
 * The host's floor: what a launch on this workstation runs under, decided here and not by the
 * worker (DESIGN §4, §5: an agent's trust context is a request, not the last word).
 *
 * The floor is a trust profile of this host: a server entry's own `"trust-profile"` in its
 * mcp.json, else `sidecar.json`'s `"trust-profile"`. The effective profile is the agent's
 * requested profile (if the worker names one) composed restrictively with the floor (if the host
 * has one), so a compromised worker can narrow a launch but never widen it past the floor, and
 * leaving the profile out of the request gets the floor, not an uncontained process.
 *
 * | floor | agent profile | launch |
 * |---|---|---|
 * | yes | no | the floor |
 * | yes | yes | agent ∧ floor |
 * | no | yes | the agent's profile |
 * | no | no | refused (`denied-by-policy`), unless `sidecar.json` says `"allow-uncontained": true` |
 *
 * The agent's profile is checked against the revision the worker expects (`trust-profile-stale`
 * when it differs, with neither revision in the error: they are logged here); the floor is the
 * host's own and is checked against nothing. A floor this host cannot load is the host's
 * misconfiguration: the launch fails closed with `launch-failed`, its name and problem logged.
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import { underFloor } from './compose.ts';
import type { EffectiveProfile } from './effective-profile.ts';
import { policyRevision } from './policy-revision.ts';
import type { ResolvedTrustProfile, TrustProfileStore } from './profile-store.ts';

/** The sidecar.json keys that decide what a launch with no agent profile gets. */
export interface HostTrustPolicy {
  /** `"trust-profile"`: the floor of every server on this host that names none of its own. */
  readonly floor?: string;
  /** `"allow-uncontained"`: with neither a floor nor an agent profile, launch uncontained anyway. */
  readonly allowUncontained?: boolean;
}

export interface EffectiveTrust {
  readonly effective: EffectiveProfile;
  /**
   * Names `effective` for caches and the compiled policy: its policy digest (`policy-revision.ts`),
   * so a change to either profile that changes the launch compiles afresh.
   */
  readonly revision: string;
  /** The profile references it was made of, for the local log. */
  readonly floor: string | null;
  readonly requested: string | null;
}

export interface TrustRequest {
  /** The server being opened, for messages. */
  readonly server: string;
  /** The server entry's own floor (`"trust-profile"` in its mcp.json), which wins over the host's. */
  readonly serverFloor?: string | undefined;
  /** What the worker sent: both or neither (the connection request schema enforces it). */
  readonly requested?: { readonly ref: string; readonly revision: string } | undefined;
  /** How old a check of the profiles' files may be (`TrustProfileStore.load`); 0, stat them now, by default. */
  readonly stampAgeMs?: number;
}

/**
 * Whether the host refuses a launch for want of any profile (`denied-by-policy`): neither a floor
 * (the server entry's own or sidecar.json's) nor an agent profile, and no `"allow-uncontained"`.
 * {@link resolveEffectiveTrust} refuses by it; `switchyard check worker.json DIR` and doctor ask it
 * ahead of any launch, so that what they predict is what the host does.
 */
export function refusedForWantOfProfile(host: HostTrustPolicy, request: Pick<TrustRequest, 'serverFloor' | 'requested'>): boolean {
  return (request.serverFloor ?? host.floor) === undefined && request.requested === undefined && host.allowUncontained !== true;
}

/**
 * @returns The effective trust of the launch, or `null` for an uncontained launch the host allows.
 * @throws WireError `denied-by-policy` (neither a floor nor an agent profile, uncontained not
 *   allowed), `trust-profile-not-found` / `trust-profile-stale` / `invalid-request` (the agent's
 *   profile), `launch-failed` (a profile file of this host that cannot be used).
 */
export async function resolveEffectiveTrust(store: TrustProfileStore, host: HostTrustPolicy, request: TrustRequest, log: Logger): Promise<EffectiveTrust | null> {
  const floorRef = request.serverFloor ?? host.floor;
  const { requested, server } = request;
  if (refusedForWantOfProfile(host, request)) {
    throw new WireError(
      'denied-by-policy',
      `Server "${server}" would run uncontained: this host has no trust floor and the agent's trust context names no profile; ` +
        'on the host, set "trust-profile" in sidecar.json (or in the server\'s mcp.json entry), or "allow-uncontained": true to run such servers uncontained',
      { detail: { server } },
    );
  }
  if (floorRef === undefined && requested === undefined) return null;
  const stampAgeMs = request.stampAgeMs ?? 0;
  const floor = floorRef === undefined ? null : await loadFloor(store, floorRef, server, log, stampAgeMs);
  const agent = requested === undefined ? null : await loadRequested(store, requested, log, stampAgeMs);
  if (floor !== null && agent !== null) return { ...composedUnderFloor(agent, floor), floor: floor.ref, requested: agent.ref };
  const only = (floor ?? agent)!;
  return { effective: only.effective, revision: only.revision, floor: floor?.ref ?? null, requested: agent?.ref ?? null };
}

/**
 * `agent ∧ floor` and its revision, by the two resolved profiles: the store hands back the same
 * objects while their files are unchanged, and new ones after an edit, so an entry is never stale
 * and goes with them. Composing and digesting again on every open of a modern agent's request was
 * work per request for a result that changes only with a file.
 */
const composed = new WeakMap<ResolvedTrustProfile, WeakMap<ResolvedTrustProfile, { effective: EffectiveProfile; revision: string }>>();

function composedUnderFloor(agent: ResolvedTrustProfile, floor: ResolvedTrustProfile): { effective: EffectiveProfile; revision: string } {
  let byFloor = composed.get(agent);
  if (byFloor === undefined) composed.set(agent, (byFloor = new WeakMap()));
  let result = byFloor.get(floor);
  if (result === undefined) {
    const effective = underFloor(agent.effective, floor.effective);
    byFloor.set(floor, (result = { effective, revision: policyRevision(effective) }));
  }
  return result;
}

async function loadFloor(store: TrustProfileStore, ref: string, server: string, log: Logger, stampAgeMs: number): Promise<ResolvedTrustProfile> {
  try {
    return await store.load(ref, stampAgeMs);
  } catch (error) {
    log.error('The host\'s trust floor cannot be used: every launch under it is refused', { floor: ref, error });
    throw new WireError('launch-failed', `Server "${server}" cannot start: this host's trust floor is unusable, see the sidecar log`, { detail: { server } });
  }
}

async function loadRequested(store: TrustProfileStore, requested: { ref: string; revision: string }, log: Logger, stampAgeMs: number): Promise<ResolvedTrustProfile> {
  const { ref } = requested;
  try {
    return await store.resolve(
      ref,
      requested.revision,
      ({ expected, current }) => log.warn('Trust profile revision differs from the one the worker sent: launch refused', { ref, expected, current }),
      stampAgeMs,
    );
  } catch (error) {
    if (error instanceof WireError) throw error;
    log.error('Trust profile is unusable', { ref, error });
    throw new WireError('launch-failed', `Trust profile "${ref}" cannot be used on this host: see the sidecar log`, { detail: { ref } });
  }
}
