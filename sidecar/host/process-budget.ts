/**
 * ProcessBudget: how many server processes this host runs, per agent and in all (sidecar.json
 * `"limits"`), so one agent cannot exhaust a workstation and the memory a host spends is bounded
 * (with the executor's per-process address-space limit: `"memory-limit-mib"`).
 *
 * Every stdio server the host launches takes a slot first, whether for a legacy session (one
 * process per agent session and server) or as the legacy instance a modern agent is served by.
 * A launch past the agent's limit ends that agent's least recently used idle process (no request
 * in flight); a launch past the host's cap ends the agent's own least recently used idle process,
 * never another agent's session's. A warm pool's spare no session has taken goes first in either
 * case, whichever agent it is kept for: it is a guess at a session to come, and must not keep an
 * agent's launch out. Only when nothing that may go is idle is the launch refused, with
 * `limit-reached`. A process ended this way closes its channel with `limit-reached`, so the agent
 * learns why.
 *
 * A slot is held by the server's transport (`hosted-servers.ts`): it counts requests in flight on
 * the way through and gives the slot back when the transport closes, however that happens.
 *
 * This bounds how many processes an agent holds; how fast it may have them started is
 * `launch-rate.ts`'s, asked before a slot is taken.
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';

/** sidecar.json `"limits"` defaults. */
export const DEFAULT_PROCESSES_PER_AGENT = 32;
export const DEFAULT_HOST_PROCESSES = 64;

export interface ProcessLimits {
  /** Server processes one agent may hold on this host. */
  readonly perAgent: number;
  /** Server processes this host runs in all. */
  readonly total: number;
}

export interface ProcessBudgetOptions {
  limits: ProcessLimits;
  log: Logger;
  now?: () => number;
}

/** One held slot: what the budget needs to know of the process, and to end it. */
export type ReservedSlot = ReturnType<ProcessBudget['reserve']>;

export interface ProcessSlot {
  readonly agent: string;
  readonly server: string;
  /** Records a request going to the server (+1) or its answer coming back (-1). */
  inFlight(delta: 1 | -1): void;
  /** Gives the slot back; idempotent. */
  release(): void;
  /** A session took the warm pool's spare that holds this slot: it is that session's process from now on. */
  adopt(): void;
}

interface Held {
  readonly agent: string;
  readonly server: string;
  inFlight: number;
  lastActive: number;
  /** A warm pool's spare no session has taken yet: the first to go when a launch needs room. */
  spare: boolean;
  /** Ends the process; set by the transport that holds the slot. */
  end: (error: WireError) => void;
}

export class ProcessBudget {
  #limits: ProcessLimits;
  readonly #held = new Set<Held>();
  readonly #log: Logger;
  readonly #now: () => number;

  constructor(options: ProcessBudgetOptions) {
    this.#limits = options.limits;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
  }

  get limits(): ProcessLimits {
    return this.#limits;
  }

  /** New limits (a sidecar.json reload); they apply from the next launch. */
  setLimits(limits: ProcessLimits): void {
    this.#limits = limits;
  }

  /** Whether one more process of `agent` fits without ending any (what the warm pool asks before a spare). */
  hasRoom(agent: string): boolean {
    return this.count(agent) < this.#limits.perAgent && this.#held.size < this.#limits.total;
  }

  /** Processes held, by everyone or by `agent`. */
  count(agent?: string): number {
    return agent === undefined ? this.#held.size : [...this.#held].filter((h) => h.agent === agent).length;
  }

  /**
   * Takes a slot for one more process of `agent`, ending idle ones to make room.
   *
   * @returns The slot and `bind`, through which the holder says how to end its process.
   * @throws WireError `limit-reached` when nothing that may be ended is idle.
   */
  reserve(agent: string, server: string, options: { evict?: boolean } = {}): { slot: ProcessSlot; bind(end: (error: WireError) => void): void } {
    const { perAgent, total } = this.#limits;
    // A warm pool's spare takes only free room: it never ends a process a session may come back to.
    if (options.evict === false && !this.hasRoom(agent)) throw this.#refuse(agent, server, 'no free room for a spare instance');
    // Spares first: no session uses them, and a session's process is one it may come back to.
    const firstToGo = (a: Held, b: Held) => Number(b.spare) - Number(a.spare) || a.lastActive - b.lastActive;
    const idle = (pick: (h: Held) => boolean) => [...this.#held].filter((h) => h.inFlight === 0 && pick(h)).sort(firstToGo);
    const victims: Held[] = [];
    const own = [...this.#held].filter((h) => h.agent === agent).length;
    const ownIdle = idle((h) => h.agent === agent);
    for (let i = 0; i < own + 1 - perAgent; i++) {
      const next = ownIdle.shift();
      if (next === undefined) throw this.#refuse(agent, server, `agent "${agent}" already holds ${perAgent} server processes on this host, all busy`);
      victims.push(next);
    }
    // At the host's cap only the asking agent's own idle processes and any agent's spares may go:
    // another agent's session is never ended for someone else's launch, and a spare is no session's.
    const hostExcess = this.#held.size - victims.length + 1 - total;
    if (hostExcess > 0) {
      const room = [...idle((h) => h.spare && h.agent !== agent), ...ownIdle].sort(firstToGo);
      if (room.length < hostExcess) throw this.#refuse(agent, server, `this host already runs ${total} server processes, none of them this agent's and idle`);
      victims.push(...room.slice(0, hostExcess));
    }
    for (const victim of victims) {
      this.#held.delete(victim);
      this.#log.info('Server process ended to make room', { agent: victim.agent, server: victim.server, spare: victim.spare, for: { agent, server } });
      victim.end(new WireError('limit-reached', `Server "${victim.server}" was ended to make room for a new one: it was idle and its host was at its process limit; open the session again`, { detail: { server: victim.server } }));
    }
    const held: Held = { agent, server, inFlight: 0, lastActive: this.#now(), spare: options.evict === false, end: () => {} };
    this.#held.add(held);
    const slot: ProcessSlot = {
      agent,
      server,
      inFlight: (delta) => {
        held.inFlight = Math.max(0, held.inFlight + delta);
        held.lastActive = this.#now();
      },
      release: () => {
        this.#held.delete(held);
      },
      adopt: () => {
        held.spare = false;
      },
    };
    return { slot, bind: (end) => (held.end = end) };
  }

  #refuse(agent: string, server: string, why: string): WireError {
    this.#log.warn('Server launch refused: process limit reached', { agent, server, limits: { ...this.#limits } });
    return new WireError('limit-reached', `Server "${server}" cannot start: ${why}; end a session or raise "limits" in the host's sidecar.json`, { detail: { server } });
  }
}
