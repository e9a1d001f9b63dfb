/**
 * What an unknown key in a config was probably meant to be: the keys the schema takes at that
 * place, and the one a typo is nearest to. Used by `validation.ts` to word an unknown key as
 * `unknown key (did you mean "max-sessions"?)`.
 *
 * @module
 */
import type * as z from './zod.ts';

/** Farthest a key may be from a known one, in edits (insert, delete, replace, swap two neighbours), to be suggested. */
const MAX_EDITS = 2;

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;

/** The schema a wrapper stands for: what is optional, defaulted, read-only or piped is checked as its inner schema. */
function unwrap(schema: unknown, depth = 0): unknown {
  const def = defOf(schema);
  if (def === undefined || depth > 32) return schema;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return unwrap(def.innerType, depth + 1);
    case 'pipe':
      return unwrap(def.in, depth + 1);
    case 'lazy':
      return unwrap((def.getter as () => unknown)(), depth + 1);
    default:
      return schema;
  }
}

/** The schemas `schema` may be at one level: each option of a union or intersection, else itself. */
function alternatives(schema: unknown): unknown[] {
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (def?.type === 'union') return (def.options as unknown[]).flatMap(alternatives);
  if (def?.type === 'intersection') return [...alternatives(def.left), ...alternatives(def.right)];
  return [inner];
}

function childrenAt(schema: unknown, key: PropertyKey): unknown[] {
  return alternatives(schema).flatMap((option) => {
    const def = defOf(option);
    if (def?.type === 'object') {
      const shape = def.shape as Record<string, unknown>;
      return typeof key === 'string' && Object.hasOwn(shape, key) ? [shape[key]] : [];
    }
    if (def?.type === 'array') return typeof key === 'number' ? [def.element] : [];
    if (def?.type === 'record') return [def.valueType];
    if (def?.type === 'tuple') return typeof key === 'number' && (def.items as unknown[])[key] !== undefined ? [(def.items as unknown[])[key]] : [];
    return [];
  });
}

/**
 * The keys the object schema at `path` takes (every option's, for a union), in the schema's
 * order; none where the path leads to no object or through a schema this does not know.
 */
export function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let here: unknown[] = [schema];
  for (const key of path) here = here.flatMap((s) => childrenAt(s, key));
  const keys = new Set<string>();
  for (const option of here.flatMap(alternatives)) {
    const def = defOf(option);
    if (def?.type === 'object') for (const key of Object.keys(def.shape as object)) keys.add(key);
  }
  return [...keys];
}

/** Edits from `a` to `b`, counting a swap of two neighbours as one (optimal string alignment). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/** Case and `_` for `-` are how JSON keys of other tools differ from Switchyard's kebab-case ones. */
const normalized = (key: string) => key.toLowerCase().replaceAll('_', '-');

/**
 * The known key `key` most likely means: one that differs only in case or `_` for `-`, else the
 * nearest within two edits (the first of equals, in `known`'s order). A key no longer than the
 * edits it needs shares nothing with what it would be matched to, so it gets none.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const same = known.find((k) => normalized(k) === normalized(key));
  if (same !== undefined) return same;
  let best: { key: string; edits: number } | undefined;
  for (const candidate of known) {
    const edits = editDistance(normalized(key), normalized(candidate));
    if (edits <= MAX_EDITS && edits < key.length && (best === undefined || edits < best.edits)) best = { key: candidate, edits };
  }
  return best?.key;
}
