/**
 * Filesystem grants as a function from path to access, and the two ways to combine them.
 *
 * A grant list means: the access at a path is that of the **deepest** grant whose source covers it
 * (so `/a` read-write plus `/a/b` read-only carves a read-only hole into a writable tree), and
 * nothing is accessible outside every grant. That is exactly how bubblewrap applies bind mounts
 * sorted by depth, so the compiler can emit a normalised list one mount per grant.
 *
 * Combining two lists is done point by point over every grant source of both lists (the access
 * is constant between those points): `intersect` keeps the lower access (none < read-only <
 * read-write), `union` the higher. Where the result grants access, its target comes from the first
 * list when that list covers the point, else from the second, extended by the path below the
 * providing grant; but a grant inside another kept grant is always mapped where that one shows its
 * path (bubblewrap mounts by target: a nested grant mapped elsewhere would not cover its path, and
 * the parent's access would reach it). The result is normalised: a grant that adds nothing to its
 * nearest ancestor (same access, same mapping) is dropped, so equal meanings give equal lists.
 *
 * @module
 */
import { posix } from 'node:path';

export type AccessMode = 'read-only' | 'read-write';

export interface FilesystemGrant {
  /** Host path, absolute and normalised. */
  readonly sourcePath: string;
  /** Path inside the sandbox; equal to `sourcePath` unless the profile remaps it. */
  readonly targetPath: string;
  readonly accessMode: AccessMode;
}

const LEVEL: Record<AccessMode, number> = { 'read-only': 1, 'read-write': 2 };

/** Whether `path` is `ancestor` or lies below it. Both are absolute and normalised. */
export function isWithin(path: string, ancestor: string): boolean {
  return path === ancestor || ancestor === '/' || path.startsWith(`${ancestor}/`);
}

function depth(path: string): number {
  return path === '/' ? 0 : path.split('/').length - 1;
}

/** The deepest grant covering `path`; among equally deep ones the wider access, then the first. */
function coveringGrant(grants: readonly FilesystemGrant[], path: string): FilesystemGrant | undefined {
  let best: FilesystemGrant | undefined;
  for (const grant of grants) {
    if (!isWithin(path, grant.sourcePath)) continue;
    if (best === undefined) best = grant;
    else if (depth(grant.sourcePath) > depth(best.sourcePath)) best = grant;
    else if (grant.sourcePath === best.sourcePath && LEVEL[grant.accessMode] > LEVEL[best.accessMode]) {
      best = { ...best, accessMode: grant.accessMode };
    }
  }
  return best;
}

function levelAt(grants: readonly FilesystemGrant[], path: string): number {
  const grant = coveringGrant(grants, path);
  return grant === undefined ? 0 : LEVEL[grant.accessMode];
}

function mapThrough(grant: FilesystemGrant, sourcePath: string): string {
  const rest = posix.relative(grant.sourcePath, sourcePath);
  return rest === '' ? grant.targetPath : posix.join(grant.targetPath, rest);
}

function combine(a: readonly FilesystemGrant[], b: readonly FilesystemGrant[], pick: (x: number, y: number) => number): FilesystemGrant[] {
  const points = [...new Set([...a, ...b].map((g) => g.sourcePath))].sort((x, y) => depth(x) - depth(y) || (x < y ? -1 : 1));
  const kept: FilesystemGrant[] = [];
  for (const point of points) {
    const level = pick(levelAt(a, point), levelAt(b, point));
    if (level === 0) continue;
    const provider = coveringGrant(a, point) ?? coveringGrant(b, point);
    if (provider === undefined) continue;
    // A grant inside another is mounted where that one shows its path, whatever target was asked:
    // bubblewrap applies mounts by target, so one mounted elsewhere would leave its path reachable
    // through its parent's mount, with the parent's access (a read-only carve-out made writable).
    const parent = coveringGrant(kept, point);
    const grant: FilesystemGrant = {
      sourcePath: point,
      targetPath: mapThrough(parent ?? provider, point),
      accessMode: level === 2 ? 'read-write' : 'read-only',
    };
    const redundant = parent !== undefined && parent.accessMode === grant.accessMode && mapThrough(parent, point) === grant.targetPath;
    if (!redundant) kept.push(grant);
  }
  return kept;
}

/**
 * The paths both lists grant, each with the stricter access.
 *
 * @param a The narrowing side (its target mapping is preferred).
 * @param b The other side.
 * @returns A normalised grant list.
 * @example A child path under a base grant survives, read-only wins
 * ```ts
 * intersectGrants([{ sourcePath: '/p/x', targetPath: '/p/x', accessMode: 'read-write' }],
 *                 [{ sourcePath: '/p', targetPath: '/p', accessMode: 'read-only' }]);
 * // [{ sourcePath: '/p/x', targetPath: '/p/x', accessMode: 'read-only' }]
 * ```
 */
export function intersectGrants(a: readonly FilesystemGrant[], b: readonly FilesystemGrant[]): FilesystemGrant[] {
  return combine(a, b, Math.min);
}

/**
 * The paths either list grants, each with the wider access.
 *
 * @param a The preferred side for target mapping.
 * @param b The other side.
 * @returns A normalised grant list.
 */
export function unionGrants(a: readonly FilesystemGrant[], b: readonly FilesystemGrant[]): FilesystemGrant[] {
  return combine(a, b, Math.max);
}

/** One list on its own, normalised (duplicates and redundant nested grants removed). */
export function normalizeGrants(grants: readonly FilesystemGrant[]): FilesystemGrant[] {
  return combine(grants, [], Math.max);
}
