/**
 * Trust profiles on the launch host: `DIR/trust-profiles/<ref>.json`, resolved by reference.
 *
 * The link carries only a reference and the revision the worker expects (DESIGN §5), so this store
 * is where a launch is refused before anything starts: a missing profile or base is
 * `trust-profile-not-found`, a revision that differs from the files on disk is
 * `trust-profile-stale`. Files are read afresh whenever one of them changed (their stamps, see
 * `config/file-stamp.ts`), so an edited profile is noticed at the next launch and a worker still
 * pinned to the old revision is refused rather than silently given the new policy.
 *
 * The revision is the digest of the effective profile, the root composed with its whole base
 * closure (`policy-revision.ts`): a change anywhere in the closure (a base of a base too) that
 * changes what the launch runs under changes it; a description, reformatting, or a base edit the
 * composition absorbs does not.
 *
 * @module
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { jsonSyntaxProblem } from '../../shared/json-syntax-problem.ts';
import { duplicateKeyIssue } from '../../shared/json-duplicate-key.ts';
import { LocalError, WireError } from '../../shared/errors.ts';
import { fileStamp } from '../config/file-stamp.ts';
import { parseWith, ValidationError } from '../../shared/validation.ts';
import { composeProfile } from './compose.ts';
import { type EffectiveProfile, effectiveFromFile } from './effective-profile.ts';
import { policyRevision } from './policy-revision.ts';
import { type TrustProfileFile, trustProfileFileSchema, trustProfileRefSchema } from './profile-schema.ts';

export interface ResolvedTrustProfile {
  readonly ref: string;
  readonly effective: EffectiveProfile;
  /** `sha256:<hex>` of the effective policy (see `policy-revision.ts`). */
  readonly revision: string;
  readonly description?: string;
}

/** One line of `switchyard sidecar profiles`: a usable profile, or why it cannot be used. */
export type TrustProfileListing = { readonly ref: string; readonly revision: string; readonly description?: string } | { readonly ref: string; readonly error: string };

export class TrustProfileStore {
  /**
   * Resolved profiles by reference, with the stamps of every file of their closure: reused while
   * none has changed (`config/file-stamp.ts`), as a floor is resolved on every channel open.
   */
  readonly #kept = new Map<string, { stamps: Map<string, string>; resolved: ResolvedTrustProfile; checkedAt: number }>();
  /**
   * Reads and checks are numbered; per reference, the number of the last one that noticed a change
   * or kept a result. A read that started before it is not kept when it ends: reads overlap (they
   * are async), and an older one ending last must not put back what a newer one replaced.
   */
  #sequence = 0;
  readonly #latest = new Map<string, number>();
  /** Reads that started before the last `forget` read the files the old way: none is kept. */
  #forgotten = 0;

  /**
   * @param dir The `trust-profiles` folder itself (for a config dir: `join(configDir, 'trust-profiles')`).
   * @param read Reads a profile's text: the disk by default, a live sidecar's accepted snapshot otherwise.
   * @param now The time a file's stamp is judged against (tests move it on).
   */
  constructor(
    readonly dir: string,
    readonly read: (path: string) => Promise<string> = (path) => readFile(path, 'utf8'),
    readonly now: () => number = Date.now,
  ) {}

  /**
   * Resolves a reference and checks it against the revision the worker expects.
   *
   * A stale revision's error names neither revision: it goes over the link, and the host's
   * current revision is exactly what a worker guessing at profiles would want to learn (DESIGN
   * §5). The two revisions go to `onStale`, for the sidecar's own log.
   *
   * @param ref A profile name, as sent over the link.
   * @param expectedRevision The `sha256:` revision from the agent's trust context.
   * @param onStale Told both revisions when they differ, before the refusal is thrown.
   * @param stampAgeMs As for {@link load}.
   * @returns The effective profile and its current revision.
   * @throws WireError `trust-profile-not-found` / `trust-profile-stale` / `invalid-request` (bad name);
   *   ValidationError for an invalid file; LocalError `trust-profile-invalid` for a base cycle.
   */
  async resolve(ref: string, expectedRevision: string, onStale?: (revisions: { expected: string; current: string }) => void, stampAgeMs = 0): Promise<ResolvedTrustProfile> {
    const resolved = await this.load(ref, stampAgeMs);
    if (resolved.revision !== expectedRevision) {
      onStale?.({ expected: expectedRevision, current: resolved.revision });
      throw new WireError(
        'trust-profile-stale',
        `Trust profile "${ref}" has changed on this host since the worker config named its revision: ` +
          'on this host run `sidecar host-entry` (or `doctor`, which prints the line too) and pass its line to `switchyard host add` on the worker\'s machine, which moves the pins',
        { detail: { ref } },
      );
    }
    return resolved;
  }

  /** Forgets every resolved profile kept: the files are now read another way (a reload, a refused dir's snapshot). */
  forget(): void {
    this.#kept.clear();
    this.#latest.clear();
    this.#forgotten = ++this.#sequence;
  }

  /**
   * Resolves a reference without a revision check (local tooling, a host's floor; an agent's
   * profile goes through {@link resolve}).
   *
   * @param stampAgeMs How old a check of the closure's stamps may be and still be relied on (0:
   *   stat them now). A modern agent's requests pass `MODERN_STAMP_AGE_MS`, as for server configs
   *   (`server-config-cache.ts`): stating every file of the closure and checking the reference was
   *   about 60 µs of the sidecar's CPU per modern request on a host with a floor (issue 17). An
   *   edit is then seen at the first load after the next check, and once seen (by any load), the
   *   old profile is never served again: the entry is replaced or dropped right then.
   */
  async load(ref: string, stampAgeMs = 0): Promise<ResolvedTrustProfile> {
    // Only a valid reference is ever kept, so a kept one needs no second check.
    const kept = this.#kept.get(ref);
    if (kept === undefined) {
      const valid = trustProfileRefSchema.safeParse(ref);
      if (!valid.success) {
        throw new WireError('invalid-request', `Invalid trust profile reference: ${valid.error.issues[0]?.message ?? 'not a profile name'}`);
      }
    } else {
      const now = this.now();
      // A clock stepped back (age below 0) proves nothing recent: the files are checked again.
      const age = now - kept.checkedAt;
      if (age >= 0 && age < stampAgeMs) return kept.resolved;
      if (unchanged(kept.stamps, now)) {
        kept.checkedAt = now;
        return kept.resolved;
      }
      // Seen changed: never served again, even should the read below fail or an older one end last.
      this.#kept.delete(ref);
      this.#latest.set(ref, ++this.#sequence);
    }
    const sequence = ++this.#sequence;
    const checkedAt = this.now();
    const closure = new Map<string, TrustProfileFile>();
    const memo = new Map<string, EffectiveProfile>();
    const stamps = new Map<string, string | null>();
    const effective = await this.#effective(ref, [], closure, memo, stamps);
    const description = closure.get(ref)?.description;
    const resolved = { ref, effective, revision: policyRevision(effective), ...(description === undefined ? {} : { description }) };
    if (sequence <= this.#forgotten || sequence < (this.#latest.get(ref) ?? 0)) return resolved;
    this.#latest.set(ref, sequence);
    if ([...stamps.values()].every((stamp) => stamp !== null)) this.#kept.set(ref, { stamps: stamps as Map<string, string>, resolved, checkedAt });
    else this.#kept.delete(ref);
    return resolved;
  }

  /** Every `<ref>.json` in the folder, sorted by name; an unusable one is listed with its error. */
  async list(): Promise<TrustProfileListing[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const refs = names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).filter((r) => trustProfileRefSchema.safeParse(r).success).sort();
    return Promise.all(
      refs.map(async (ref): Promise<TrustProfileListing> => {
        try {
          const { revision, description } = await this.load(ref);
          return description === undefined ? { ref, revision } : { ref, revision, description };
        } catch (error) {
          return { ref, error: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
  }

  async #effective(
    ref: string,
    chain: readonly string[],
    closure: Map<string, TrustProfileFile>,
    memo: Map<string, EffectiveProfile>,
    stamps: Map<string, string | null>,
  ): Promise<EffectiveProfile> {
    if (chain.includes(ref)) {
      const cycle = [...chain.slice(chain.indexOf(ref)), ref].map((r) => `"${r}"`).join(' → ');
      throw new LocalError('trust-profile-invalid', `Trust profile bases form a cycle: ${cycle}`);
    }
    const known = memo.get(ref);
    if (known !== undefined) return known;
    const file = await this.#read(ref, chain.at(-1), stamps);
    closure.set(ref, file);
    const bases = [];
    for (const base of file['base-trust-profiles'] ?? []) {
      bases.push({ profile: await this.#effective(base.profile, [...chain, ref], closure, memo, stamps), mode: base['inheritance-mode'] });
    }
    const effective = composeProfile(effectiveFromFile(file), bases);
    memo.set(ref, effective);
    return effective;
  }

  /** Reads one profile file, its stamp taken first into `stamps` (a change while reading then leaves a stale stamp, never stale content). */
  async #read(ref: string, baseOf: string | undefined, stamps: Map<string, string | null>): Promise<TrustProfileFile> {
    const path = join(this.dir, `${ref}.json`);
    stamps.set(path, fileStamp(path, this.now()));
    let text: string;
    try {
      text = await this.read(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      const role = baseOf === undefined ? '' : `, a base of "${baseOf}"`;
      throw new WireError('trust-profile-not-found', `Trust profile not found: "${ref}"${role}: add trust-profiles/${ref}.json to the sidecar config dir or fix the reference`, {
        detail: { ref },
      });
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new ValidationError(`trust profile "${ref}"`, [{ path: '(root)', message: jsonSyntaxProblem(error, text) }]);
    }
    const duplicate = duplicateKeyIssue(text);
    if (duplicate !== undefined) throw new ValidationError(`trust profile "${ref}"`, [duplicate]);
    return parseWith(trustProfileFileSchema, raw, `trust profile "${ref}"`);
  }
}

/** Whether every file still has the stamp it was read with. */
function unchanged(stamps: ReadonlyMap<string, string>, now: number): boolean {
  for (const [file, stamp] of stamps) if (fileStamp(file, now) !== stamp) return false;
  return true;
}
