/**
 * A profile's own environment rule against what its bases leave of it. Under a restrictive base a
 * child cannot widen: a name it inherits or sets that the base does not pass is dropped, and a
 * value the base sets itself wins. Both are by design, and both are silent at launch, so `check`
 * says which of the profile's own names did not make it into the composed profile.
 *
 * @module
 */
import type { ValidationIssue } from '../shared/validation.ts';
import type { EnvironmentRule } from '../sidecar/trust/effective-profile.ts';

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
