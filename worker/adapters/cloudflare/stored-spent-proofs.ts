/**
 * Used link upgrade proofs kept in a `HostLink` Durable Object's storage as well as its memory:
 * the object is built to hibernate while its link is idle, and hibernating drops its memory, so a
 * proof copied from a dial could otherwise open a socket again after each wake, for as long as
 * its time is in the window.
 *
 * Each verified dial costs one list of this host's kept proofs and one write; a kept proof is
 * deleted at the first verified dial after its time left the window (so storage holds at most one
 * bucket, `SPENT_PROOFS_PER_HOST`, and strangers, refused before the signature verified, cost
 * none). The memory in front takes two copies of one proof arriving at once apart before either
 * reaches storage.
 *
 * @module
 */
import { SPENT_PROOFS_PER_HOST, SpentUpgradeProofs, type SpendVerdict, type SpentProofStore } from '../../link/spent-upgrade-proofs.ts';
import type { DurableObjectStorage } from './workers-runtime.ts';

const PREFIX = 'spent-link-proof:';

export class StoredSpentProofs implements SpentProofStore {
  readonly #storage: DurableObjectStorage;
  readonly #memory: SpentUpgradeProofs;
  /** Entity id → when its stored bucket next has room (ms), as of the last dial that found it full. */
  readonly #roomAt = new Map<string, number>();

  constructor(storage: DurableObjectStorage, options: { windowSeconds: number; maxPerHost?: number }) {
    this.#storage = storage;
    this.#memory = new SpentUpgradeProofs({ windowSeconds: options.windowSeconds, maxPerHost: options.maxPerHost ?? SPENT_PROOFS_PER_HOST });
  }

  get maxPerHost(): number {
    return this.#memory.maxPerHost;
  }

  async spend(entityId: string, nonce: string, timeSeconds: number, nowMs: number): Promise<SpendVerdict> {
    const inMemory = this.#memory.spend(entityId, nonce, timeSeconds, nowMs);
    if (inMemory !== 'fresh') return inMemory;
    const prefix = `${PREFIX}${entityId}:`;
    const kept = await this.#storage.list({ prefix });
    const live: number[] = [];
    const expired: string[] = [];
    for (const [key, forgetAt] of kept) {
      if (typeof forgetAt === 'number' && forgetAt > nowMs) live.push(forgetAt);
      else expired.push(key);
    }
    await Promise.all(expired.map((key) => this.#storage.delete(key)));
    const mine = kept.get(prefix + nonce);
    if (typeof mine === 'number' && mine > nowMs) return 'replayed';
    if (live.length >= this.maxPerHost) {
      this.#roomAt.set(entityId, Math.min(...live));
      return 'full';
    }
    await this.#storage.put(prefix + nonce, this.#memory.forgetAt(timeSeconds));
    return 'fresh';
  }

  roomAt(entityId: string, nowMs: number): number {
    return Math.max(nowMs, this.#roomAt.get(entityId) ?? 0, this.#memory.roomAt(entityId, nowMs));
  }
}
