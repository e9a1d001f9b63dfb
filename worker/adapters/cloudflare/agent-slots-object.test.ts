/**
 * The lease rules of `AgentSlots` that workerd cannot be made to show on demand (it evicts or
 * breaks no single object on request): a slot whose session's object stopped renewing lapses
 * after its lease, an object that answers for no session gives its slot back at once, and a
 * refusal is decided on what the sessions say now. The object runs in process, with a map for its
 * storage and the sessions' objects answering as `AgentSession` does
 * (test/cloudflare/agent-limits.test.ts runs the real ones under workerd).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentSlots, SLOT_END_GRANT_PATH, SLOT_END_IF_IDLE_PATH, SLOT_STATE_PATH, type SlotState } from './agent-slots-object.ts';
import type { DurableObjectId, DurableObjectState, SwitchyardEnv } from './workers-runtime.ts';

const key = (n: number) => n.toString(16).padStart(64, '0');

/** A session's object as the slots object reaches it: its answers, or null for one that fails. */
type SessionObject = { state: SlotState; endIfIdle?: SlotState; grant?: string } | 'hangs' | null;

function slotsWith(objects: Map<string, SessionObject>): { op(body: unknown): Promise<unknown>; asked: string[] } {
  const stored = new Map<string, unknown>();
  const id = (value: string): DurableObjectId => ({ toString: () => value, equals: (other) => other.toString() === value });
  const asked: string[] = [];
  const state = {
    id: id('slots'),
    storage: {
      get: async (k: string) => stored.get(k),
      put: async (k: string, v: unknown) => void stored.set(k, structuredClone(v)),
      delete: async (k: string) => stored.delete(k),
      list: async ({ prefix = '' } = {}) => new Map([...stored].filter(([k]) => k.startsWith(prefix))),
    },
  } as unknown as DurableObjectState;
  const env = {
    SWITCHYARD_WORKER_CONFIG: JSON.stringify({ agents: [], hosts: [], servers: {}, 'admin-token-sha256': 'a'.repeat(64) }),
    SWITCHYARD_LOG_LEVEL: 'error',
    AGENT_SESSION: {
      idFromString: id,
      get: (object: DurableObjectId) => ({
        fetch: async (url: string, init?: RequestInit) => {
          const path = new URL(url).pathname;
          asked.push(`${path} ${object.toString()}`);
          const answers = objects.get(object.toString());
          if (answers === 'hangs') return new Promise<Response>(() => {});
          if (answers === null || answers === undefined) throw new Error('object failed');
          // As `AgentSession` answers: ended if the grant named is the one its session was opened under.
          if (path === SLOT_END_GRANT_PATH) return Response.json((JSON.parse(String(init?.body)) as { grant: string }).grant === answers.grant ? { ended: true } : answers.state);
          return Response.json(path === SLOT_END_IF_IDLE_PATH ? (answers.endIfIdle ?? answers.state) : answers.state);
        },
      }),
    },
  } as unknown as SwitchyardEnv;
  const slots = new AgentSlots(state, env);
  return {
    asked,
    op: async (body) => (await slots.fetch(new Request('https://agent-slots.switchyard/', { method: 'POST', body: JSON.stringify(body) }))).json(),
  };
}

const admit = (n: number, limit = 1) => ({ op: 'admit', agent: 'alice', session: key(n), limit, leaseMs: 1_000 });
const renew = (n: number, inFlight: number) => ({ op: 'renew', agent: 'alice', session: key(n), lastSeen: Date.now(), inFlight, leaseMs: 1_000 });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('AgentSlots', () => {
  it('keeps the slot of a session whose object fails to answer until its lease lapses, then gives it to the next', async () => {
    const objects = new Map<string, SessionObject>([[key(1), null]]);
    const slots = slotsWith(objects);
    expect(await slots.op(admit(1))).toEqual({ kind: 'admitted' });
    vi.advanceTimersByTime(999);
    expect(await slots.op(admit(2))).toEqual({ kind: 'full' });
    expect(slots.asked).toEqual([`${SLOT_STATE_PATH} ${key(1)}`]);
    vi.advanceTimersByTime(1);
    expect(await slots.op(admit(2))).toEqual({ kind: 'admitted' });
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
  });

  it('renewing extends a lease by one lease time from now', async () => {
    const slots = slotsWith(new Map([[key(1), null]]));
    await slots.op(admit(1));
    vi.advanceTimersByTime(900);
    await slots.op(renew(1, 0));
    vi.advanceTimersByTime(900);
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
    vi.advanceTimersByTime(100);
    expect(await slots.op({ op: 'held' })).toEqual({ held: 0 });
  });

  it('frees at once the slot of an object that holds no session (evicted, restarted)', async () => {
    const slots = slotsWith(new Map([[key(1), { state: { gone: true } }]]));
    await slots.op(admit(1));
    await slots.op(renew(1, 0));
    expect(await slots.op(admit(2))).toEqual({ kind: 'admitted' });
    expect(slots.asked).toEqual([`${SLOT_END_IF_IDLE_PATH} ${key(1)}`]);
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
  });

  it('reads busy-looking leases back before refusing: a session idle by now is ended to make room', async () => {
    const slots = slotsWith(new Map([[key(1), { state: { lastSeen: Date.now(), inFlight: 0 }, endIfIdle: { ended: true } }]]));
    await slots.op(admit(1));
    await slots.op(renew(1, 3));
    expect(await slots.op(admit(2))).toEqual({ kind: 'admitted' });
    expect(slots.asked).toEqual([`${SLOT_STATE_PATH} ${key(1)}`, `${SLOT_END_IF_IDLE_PATH} ${key(1)}`]);
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
  });

  it('refuses when a session chosen to end turns out busy, keeping its slot', async () => {
    const slots = slotsWith(new Map([[key(1), { state: { lastSeen: Date.now(), inFlight: 0 }, endIfIdle: { lastSeen: Date.now(), inFlight: 1 } }]]));
    await slots.op(admit(1));
    await slots.op(renew(1, 0));
    expect(await slots.op(admit(2))).toEqual({ kind: 'full' });
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
  });

  it('gives a released slot back for good, and lets a live session whose lease was lost take it again', async () => {
    const slots = slotsWith(new Map());
    await slots.op(admit(1, 2));
    await slots.op({ op: 'release', agent: 'alice', session: key(1) });
    expect(await slots.op({ op: 'held' })).toEqual({ held: 0 });
    // A renewal the session sent before it closed, arriving after its release.
    await slots.op(renew(1, 0));
    expect(await slots.op({ op: 'held' })).toEqual({ held: 0 });
    // A session this object never saw end (its storage reset) renews into a slot.
    await slots.op(renew(2, 0));
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
  });

  it('asks every session of the agent to end with an ended grant, and frees the slots of those it opened', async () => {
    const live = { lastSeen: Date.now(), inFlight: 0 };
    const slots = slotsWith(new Map<string, SessionObject>([[key(1), { state: live, grant: 'g1' }], [key(2), { state: live, grant: 'g2' }], [key(3), null]]));
    for (const n of [1, 2, 3]) await slots.op(admit(n, 5));
    expect(await slots.op({ op: 'end-grant', agent: 'alice', grant: 'g1', why: 'its OAuth grant was revoked by the app' })).toEqual({ ended: 1 });
    expect(slots.asked.toSorted()).toEqual([1, 2, 3].map((n) => `${SLOT_END_GRANT_PATH} ${key(n)}`));
    // The one that failed to answer keeps its slot until its lease lapses, as always.
    expect(await slots.op({ op: 'held' })).toEqual({ held: 2 });
    // Freed for good: a renewal sent before it ended takes nothing.
    await slots.op(renew(1, 0));
    expect(await slots.op({ op: 'held' })).toEqual({ held: 2 });
    expect(await slots.op({ op: 'end-grant', agent: 'alice', grant: 'x'.repeat(257), why: '' })).toEqual({ error: 'Invalid slot operation' });
  });

  it('stops waiting for a session\'s object that hangs, so the agent\'s other operations and a revocation are not held behind it (review s33)', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const live = { lastSeen: Date.now(), inFlight: 0 };
    const slots = slotsWith(new Map<string, SessionObject>([[key(1), 'hangs'], [key(2), { state: live, grant: 'g1' }]]));
    for (const n of [1, 2]) await slots.op({ ...admit(n, 5), leaseMs: 60_000 });
    const ended = slots.op({ op: 'end-grant', agent: 'alice', grant: 'g1', why: 'its OAuth grant was revoked by the app' });
    // A count for /healthz is answered at once, not behind the operation that waits.
    expect(await slots.op({ op: 'held' })).toEqual({ held: 2 });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await ended).toEqual({ ended: 1 });
    // The hung one keeps its slot until its lease lapses, as one that failed to answer does.
    expect(await slots.op({ op: 'held' })).toEqual({ held: 1 });
  });

  it('refuses a malformed operation', async () => {
    const slots = slotsWith(new Map());
    expect(await slots.op({ op: 'admit', agent: 'alice', session: 'not-an-object-id', limit: 1, leaseMs: 1 })).toEqual({ error: 'Invalid slot operation' });
  });
});
