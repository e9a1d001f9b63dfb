/**
 * `AgentSlots`: on Workers, the one place that sees every live legacy session of one agent
 * (binding `AGENT_SLOTS`, `idFromName(agent name)`), so `max-sessions` holds across isolates as it
 * does in the session table on Deno and Node (`worker/sessions/agent-limits.ts`). Each session's
 * `AgentSession` object holds one slot, a lease keyed by that object's id.
 *
 * - `admit`: the same decision as on Deno and Node (`admitSession`): below the limit the new
 *   lease is written at once; at it, the agent's least recently used idle sessions are asked to end
 *   (each checks it is idle still); when too few are idle, every lease is first read back from its
 *   session (a lease's state is up to one sweep old), and only then is the new one refused.
 * - `renew`: each session's sweep (a quarter of the idle time, at most 30 s) reports its last
 *   activity and requests in flight and extends its lease by one idle time; a live session whose
 *   lease this object lost (its storage reset) takes it again, so the count heals within a sweep;
 *   a session given back or ended is remembered, so its last renewal cannot take a slot again.
 * - `release`: a session that closed (DELETE, idle expiry, a failed initialize) gives its slot back.
 * - `held`: how many slots the agent holds: the sessions the edge's `/healthz` counts on Workers.
 * - `end-grant`: an OAuth grant of the agent ended (revoked, a refresh token reused): each of its
 *   sessions is asked to end if that grant opened it, so a revoked grant leaves no session open
 *   on Workers either, as on Deno and Node, not until its session's next sweep.
 *
 * A slot is never held forever: a session whose object was evicted or failed stops renewing and
 * its lease lapses after one idle time; at the limit, a session whose object answers that it has
 * none is reclaimed at once. Operations run one at a time (a queue in this single-threaded
 * object), since an admission waits on other objects; leases are kept in storage too, so this
 * object being evicted loses none.
 *
 * @module
 */
import * as z from '../../../shared/zod.ts';
import { AgentNameSchema } from '../../../shared/names.ts';
import { admitSession } from '../../sessions/agent-limits.ts';
import type { WorkerLogger } from '../../log.ts';
import { loadFromEnv } from './cloudflare-env.ts';
import { within } from './within.ts';
import type { DurableObjectNamespace, DurableObjectState, SwitchyardEnv } from './workers-runtime.ts';

/** Paths of the requests an `AgentSlots` object sends its sessions' objects (never routed from the edge). */
export const SLOT_STATE_PATH = '/agent-slots/state';
export const SLOT_END_IF_IDLE_PATH = '/agent-slots/end-if-idle';
/** Ends the object's session if it was opened under the grant the body names (`EndGrant`). */
export const SLOT_END_GRANT_PATH = '/agent-slots/end-grant';
const SESSION_OBJECT_ORIGIN = 'https://agent-session.switchyard';
const SLOTS_OBJECT_ORIGIN = 'https://agent-slots.switchyard';

const SessionKey = z.string().check(z.regex(/^[0-9a-f]{64}$/));
/** A grant that ended, and why, as its sessions' agent is told. */
export const EndGrant = z.strictObject({ grant: z.string().check(z.minLength(1), z.maxLength(256)), why: z.string().check(z.maxLength(1000)) });
export type EndGrant = z.infer<typeof EndGrant>;
/** Each call names the agent (the object's name, which its id does not give back), for the log. */
const Operation = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('admit'), agent: AgentNameSchema, session: SessionKey, limit: z.number().check(z.int(), z.positive()), leaseMs: z.number().check(z.int(), z.positive()) }),
  z.strictObject({ op: z.literal('renew'), agent: AgentNameSchema, session: SessionKey, lastSeen: z.number(), inFlight: z.number().check(z.int(), z.nonnegative()), leaseMs: z.number().check(z.int(), z.positive()) }),
  z.strictObject({ op: z.literal('release'), agent: AgentNameSchema, session: SessionKey }),
  z.strictObject({ op: z.literal('end-grant'), agent: AgentNameSchema, grant: EndGrant.shape.grant, why: EndGrant.shape.why }),
  z.strictObject({ op: z.literal('held') }),
]);
type Operation = z.infer<typeof Operation>;

/** What a session's object says of its session: none (gone), just ended to make room (ended), or its activity. */
export const SlotState = z.union([
  z.strictObject({ gone: z.literal(true) }),
  z.strictObject({ ended: z.literal(true) }),
  z.strictObject({ lastSeen: z.number(), inFlight: z.number().check(z.int(), z.nonnegative()) }),
]);
export type SlotState = z.infer<typeof SlotState>;

/** The answers of the counting operations, checked where they are read. */
const Held = z.strictObject({ held: z.number().check(z.int(), z.nonnegative()) });
const Ended = z.strictObject({ ended: z.number().check(z.int(), z.nonnegative()) });

export type SlotAnswer = { kind: 'admitted' } | { kind: 'full' } | { held: number } | { ended: number } | Record<string, never>;

interface Lease {
  expires: number;
  lastSeen: number;
  inFlight: number;
}

const LEASE_PREFIX = 'lease:';
/** Longest wait for a session's object to answer: it answers from memory, in milliseconds, unless it hangs. */
const ASK_TIMEOUT_MS = 5_000;
/** Sessions remembered as given back, so a renewal sent just before cannot take the slot again. */
const RELEASED_REMEMBERED = 1024;

export class AgentSlots {
  readonly #state: DurableObjectState;
  readonly #env: SwitchyardEnv;
  #leases: Promise<Map<string, Lease>> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #agent: string | undefined;
  /** Session keys given back or ended, oldest first (object ids are never reused). */
  readonly #released = new Set<string>();

  constructor(state: DurableObjectState, env: SwitchyardEnv) {
    this.#state = state;
    this.#env = env;
  }

  async fetch(request: Request): Promise<Response> {
    const parsed = Operation.safeParse(await request.json().catch(() => null));
    if (!parsed.success) return Response.json({ error: 'Invalid slot operation' }, { status: 400 });
    // A count for /healthz, read without waiting in the queue behind an admission that asks its sessions (5 s each, at most): the leases not lapsed.
    if (parsed.data.op === 'held') {
      const now = Date.now();
      return Response.json({ held: [...(await this.#load()).values()].filter((lease) => lease.expires > now).length });
    }
    const run = this.#queue.then(() => this.#apply(parsed.data));
    this.#queue = run.catch(() => {});
    return Response.json(await run);
  }

  async #apply(operation: Operation): Promise<SlotAnswer> {
    if (operation.op !== 'held') this.#agent = operation.agent;
    const leases = await this.#load();
    const now = Date.now();
    for (const [session, lease] of leases) {
      if (lease.expires <= now) await this.#drop(leases, session, 'its lease lapsed');
    }
    switch (operation.op) {
      case 'admit':
        return this.#admit(leases, operation.session, operation.limit, operation.leaseMs);
      case 'renew':
        if (this.#released.has(operation.session)) return {};
        await this.#put(leases, operation.session, { expires: now + operation.leaseMs, lastSeen: operation.lastSeen, inFlight: operation.inFlight });
        return {};
      case 'release':
        await this.#end(leases, operation.session);
        return {};
      case 'end-grant':
        return this.#endGrant(leases, { grant: operation.grant, why: operation.why });
      case 'held':
        return { held: leases.size };
    }
  }

  async #admit(leases: Map<string, Lease>, session: string, limit: number, leaseMs: number): Promise<SlotAnswer> {
    let refreshed = false;
    for (;;) {
      const live = [...leases].map(([id, lease]) => ({ id, lastSeen: lease.lastSeen, inFlight: lease.inFlight }));
      const admission = admitSession(live, 0, limit);
      if (admission.kind === 'full') {
        if (refreshed) return { kind: 'full' };
        // Decided on what the sessions say now, not on leases up to one sweep old.
        refreshed = true;
        await Promise.all(live.map(async ({ id }) => this.#learn(leases, id, await this.#ask(id, SLOT_STATE_PATH))));
        continue;
      }
      if (admission.evict.length === 0) break;
      // Each one ends, or counts as busy from now on (it is, or it failed to answer): so this loop ends.
      await Promise.all(admission.evict.map(async (id) => {
        const state = (await this.#ask(id, SLOT_END_IF_IDLE_PATH)) ?? { lastSeen: Date.now(), inFlight: 1 };
        await this.#learn(leases, id, 'lastSeen' in state ? { ...state, inFlight: Math.max(state.inFlight, 1) } : state);
      }));
    }
    // Being opened counts as busy: nothing ends it to make room before its first renewal.
    const now = Date.now();
    await this.#put(leases, session, { expires: now + leaseMs, lastSeen: now, inFlight: 1 });
    return { kind: 'admitted' };
  }

  /**
   * Asks every session of the agent to end if it was opened under `ended` (its OAuth grant was
   * revoked where the edge serves `/oauth/revoke`, which cannot find those sessions itself).
   */
  async #endGrant(leases: Map<string, Lease>, ended: EndGrant): Promise<{ ended: number }> {
    const answers = await Promise.all([...leases.keys()].map(async (id) => {
      const state = await this.#ask(id, SLOT_END_GRANT_PATH, ended);
      await this.#learn(leases, id, state);
      return state !== null && 'ended' in state;
    }));
    const count = answers.filter(Boolean).length;
    if (count > 0) this.#log()?.info('Agent sessions ended with their OAuth grant', { agent: this.#agent, sessions: count });
    return { ended: count };
  }

  /** Records what a session's object answered; an object that failed to answer keeps its lease until it lapses. */
  async #learn(leases: Map<string, Lease>, id: string, state: SlotState | null): Promise<void> {
    const lease = leases.get(id);
    if (state === null || lease === undefined) return;
    if ('ended' in state) await this.#end(leases, id);
    else if ('gone' in state) await this.#drop(leases, id, 'its object holds no session');
    else await this.#put(leases, id, { ...lease, lastSeen: state.lastSeen, inFlight: state.inFlight });
  }

  /**
   * What a session's object answers, or null where it fails to, or takes past `ASK_TIMEOUT_MS`:
   * operations run one at a time, so one object that hangs must not hold every other of the
   * agent's admissions, and a revocation's answer, behind it.
   */
  #ask(id: string, path: string, body?: unknown): Promise<SlotState | null> {
    const asked = (async () => {
      try {
        const sessions = this.#env.AGENT_SESSION;
        const response = await sessions.get(sessions.idFromString(id)).fetch(`${SESSION_OBJECT_ORIGIN}${path}`, { method: 'POST', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
        const state = SlotState.safeParse(await response.json());
        return state.success ? state.data : null;
      } catch {
        return null;
      }
    })();
    return within(asked, ASK_TIMEOUT_MS, null);
  }

  /** Frees a slot its session never gave back. */
  async #drop(leases: Map<string, Lease>, id: string, why: string): Promise<void> {
    await this.#delete(leases, id);
    this.#log()?.info('Agent session slot reclaimed', { agent: this.#agent, why });
  }

  /** Frees the slot of a session that is over. */
  async #end(leases: Map<string, Lease>, id: string): Promise<void> {
    this.#released.add(id);
    if (this.#released.size > RELEASED_REMEMBERED) this.#released.delete(this.#released.values().next().value!);
    await this.#delete(leases, id);
  }

  async #delete(leases: Map<string, Lease>, id: string): Promise<void> {
    leases.delete(id);
    await this.#state.storage.delete(LEASE_PREFIX + id);
  }

  async #put(leases: Map<string, Lease>, id: string, lease: Lease): Promise<void> {
    leases.set(id, lease);
    await this.#state.storage.put(LEASE_PREFIX + id, lease);
  }

  /** The leases, read from storage once: a count read outside the queue and a queued operation share the one read. */
  #load(): Promise<Map<string, Lease>> {
    this.#leases ??= this.#state.storage.list({ prefix: LEASE_PREFIX }).then(
      (stored) => new Map([...stored].map(([key, lease]) => [key.slice(LEASE_PREFIX.length), lease as Lease])),
      (error: unknown) => {
        // A failed read is not kept: the next operation reads again.
        this.#leases = undefined;
        throw error;
      },
    );
    return this.#leases;
  }

  #log(): WorkerLogger | undefined {
    const loaded = loadFromEnv(this.#env, 'agent-slots');
    return loaded.ok ? loaded.log : undefined;
  }
}

/** One agent's slots as its session's object uses them: one small request to the agent's object per call. */
export class AgentSlotsClient {
  readonly #namespace: DurableObjectNamespace;
  readonly #agent: string;

  constructor(namespace: DurableObjectNamespace, agent: string) {
    this.#namespace = namespace;
    this.#agent = agent;
  }

  async admit(session: string, limit: number, leaseMs: number): Promise<'admitted' | 'full'> {
    const answer = (await this.#call({ op: 'admit', agent: this.#agent, session, limit, leaseMs })) as { kind: 'admitted' | 'full' };
    return answer.kind;
  }

  async renew(session: string, lastSeen: number, inFlight: number, leaseMs: number): Promise<void> {
    await this.#call({ op: 'renew', agent: this.#agent, session, lastSeen, inFlight, leaseMs });
  }

  async release(session: string): Promise<void> {
    await this.#call({ op: 'release', agent: this.#agent, session });
  }

  /** How many sessions the agent holds: its live leases. */
  async held(): Promise<number> {
    return Held.parse(await this.#call({ op: 'held' })).held;
  }

  /** Ends the agent's sessions opened under a grant that ended; how many there were. */
  async endGrant(grant: string, why: string): Promise<number> {
    return Ended.parse(await this.#call({ op: 'end-grant', agent: this.#agent, grant, why })).ended;
  }

  async #call(operation: Operation): Promise<unknown> {
    const stub = this.#namespace.get(this.#namespace.idFromName(this.#agent));
    const response = await stub.fetch(`${SLOTS_OBJECT_ORIGIN}/`, { method: 'POST', body: JSON.stringify(operation) });
    if (!response.ok) throw new Error(`The agent's slots object refused a ${operation.op}: HTTP ${response.status}`);
    return response.json();
  }
}

/**
 * The OAuth runtime of one isolate or object, a grant's end told to the agent's slots object too,
 * which ends the sessions the grant opened in their own objects. Its failure ends nothing sooner:
 * each session's sweep asks after its grant (30 s at most).
 */
export function endingGrantSessions<T extends { onGrantEnded?: (grantId: string, why: string, agent?: string) => Promise<unknown> | void }>(runtime: T, slots: DurableObjectNamespace, log: WorkerLogger): T {
  return {
    ...runtime,
    onGrantEnded: async (grantId: string, why: string, agent?: string) => {
      await runtime.onGrantEnded?.(grantId, why, agent);
      if (agent === undefined) return;
      await new AgentSlotsClient(slots, agent).endGrant(grantId, why).catch((error: unknown) => {
        log.warn('Sessions of an ended OAuth grant not ended at once: they end at their next sweep', { agent, error: error instanceof Error ? error.message : String(error) });
      });
    },
  };
}
