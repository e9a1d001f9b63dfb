/**
 * A trust profile's revision: a digest of what the effective profile decides, nothing else.
 *
 * Worker configs pin revisions, and a pinned revision that no longer matches locks the agent out
 * (`trust-profile-stale`), so a revision must change exactly when what a launch runs under
 * changes: the effective (composed) filesystem grants with their modes and mappings, the network,
 * the environment rule and the tool-call schemas. A description, formatting, key order, a
 * profile's name, or an edit to a base that leaves the composition's result as it was does not
 * change it. Order is kept where the sidecar can observe it (tool-call schemas are evaluated and
 * named in deny messages by position) and dropped where it cannot (`environment.inherit`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import type { EffectiveProfile } from './effective-profile.ts';

/** Bumped when what the digest covers changes, so old and new revisions never collide. */
const FORMAT = 'effective-policy/1';

/** The effective profile as the plain JSON the revision is a digest of. */
export function policyOf(effective: EffectiveProfile): unknown {
  const { environment } = effective;
  return {
    format: FORMAT,
    'filesystem-paths': effective.filesystemPaths.map((g) => ({ 'source-path': g.sourcePath, 'target-path': g.targetPath, 'access-mode': g.accessMode })),
    'network-capabilities': effective.networkCapabilities ?? null,
    environment: environment === undefined ? null : { inherit: [...environment.inherit].sort(), set: environment.set },
    'allowed-tool-calls': effective.allowedToolCalls ?? null,
    'restricted-tool-calls': effective.restrictedToolCalls,
  };
}

/**
 * @param effective An effective profile: one file's with its bases composed in, or a launch's
 *   (an agent's profile under the host's floor).
 * @returns `sha256:<hex>` of the canonical JSON of {@link policyOf}.
 * @example Equal policies, equal revisions
 * ```ts
 * policyRevision(NEUTRAL_PROFILE) === policyRevision({ ...NEUTRAL_PROFILE }); // true
 * ```
 */
export function policyRevision(effective: EffectiveProfile): string {
  return `sha256:${createHash('sha256').update(canonicalJson(policyOf(effective))).digest('hex')}`;
}
