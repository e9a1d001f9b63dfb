/**
 * LaunchRate: how fast one agent may make this host launch server processes (sidecar.json
 * `"limits"`: `server-launch-burst-per-agent`, `server-launches-per-agent-per-minute`). The process
 * budget (`process-budget.ts`) bounds how many processes an agent holds, not how often it replaces
 * them: an agent that opens and drops sessions in a loop (each past its session limit ends its
 * oldest one) makes the host start a process per session, and each start of a Node server costs a
 * few hundred ms of CPU, taken from every other agent's servers on the host.
 *
 * A token bucket per agent: `burst` launches at once (by default 32, or the agent's whole process
 * allowance, `server-processes-per-agent`, when that is larger, so filling it is never refused; a
 * small allowance still gets the 32 that a few `/mcp` sessions of 3-10 servers, a client
 * reconnecting and a replaced oldest session take), then `perMinute` more a minute. A launch past it is refused with `limit-reached`, saying when to retry; nothing else
 * happens (no process is ended to make room). Refusals are logged once a minute per agent, with
 * how many there were. Each agent has its own bucket: another agent's launches are never refused
 * because of this one's.
 *
 * What counts: every stdio process the host starts for an agent, a legacy session's, a modern
 * agent's instance, and a warm pool's spare (`trySpare`), which is a launch made for that agent
 * and would otherwise let a churning agent's sessions, each taking a spare, launch at the pool's
 * refill rate instead. A spare only starts while the bucket keeps at least half its burst for the
 * agent's own sessions, so the pool refilling in the background never makes the agent's next
 * session be refused. A warm instance handed to a session launches nothing and takes nothing.
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import { CoalescedLog } from '../../shared/coalesced-log.ts';
import type { Logger } from '../log.ts';

/** sidecar.json `"limits"."server-launches-per-agent-per-minute"` default. */
export const DEFAULT_LAUNCHES_PER_AGENT_PER_MINUTE = 60;

/** The least default burst (`"server-launch-burst-per-agent"` unset): see `defaultLaunchBurst`. */
export const MIN_DEFAULT_LAUNCH_BURST = 32;

/** `"server-launch-burst-per-agent"` when unset: an agent may fill its process allowance at once, and gets at least 32. */
export function defaultLaunchBurst(processesPerAgent: number): number {
  return Math.max(MIN_DEFAULT_LAUNCH_BURST, processesPerAgent);
}

/** Buckets kept before full ones (the same as none) are swept. */
const SWEEP_AT = 256;

export interface LaunchRateLimits {
  /** Launches one agent may make at once. */
  readonly burst: number;
  /** Launches one agent gets back a minute; 0: no launch rate. */
  readonly perMinute: number;
}

export interface LaunchRateOptions {
  limits: LaunchRateLimits;
  log: Logger;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class LaunchRate {
  #limits: LaunchRateLimits;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  /** Per agent: when its last refusal was logged and how many came since. */
  /** Refusals of one agent: logged at most once a minute, however fast it is refused (a churning agent must not fill the log). */
  readonly #logged = new CoalescedLog();

  constructor(options: LaunchRateOptions) {
    this.#limits = options.limits;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.#limits.perMinute > 0;
  }

  /** New limits (a sidecar.json reload); a bucket above the new burst is cut to it. */
  setLimits(limits: LaunchRateLimits): void {
    this.#limits = limits;
  }

  /** Launches `agent` may make now (whole or not); `Infinity` with no launch rate. */
  available(agent: string): number {
    return this.enabled ? this.#level(agent) : Infinity;
  }

  /**
   * Takes one launch for `agent`.
   * @throws WireError `limit-reached` when its bucket is empty, saying when to retry.
   */
  take(agent: string, server: string): void {
    if (!this.enabled) return;
    const level = this.#level(agent);
    if (level < 1) throw this.#refuse(agent, server, level);
    this.#set(agent, level - 1);
  }

  /**
   * Takes one launch for a warm pool's spare of `agent`, when the bucket keeps at least half its
   * burst after it; otherwise takes nothing and the pool waits.
   */
  trySpare(agent: string): boolean {
    if (!this.enabled) return true;
    const level = this.#level(agent);
    if (level - 1 < Math.floor(this.#limits.burst / 2)) return false;
    this.#set(agent, level - 1);
    return true;
  }

  /** Gives back a launch taken for one that did not happen (the process budget refused it). */
  giveBack(agent: string): void {
    if (this.enabled) this.#set(agent, this.#level(agent) + 1);
  }

  #level(agent: string): number {
    const { burst, perMinute } = this.#limits;
    const bucket = this.#buckets.get(agent);
    if (bucket === undefined) return burst;
    return Math.min(burst, bucket.tokens + ((this.#now() - bucket.at) * perMinute) / 60_000);
  }

  #set(agent: string, tokens: number): void {
    const now = this.#now();
    if (tokens >= this.#limits.burst) this.#buckets.delete(agent);
    else this.#buckets.set(agent, { tokens, at: now });
    if (this.#buckets.size > SWEEP_AT) {
      for (const [other] of this.#buckets) if (this.#level(other) >= this.#limits.burst) this.#buckets.delete(other);
    }
  }

  #refuse(agent: string, server: string, level: number): WireError {
    const { burst, perMinute } = this.#limits;
    const retrySeconds = Math.max(1, Math.ceil(((1 - level) * 60) / perMinute));
    const held = this.#logged.admit(agent, this.#now());
    if (held !== null) this.#log.warn('Server launch refused: launch rate reached', { agent, server, burst, perMinute, refused: held + 1, retrySeconds });
    return new WireError(
      'limit-reached',
      `Server "${server}" cannot start: agent "${agent}" started server processes on this host faster than its launch rate allows (${burst} at once, then ${perMinute} a minute); retry in ${retrySeconds} s, or raise "limits" in the host's sidecar.json`,
      { detail: { server } },
    );
  }
}
