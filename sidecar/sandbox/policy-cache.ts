/**
 * Compiled policies, once per (agent session, profile revision, server).
 *
 * The upstream design compiles "once per session on the launch host": a session that opens the
 * same server again (reconnect, second channel) reuses its policy, while a new revision or another
 * session compiles afresh, so a profile edit is never masked by a cache. Concurrent requests for
 * the same key share one compilation. A failed compilation is not cached, so the next launch
 * reports the current problem (the backend probe keeps its own cache).
 *
 * @module
 */
import type { ContainmentPolicy } from './containment-policy.ts';

export interface PolicyCacheKey {
  readonly sessionId: string;
  readonly revision: string;
  readonly server: string;
}

export class PolicyCache {
  readonly #entries = new Map<string, { sessionId: string; policy: Promise<ContainmentPolicy | null> }>();

  /**
   * @param key Session, revision and server.
   * @param compile Runs only when the key has no policy yet.
   * @returns The cached or newly compiled policy (`null` = uncontained).
   * @example
   * ```ts
   * const cache = new PolicyCache();
   * await cache.getOrCompile({ sessionId: 's', revision: 'sha256:…', server: 'files' }, () => compileContainment(…));
   * ```
   */
  getOrCompile(key: PolicyCacheKey, compile: () => Promise<ContainmentPolicy | null>): Promise<ContainmentPolicy | null> {
    const id = JSON.stringify([key.sessionId, key.revision, key.server]);
    const known = this.#entries.get(id);
    if (known !== undefined) return known.policy;
    const policy = compile();
    this.#entries.set(id, { sessionId: key.sessionId, policy });
    policy.catch(() => {
      if (this.#entries.get(id)?.policy === policy) this.#entries.delete(id);
    });
    return policy;
  }

  /** Forgets every policy of a session (call when the session ends). */
  /** Forgets every compiled policy (a config reload: what a policy was compiled from may have changed). */
  clear(): void {
    this.#entries.clear();
  }

  dropSession(sessionId: string): void {
    for (const [id, entry] of this.#entries) if (entry.sessionId === sessionId) this.#entries.delete(id);
  }

  get size(): number {
    return this.#entries.size;
  }
}
