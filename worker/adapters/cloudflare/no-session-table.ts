/**
 * The session table of the stateless edge: always empty. Legacy sessions live in their
 * `AgentSession` objects (`agent-session-object.ts`); the edge hands every request that opens or
 * names one to its object, so the app it runs itself never registers a session. It only counts
 * them, as each agent's `AgentSlots` object tells it for `/healthz` (`heldBy`).
 *
 * @module
 */
import { LocalError } from '../../../shared/errors.ts';
import type { AgentSession, SessionInfo, SessionTable } from '../../sessions/session-table.ts';

export class NoSessionTable implements SessionTable {
  /** Each agent's sessions as its `AgentSlots` object last counted them (`heldBy`), for `/healthz`. */
  readonly #held = new Map<string, number>();

  /** The sessions every agent holds, as last counted: none live here. */
  get size(): number {
    let total = 0;
    for (const count of this.#held.values()) total += count;
    return total;
  }

  countOf(agent: string): number {
    return this.#held.get(agent) ?? 0;
  }

  /** How many sessions `agent` holds, as its `AgentSlots` object counts them. */
  heldBy(agent: string, count: number): void {
    this.#held.set(agent, count);
  }

  add(_session: AgentSession): void {
    throw new LocalError('wrong-place', 'On Workers a legacy session lives in its AgentSession Durable Object, never in the edge isolate');
  }

  admit(_agent: string, _limit: number): Promise<{ release(): void }> {
    return Promise.reject(new LocalError('wrong-place', 'On Workers a legacy session is admitted by its AgentSession Durable Object, never in the edge isolate'));
  }

  async closeWhere(_pick: (session: AgentSession) => string | null): Promise<number> {
    return 0;
  }

  get(_id: string): AgentSession | undefined {
    return undefined;
  }

  touch(_id: string): void {}

  remove(_id: string): void {}

  async closeAll(): Promise<void> {}

  list(): SessionInfo[] {
    return [];
  }
}
