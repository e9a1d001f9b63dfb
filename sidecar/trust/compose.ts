/**
 * Composition of a profile with its `base-trust-profiles`.
 *
 * Order: a profile's own terms are first widened by its permissive bases, then narrowed by every
 * restrictive base: `effective = (own ∨ p1 ∨ p2 …) ∧ r1 ∧ r2 …`, each base being itself effective
 * (its own bases already composed). Restrictive bases are therefore ceilings whatever the order
 * they are listed in. A profile term that says nothing is neutral in both modes: it neither narrows
 * nor widens the other side (so permissive inheritance from a base without process constraints
 * never turns a contained profile into an uncontained one).
 *
 * Restrictive (`∧`, the child can only narrow the base):
 * - Process: neutral if both say nothing. Filesystem = point-wise intersection: a path is kept only
 *   where both grant it (a child grant under a base grant is kept; a base grant under a child
 *   grant is kept), with the stricter access (read-only wins) and the child's target mapping.
 *   Network = the narrower (unconstrained ⊃ internet-client ⊃ loopback ⊃ []). If the result grants
 *   no path and leaves the network unconstrained it would stop being contained, so its network
 *   becomes `internet-client` instead (the narrowest list that keeps host networking).
 * - Environment: the base's names are the ceiling. `inherit` = names both inherit; `set` = the
 *   base's values, plus the child's values for names the base inherits (replacing a host value by
 *   a fixed one); other child names are dropped.
 * - Tool calls: the allow rules must all pass (AND); restricted schemas are united.
 *
 * Permissive (`∨`, the child adds to the base):
 * - Process: filesystem = point-wise union (read-write wins); network = the wider.
 * - Environment: `inherit` = union; `set` = the base's values overridden by the child's.
 * - Tool calls: either allow rule passing suffices (OR); restricted schemas are united (a schema
 *   restricted by either side stays restricted).
 *
 * @module
 */
import { canonicalJson } from './canonical-json.ts';
import {
  constrainsProcess,
  type EffectiveProfile,
  type EnvironmentRule,
  networkFromLevel,
  networkLevel,
  type ToolCallCondition,
} from './effective-profile.ts';
import { intersectGrants, unionGrants } from './filesystem-grants.ts';
import type { JsonSchema } from './json-schema.ts';
import type { InheritanceMode } from './profile-schema.ts';

function joinConditions(kind: 'all' | 'any', a: ToolCallCondition | undefined, b: ToolCallCondition | undefined): ToolCallCondition | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  // Flatten same-kind nesting so `(a ∧ b) ∧ c` is stored as `all: [a, b, c]`.
  const parts = (c: ToolCallCondition): readonly ToolCallCondition[] => {
    if (kind === 'all' && 'all' in c) return c.all;
    if (kind === 'any' && 'any' in c) return c.any;
    return [c];
  };
  return kind === 'all' ? { all: [...parts(a), ...parts(b)] } : { any: [...parts(a), ...parts(b)] };
}

function uniteSchemas(a: readonly JsonSchema[], b: readonly JsonSchema[]): JsonSchema[] {
  const seen = new Map<string, JsonSchema>();
  for (const schema of [...a, ...b]) if (!seen.has(canonicalJson(schema))) seen.set(canonicalJson(schema), schema);
  return [...seen.values()];
}

function narrowEnvironment(child: EnvironmentRule | undefined, base: EnvironmentRule | undefined): EnvironmentRule | undefined {
  if (child === undefined) return base;
  if (base === undefined) return child;
  const set: Record<string, string> = {};
  for (const [name, value] of Object.entries(child.set)) if (base.inherit.includes(name)) set[name] = value;
  Object.assign(set, base.set);
  return { inherit: child.inherit.filter((name) => base.inherit.includes(name)), set };
}

function widenEnvironment(child: EnvironmentRule | undefined, base: EnvironmentRule | undefined): EnvironmentRule | undefined {
  if (child === undefined) return base;
  if (base === undefined) return child;
  return { inherit: [...new Set([...child.inherit, ...base.inherit])], set: { ...base.set, ...child.set } };
}

/**
 * `child ∧ base`: the child narrows the base (restrictive inheritance).
 *
 * @param child The inheriting profile (its target mappings win).
 * @param base The base, already effective.
 * @returns The composed effective profile.
 */
export function narrow(child: EffectiveProfile, base: EffectiveProfile): EffectiveProfile {
  let process: Pick<EffectiveProfile, 'filesystemPaths' | 'networkCapabilities'>;
  if (!constrainsProcess(child)) process = base;
  else if (!constrainsProcess(base)) process = child;
  else {
    const filesystemPaths = intersectGrants(child.filesystemPaths, base.filesystemPaths);
    const level = Math.min(networkLevel(child.networkCapabilities), networkLevel(base.networkCapabilities));
    process = { filesystemPaths, networkCapabilities: networkFromLevel(filesystemPaths.length === 0 ? Math.min(level, 2) : level) };
  }
  return {
    filesystemPaths: process.filesystemPaths,
    networkCapabilities: process.networkCapabilities,
    environment: narrowEnvironment(child.environment, base.environment),
    allowedToolCalls: joinConditions('all', child.allowedToolCalls, base.allowedToolCalls),
    restrictedToolCalls: uniteSchemas(child.restrictedToolCalls, base.restrictedToolCalls),
  };
}

/**
 * `child ∨ base`: the child adds to the base (permissive inheritance).
 *
 * @param child The inheriting profile (its target mappings and `set` values win).
 * @param base The base, already effective.
 * @returns The composed effective profile.
 */
export function widen(child: EffectiveProfile, base: EffectiveProfile): EffectiveProfile {
  let process: Pick<EffectiveProfile, 'filesystemPaths' | 'networkCapabilities'>;
  if (!constrainsProcess(child)) process = base;
  else if (!constrainsProcess(base)) process = child;
  else {
    const level = Math.max(networkLevel(child.networkCapabilities), networkLevel(base.networkCapabilities));
    process = { filesystemPaths: unionGrants(child.filesystemPaths, base.filesystemPaths), networkCapabilities: networkFromLevel(level) };
  }
  return {
    filesystemPaths: process.filesystemPaths,
    networkCapabilities: process.networkCapabilities,
    environment: widenEnvironment(child.environment, base.environment),
    allowedToolCalls: joinConditions('any', child.allowedToolCalls, base.allowedToolCalls),
    restrictedToolCalls: uniteSchemas(child.restrictedToolCalls, base.restrictedToolCalls),
  };
}

export interface ComposedBase {
  readonly profile: EffectiveProfile;
  readonly mode: InheritanceMode;
}

/**
 * A profile's own terms composed with its (already effective) bases: permissive bases first, in
 * order, then every restrictive base.
 *
 * @param own The profile file's own terms (`effectiveFromFile`).
 * @param bases Its bases in file order.
 * @returns The effective profile.
 * @example A restrictive base caps a child's network
 * ```ts
 * composeProfile({ ...NEUTRAL_PROFILE, networkCapabilities: ['internet-client'] },
 *   [{ profile: { ...NEUTRAL_PROFILE, networkCapabilities: [] }, mode: 'restrictive' }]).networkCapabilities; // []
 * ```
 */
export function composeProfile(own: EffectiveProfile, bases: readonly ComposedBase[]): EffectiveProfile {
  let result = own;
  for (const base of bases) if (base.mode === 'permissive') result = widen(result, base.profile);
  for (const base of bases) if (base.mode === 'restrictive') result = narrow(result, base.profile);
  return result;
}

/**
 * What a launch runs under when the host has a floor: the agent's requested profile narrowed by
 * the floor (`requested ∧ floor`, the restrictive mode above), so an agent's trust context can
 * only tighten what the host allows, never loosen it. A path the agent grants and the floor does
 * not is not granted; a network wider than the floor's is cut to the floor's; a name the floor
 * does not pass to the server is not passed (a floor without `environment` passes none); the
 * tool-call rules of both must pass.
 *
 * @param requested The agent's effective profile (its target mappings win where both grant).
 * @param floor The host's floor: `sidecar.json` "trust-profile", or the server entry's own.
 * @returns The effective profile of the launch.
 */
export function underFloor(requested: EffectiveProfile, floor: EffectiveProfile): EffectiveProfile {
  // A floor silent on the environment launches with none of the sidecar's: that is its ceiling
  // here, where a base's silence would be neutral (an agent's profile must not bring its own list).
  const silent = floor.environment === undefined && requested.environment !== undefined;
  return narrow(requested, silent ? { ...floor, environment: { inherit: [], set: {} } } : floor);
}
