/**
 * Caps on requests in flight (review dos.md, finding 3): every request the worker has taken and
 * not yet answered holds its message, its bookkeeping and a share of the host's, so one agent
 * sending calls a server never answers (2000 of them: worker +230 MiB, sidecar +114 MiB) could
 * make the worker hold unbounded memory, and an OOM kill ends every agent's sessions.
 *
 * - A legacy session answers at most `MAX_REQUESTS_PER_SESSION` requests at once
 *   (`legacy-http-endpoint.ts`).
 * - An agent has at most `max-requests-per-agent` requests in flight across its sessions, both
 *   endpoints, and its modern (2026-07-28) requests (`modern/modern-route.ts`).
 *
 * Past either, a request is answered with `limit-reached` (JSON-RPC -32012; HTTP 429 when the
 * whole POST is refused, one error per refused request inside a batch) and goes nowhere. Answers,
 * notifications and requests within the cap are never held back, so the agent can always drain.
 *
 * A request's place is given back when its answer has been read, not when it reached the worker
 * (review isolation.md, finding 3): an agent that never reads its answers (each on a connection of
 * its own) held 3 GB of them past both caps. Only a small JSON answer, which the connection's
 * socket buffers take whole, gives it back at once (`HELD_ANSWER_MIN_CHARS`). And since the caps
 * alone still let an agent hold 256 answers of up to a link frame each (16 MiB: 4 GiB), the bytes
 * of its answers the worker holds unread, in streams and held answers together
 * (`answer-stream.ts`), are bounded too: `MAX_UNREAD_BYTES_PER_AGENT`. An agent past it gets its
 * new requests refused with `limit-reached` (429) until it has read below it, so it cannot pile up
 * more, while the answers of requests already taken still go out: an agent reading several large
 * answers over a slow link passes the budget while reading all the time, and dropping them lost
 * finished work. Only past `HARD_UNREAD_FACTOR` times the budget, which still bounds the worker's
 * memory, is a large answer replaced by a `limit-reached` error and a stream it is not reading ended.
 *
 * A request the agent cancels keeps its place until its late answer comes or
 * `CANCELLED_SLOT_GRACE_MS` passes (review isolation.md, finding 4): a server that does not honour
 * `notifications/cancelled` works on, and a place given back at the cancel let one agent queue
 * thousands of calls on a host (4,966 in 16 s), slowing every other agent on it.
 *
 * The per-agent count is this isolate's: on Cloudflare, where each session is a Durable Object
 * of its own, only the per-session cap bounds a session, and the per-agent one bounds what one
 * isolate serves. An agent's counter is kept by name across config reloads
 * (`AgentRequestCounters`), so a reload neither resets nor doubles it.
 *
 * @module
 */
import { DelayQueue } from '../../shared/delay-queue.ts';
import { WireError } from '../../shared/errors.ts';
import { DEFAULT_MAX_REQUESTS_PER_AGENT } from '../config/worker-config.ts';
import { HARD_UNREAD_FACTOR, type UnreadMeter } from './answer-stream.ts';

/**
 * Requests one legacy session may have in flight: more than any client runs at once for real, and
 * above the 100 one batch may hold, so a full batch on a quiet session is always taken whole.
 */
export const MAX_REQUESTS_PER_SESSION = 128;

/**
 * Unread answer bytes one agent may leave in the worker (its streams and held answers together):
 * sixteen streams at their own bound (`MAX_UNREAD_BYTES_PER_STREAM`), far more than an agent that
 * reads ever leaves (a connection takes a few MB into its socket buffers at once).
 */
export const MAX_UNREAD_BYTES_PER_AGENT = 64 * 1024 * 1024;

/**
 * How long a cancelled request keeps its place when no late answer comes: a server that honours
 * the cancellation never answers, and one that does not has usually answered by then (a call
 * still running after it counts no more, but the agent can have at most its cap of such calls
 * started in any 10 s).
 */
export const CANCELLED_SLOT_GRACE_MS = 10_000;

/** The graces of every agent's cancelled requests, on one timer (`shared/delay-queue.ts`). */
export const CANCELLED_SLOT_GRACES = new DelayQueue(CANCELLED_SLOT_GRACE_MS);

/** Bounds every agent's counter enforces; tests give small ones. */
export interface AgentBounds {
  /** `MAX_UNREAD_BYTES_PER_AGENT` by default. */
  maxUnreadBytes?: number;
  /** `HARD_UNREAD_FACTOR` × `maxUnreadBytes` by default. */
  hardUnreadBytes?: number;
  /** `CANCELLED_SLOT_GRACE_MS` by default. */
  cancelGraceMs?: number;
}

/** The requests one agent has in flight in this isolate, and the bytes of its answers the worker holds unread. */
export class AgentRequests implements UnreadMeter {
  #inFlight = 0;
  unreadBytes = 0;
  readonly maxUnreadBytes: number;
  readonly hardUnreadBytes: number;
  /** Where a cancelled request's place waits out its grace. */
  readonly cancelGraces: DelayQueue;

  constructor(
    readonly agent: string,
    /** The cap; a config reload may change it (requests over a lowered one finish, none is taken until below). */
    public limit: number,
    bounds: AgentBounds = {},
  ) {
    this.maxUnreadBytes = bounds.maxUnreadBytes ?? MAX_UNREAD_BYTES_PER_AGENT;
    this.hardUnreadBytes = bounds.hardUnreadBytes ?? this.maxUnreadBytes * HARD_UNREAD_FACTOR;
    this.cancelGraces = bounds.cancelGraceMs === undefined ? CANCELLED_SLOT_GRACES : new DelayQueue(bounds.cancelGraceMs);
  }

  /** Whether the agent already holds more unread than its budget: it gets no new request in until it reads. */
  get overUnread(): boolean {
    return this.unreadBytes > this.maxUnreadBytes;
  }

  /** Why a request of this agent was not taken (`takeSlot` gave null, or `room` or `overUnread` said so). */
  refusal(): WireError {
    return this.overUnread ? unreadRequestsRefused(this.agent, this.maxUnreadBytes) : agentRequestsLimitReached(this.agent, this.limit);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** How many more requests fit now. */
  get room(): number {
    return Math.max(0, this.limit - this.#inFlight);
  }

  take(count = 1): void {
    this.#inFlight += count;
  }

  release(count = 1): void {
    this.#inFlight = Math.max(0, this.#inFlight - count);
  }

  /** One slot (`RequestSlot`); null when there is no room or the agent is over its unread budget (`refusal`). */
  takeSlot(): RequestSlot | null {
    if (this.room === 0 || this.overUnread) return null;
    this.take();
    return new RequestSlot(this);
  }
}

/**
 * One modern request's place under its agent's cap: given back once, by `release` (whoever calls
 * it first), or, for a request the agent abandoned, by the end of its grace (`park`, after which
 * `release` does nothing). One object per request where closures and flags cost the hot path
 * several (issue 17).
 */
export class RequestSlot {
  /** 0 held, 1 parked in the grace, 2 given back. */
  #state = 0;
  #givenBack: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(readonly requests: AgentRequests) {}

  release(): void {
    if (this.#state !== 0) return;
    this.#giveBack();
  }

  /** The agent abandoned the request: its place comes back when `CANCELLED_SLOT_GRACE_MS` ends. */
  park(): void {
    if (this.#state !== 0) return;
    this.#state = 1;
    this.requests.cancelGraces.add(() => this.#giveBack());
  }

  /** Settles once the place is given back, the grace included (Workers hold the request's invocation until then). */
  givenBack(): Promise<void> {
    if (this.#state === 2) return Promise.resolve();
    if (this.#givenBack === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#givenBack = { promise, resolve };
    }
    return this.#givenBack.promise;
  }

  #giveBack(): void {
    this.#state = 2;
    this.requests.release();
    this.#givenBack?.resolve();
  }
}

/**
 * Every agent's counter, by agent name, for as long as the worker runs: a config reload builds a
 * new app but keeps this, so requests taken before and after it count against one cap (a counter
 * per config entry let an agent hold twice its cap across a reload).
 */
export class AgentRequestCounters {
  readonly #byName = new Map<string, AgentRequests>();
  #limit = DEFAULT_MAX_REQUESTS_PER_AGENT;

  constructor(readonly bounds: AgentBounds = {}) {}

  /**
   * Puts the `max-requests-per-agent` of the config in force on every counter: the app built for a
   * config sets it, so a request an older app is still handling cannot bring an old limit back.
   */
  configure(config: { readonly 'max-requests-per-agent'?: number | undefined } | undefined): void {
    this.#limit = config?.['max-requests-per-agent'] ?? DEFAULT_MAX_REQUESTS_PER_AGENT;
    for (const requests of this.#byName.values()) requests.limit = this.#limit;
  }

  /** The counter of `agent`. */
  of(agent: { readonly name: string }): AgentRequests {
    let requests = this.#byName.get(agent.name);
    if (requests === undefined) this.#byName.set(agent.name, (requests = new AgentRequests(agent.name, this.#limit, this.bounds)));
    return requests;
  }
}

/**
 * The counters of a process (of an isolate on Workers, where each session's object builds an app
 * of its own): an app not handed the composed worker's counters draws on these.
 */
export const PROCESS_REQUEST_COUNTERS = new AgentRequestCounters();

/**
 * The agent counter a session's HTTP request draws from. Handed over beside the request because
 * the session route knows the agent and the endpoint counts the requests, and the session objects
 * between them pass the request on untouched.
 */
const drawnFrom = new WeakMap<Request, AgentRequests>();

export function drawRequestsFrom(request: Request, requests: AgentRequests): void {
  drawnFrom.set(request, requests);
}

export function agentRequestsFor(request: Request): AgentRequests | undefined {
  return drawnFrom.get(request);
}

export function sessionRequestsLimitReached(limit: number): WireError {
  return new WireError(
    'limit-reached',
    `This session already has ${limit} requests in flight: wait for their answers before sending more, or open another session`,
    { detail: { limit } },
  );
}

export function agentRequestsLimitReached(agent: string, limit: number): WireError {
  return new WireError(
    'limit-reached',
    `Agent "${agent}" already has ${limit} requests in flight: wait for their answers before sending more, or raise max-requests-per-agent in the worker config`,
    { detail: { agent, limit } },
  );
}

/** Why a new request of an agent past its unread budget was refused. */
export function unreadRequestsRefused(agent: string, limit: number): WireError {
  return new WireError(
    'limit-reached',
    `Agent "${agent}" holds more than ${limit} bytes of answers it has not read: read them before sending more requests`,
    { detail: { agent, limit } },
  );
}

/** Why an answer was not queued for an agent past the hard bound on what it leaves unread (`hardUnreadLimit`). */
export function unreadLimitReached(agent: string, limit: number): WireError {
  return new WireError(
    'limit-reached',
    `Answer dropped: agent "${agent}" holds more than ${limit} bytes of answers it has not read; read them before sending more requests`,
    { detail: { agent, limit } },
  );
}
