/**
 * Sessions the worker ended itself, remembered for a while so the agent's next request on one
 * learns why. That request must still be answered 404 (Streamable HTTP, Session Management: an
 * ended session is answered 404, which is what makes a client initialize again), but a bare
 * "Session not found" leaves the agent to re-initialize into the same refusal (a stale trust
 * profile, a server removed) without knowing what happened (review deploy.md finding 5).
 *
 * Bounded in count and age, per worker process. A session id is a bearer of the session, so
 * only a keyed digest of it is kept, over the agent and the endpoint too: an end is told only to
 * the agent whose session it was, on the endpoint it was opened on, and a 404 for anyone else
 * stays the same as for an id never issued.
 *
 * @module
 */
import { type FailureReason, WireError, type WireErrorDetail } from '../../shared/errors.ts';

/** Why the worker ended a session: the failure that ended it (a config change and a shutdown among them), its idle time, or the end of the OAuth grant that opened it. */
export type EndedBecause = FailureReason | 'idle' | 'grant-revoked';

export interface SessionEnd {
  readonly because: EndedBecause;
  /** What happened, for the agent: sentence case, no final period. */
  readonly why: string;
}

/**
 * The error a request still in flight on a session the worker ends is answered with, or
 * undefined for an idle session (none is in flight). A grant's end is the credential's: the agent
 * signs in again, as for a revoked token.
 */
export function inFlightAnswerOf(end: SessionEnd, detail?: WireErrorDetail): WireError | undefined {
  if (end.because === 'idle') return undefined;
  const reason = end.because === 'grant-revoked' ? 'unauthorized' : end.because;
  return new WireError(reason, `Session ended: ${end.why}; initialize a new session`, detail === undefined ? {} : { detail });
}

export const MAX_ENDED_SESSIONS = 1024;
export const ENDED_SESSION_KEPT_MS = 10 * 60_000;
/** A why is the worker's own words or a host's failure message; kept short, as 1024 of them are kept. */
const MAX_WHY_CHARS = 300;

export class EndedSessions {
  /** Digest → end, oldest first. */
  readonly #ends = new Map<string, SessionEnd & { at: number }>();
  /**
   * The last end recorded, once it is in `#ends`: each waits for the one before, since digests
   * finish in any order and `#ends` must stay in the order the ends happened (the oldest goes
   * first); a request right after an end waits for it, so it finds it.
   */
  #recorded: Promise<void> = Promise.resolve();
  #key: Promise<CryptoKey> | undefined;
  readonly #now: () => number;
  readonly #max: number;
  readonly #keptMs: number;

  constructor(options: { now?: () => number; max?: number; keptMs?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#max = options.max ?? MAX_ENDED_SESSIONS;
    this.#keptMs = options.keptMs ?? ENDED_SESSION_KEPT_MS;
  }

  record(session: { readonly id: string; readonly agent: string; readonly route: string }, end: SessionEnd): void {
    const at = this.#now();
    const kept = { because: end.because, why: end.why.slice(0, MAX_WHY_CHARS), at };
    const digest = this.#digest(session.id, session.agent, session.route);
    // Handled now: the chain below takes it only once the end before it is in, and a digest that
    // failed meanwhile would otherwise be an unhandled rejection (which ends a Node process).
    digest.catch(() => {});
    this.#recorded = this.#recorded.then(() => digest).then(
      (done) => {
        this.#ends.delete(done);
        this.#ends.set(done, kept);
        this.#prune();
      },
      () => {},
    );
  }

  /** How the session `id` of `agent` on `route` ended, if the worker ended it lately. */
  async find(id: string, agent: string, route: string): Promise<SessionEnd | undefined> {
    await this.#recorded;
    if (this.#ends.size === 0) return undefined;
    const end = this.#ends.get(await this.#digest(id, agent, route));
    return end !== undefined && this.#now() - end.at < this.#keptMs ? { because: end.because, why: end.why } : undefined;
  }

  get size(): number {
    return this.#ends.size;
  }

  #prune(): void {
    const oldest = this.#now() - this.#keptMs;
    for (const [digest, end] of this.#ends) {
      if (this.#ends.size <= this.#max && end.at > oldest) break;
      this.#ends.delete(digest);
    }
  }

  async #digest(id: string, agent: string, route: string): Promise<string> {
    // Made at first use: Workers allow no randomness at global scope, and most processes never need it.
    this.#key ??= crypto.subtle.importKey('raw', crypto.getRandomValues(new Uint8Array(32)), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const mac = await crypto.subtle.sign('HMAC', await this.#key, new TextEncoder().encode(JSON.stringify([agent, route, id])));
    return String.fromCharCode(...new Uint8Array(mac, 0, 16));
  }
}
