/**
 * A profile's own rules against what its restrictive bases leave of them. A child cannot widen
 * its base: a grant the base does not cover is dropped or narrowed to what it covers, a read-write
 * grant under a read-only one is read-only, a network capability beyond the base's is cut, a name
 * it inherits or sets that the base does not pass is dropped, and a value the base sets itself
 * wins. All by design, and all silent at launch, so `check` says which of the profile's own
 * rules did not make it into the composed profile.
 *
 * @module
 */
import type { ValidationIssue } from '../shared/validation.ts';
import { type EffectiveProfile, type EnvironmentRule, networkLevel } from '../sidecar/trust/effective-profile.ts';
import { isWithin } from '../sidecar/trust/filesystem-grants.ts';

/** Warnings, with paths into the profile file, for each of `own`'s rules the composed profile lost or narrowed. */
export function narrowedByBases(own: EffectiveProfile, composed: EffectiveProfile): ValidationIssue[] {
  return [...narrowedGrants(own, composed), ...narrowedNetwork(own, composed), ...droppedEnvironment(own.environment, composed.environment)];
}

function narrowedGrants(own: EffectiveProfile, composed: EffectiveProfile): ValidationIssue[] {
  return own.filesystemPaths.flatMap((grant): ValidationIssue[] => {
    const path = 'filesystem-paths';
    const same = composed.filesystemPaths.find((g) => g.sourcePath === grant.sourcePath);
    if (same !== undefined) {
      return same.accessMode === grant.accessMode
        ? []
        : [{ path, message: `"${grant.sourcePath}" is read-only: a restrictive base grants it read-only (make that base's grant "read-write")` }];
    }
    const within = composed.filesystemPaths.filter((g) => isWithin(g.sourcePath, grant.sourcePath));
    return [{
      path,
      message: within.length === 0
        ? `"${grant.sourcePath}" is not granted: no restrictive base grants it (add it to that base's "filesystem-paths")`
        : `"${grant.sourcePath}" is narrowed to what a restrictive base grants of it: ${within.map((g) => `"${g.sourcePath}"`).join(', ')}`,
    }];
  });
}

const NETWORK_NAMES = ['no network', 'loopback', 'internet-client', 'unconstrained'];

function narrowedNetwork(own: EffectiveProfile, composed: EffectiveProfile): ValidationIssue[] {
  if (own.networkCapabilities === undefined) return [];
  const asked = networkLevel(own.networkCapabilities);
  const got = networkLevel(composed.networkCapabilities);
  return got >= asked ? [] : [{ path: 'network-capabilities', message: `"${NETWORK_NAMES[asked]}" is cut to ${NETWORK_NAMES[got]}: a restrictive base allows no more (widen that base's "network-capabilities")` }];
}

/** Warnings, with paths into the profile file, for each of `own`'s names the composed rule lost. */
export function droppedEnvironment(own: EnvironmentRule | undefined, composed: EnvironmentRule | undefined): ValidationIssue[] {
  if (own === undefined) return [];
  const warnings: ValidationIssue[] = [];
  own.inherit.forEach((name, i) => {
    if (!(composed?.inherit.includes(name) ?? false)) {
      warnings.push({ path: `environment.inherit[${i}]`, message: `"${name}" is not passed: a restrictive base does not inherit it (add it to that base's "inherit")` });
    }
  });
  for (const [name, value] of Object.entries(own.set)) {
    const got = composed?.set[name];
    if (got === value) continue;
    warnings.push({
      path: `environment.set.${name}`,
      message:
        got === undefined
          ? `"${name}" is not set: a restrictive base does not pass it (add it to that base's "inherit")`
          : `"${name}" is set to the base's value, which wins over this one`,
    });
  }
  return warnings;
}
