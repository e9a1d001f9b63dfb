import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LargeLineGate, SLOW_LINE_BYTES, SLOW_LINE_MS, type GatedReader } from './large-line-gate.ts';

/** A reader that says whether it is held (as a transport's stdout is paused); `linkHolds` stands for the link's flow control holding it too. */
function reader(name: string): GatedReader & { name: string; held: () => boolean; linkHolds: boolean; stalledWith: Array<[number, boolean]> } {
  let holds = 0;
  return {
    name,
    linkHolds: false,
    stalledWith: [] as Array<[number, boolean]>,
    stalled(heldBytes: number, gaveUp: boolean) {
      this.stalledWith.push([heldBytes, gaveUp]);
    },
    get readingHeld() {
      return holds > 0 || this.linkHolds;
    },
    held: () => holds > 0,
    holdReading() {
      holds++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holds--;
      };
    },
  };
}

describe('LargeLineGate', () => {
  // The gate's look at slow lines runs on a timer: every test runs on fake ones, so none is left behind.
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('reads as many large lines at once as it may, each of another agent, and holds the rest until one is whole', () => {
    const gate = new LargeLineGate({ atOnce: 2 });
    const [a, b, c] = [reader('a'), reader('b'), reader('c')];
    const ta = gate.enter(a, 'alice');
    const tb = gate.enter(b, 'bob');
    const tc = gate.enter(c, 'carol');
    expect([a.held(), b.held(), c.held()]).toEqual([false, false, true]);
    expect([gate.readingCount, gate.waitingCount]).toEqual([2, 1]);
    ta.leave();
    expect(c.held()).toBe(false);
    expect([gate.readingCount, gate.waitingCount]).toEqual([2, 0]);
    tb.leave();
    tc.leave();
    expect(gate.readingCount).toBe(0);
  });

  it('reads one line of an agent at a time: one agent\'s lines, or a server of its stopped mid-line, leave the other place to another agent', () => {
    const gate = new LargeLineGate({ atOnce: 2 });
    const [a1, a2, a3] = [reader('a1'), reader('a2'), reader('a3')];
    const first = gate.enter(a1, 'alice'); // and stops writing: never whole
    gate.enter(a2, 'alice');
    gate.enter(a3, 'alice');
    expect([a1.held(), a2.held(), a3.held()]).toEqual([false, true, true]);
    const b = reader('b');
    const tb = gate.enter(b, 'bob');
    expect(b.held()).toBe(false);
    tb.leave();
    const c = reader('c');
    gate.enter(c, 'carol');
    expect(c.held()).toBe(false);
    expect([a2.held(), a3.held()]).toEqual([true, true]); // both places taken: alice's stopped line and carol's
    first.leave();
    expect([a2.held(), a3.held()]).toEqual([false, true]);
  });

  it('gives the next turn to the agent served longest ago, not to the one with the most lines waiting', () => {
    const gate = new LargeLineGate({ atOnce: 1 });
    const first = gate.enter(reader('a0'), 'alice');
    const alice = [reader('a1'), reader('a2'), reader('a3')];
    const aliceTickets = alice.map((r) => gate.enter(r, 'alice'));
    const bob = reader('b1');
    const bobTicket = gate.enter(bob, 'bob');
    expect(alice.map((r) => r.held())).toEqual([true, true, true]);
    expect(bob.held()).toBe(true);
    first.leave();
    expect(bob.held()).toBe(false); // alice had the last turn, though her lines waited first
    expect(alice[0]!.held()).toBe(true);
    bobTicket.leave();
    expect(alice[0]!.held()).toBe(false);
    aliceTickets[0]!.leave();
    expect(alice[1]!.held()).toBe(false); // only alice waits now
    expect(alice[2]!.held()).toBe(true);
  });

  it('takes turns between agents that both wait, each line of one in the order it came', () => {
    const gate = new LargeLineGate({ atOnce: 1 });
    const start = gate.enter(reader('c0'), 'carol');
    const order: string[] = [];
    const tickets = new Map<string, { leave(): void }>();
    const lines = [['a1', 'alice'], ['a2', 'alice'], ['b1', 'bob'], ['b2', 'bob']] as const;
    const readers = lines.map(([name, group]) => {
      const r = reader(name);
      tickets.set(name, gate.enter(r, group));
      return r;
    });
    start.leave();
    for (let i = 0; i < lines.length; i++) {
      const reading = readers.find((r) => !r.held() && !order.includes(r.name))!;
      order.push(reading.name);
      tickets.get(reading.name)!.leave();
    }
    expect(order).toEqual(['a1', 'b1', 'a2', 'b2']);
  });

  it('lets no line read while the link has no room, and lets them on when told it has', () => {
    let roomy = false;
    const gate = new LargeLineGate({ atOnce: 4, roomy: () => roomy });
    const a = reader('a');
    const b = reader('b');
    gate.enter(a, 'alice');
    gate.enter(b, 'bob');
    expect([a.held(), b.held()]).toEqual([true, true]);
    gate.recheck();
    expect([a.held(), b.held()]).toEqual([true, true]); // still no room
    roomy = true;
    gate.recheck();
    expect([a.held(), b.held()]).toEqual([false, false]);
  });

  it('queues a newcomer behind the lines already waiting, even when a place is free', () => {
    let roomy = false;
    const gate = new LargeLineGate({ atOnce: 1, roomy: () => roomy });
    const waiting = reader('waiting');
    gate.enter(waiting, 'alice');
    roomy = true; // room came back, but nobody has rechecked yet
    const late = reader('late');
    const lateTicket = gate.enter(late, 'bob');
    expect(waiting.held()).toBe(false);
    expect(late.held()).toBe(true);
    expect(gate.readingCount).toBe(1);
    lateTicket.leave();
    expect(late.held()).toBe(false);
    expect(gate.waitingCount).toBe(0);
  });

  it('lets go of a waiting line whose reader closed, and forgets it', () => {
    const gate = new LargeLineGate({ atOnce: 1 });
    const reading = gate.enter(reader('a'), 'alice');
    const closing = reader('b');
    const ticket = gate.enter(closing, 'bob');
    const next = reader('c');
    gate.enter(next, 'carol');
    ticket.leave();
    ticket.leave(); // idempotent
    expect(closing.held()).toBe(false);
    expect(gate.waitingCount).toBe(1);
    reading.leave();
    expect(next.held()).toBe(false); // carol's turn, bob's line gone
    expect(gate.readingCount).toBe(1);
  });

  it('lets an agent with little waiting on a full link read while the agent that filled it waits for it to drain', () => {
    let full = true;
    const gate = new LargeLineGate({ atOnce: 2, roomy: (group) => !full || group !== 'alice' });
    const a = reader('a');
    const b = reader('b');
    gate.enter(a, 'alice');
    gate.enter(b, 'bob');
    expect([a.held(), b.held()]).toEqual([true, false]);
    full = false;
    gate.recheck(); // the link let go
    expect(a.held()).toBe(false);
  });

  it('remembers an agent\'s last turn once its lines are done: agents asking again at once do not pass one whose lines waited', () => {
    const gate = new LargeLineGate({ atOnce: 1 });
    const tickets = new Map<string, { leave(): void }>();
    const readers: Array<ReturnType<typeof reader>> = [];
    const enter = (name: string, group: string) => {
      const r = reader(name);
      readers.push(r);
      tickets.set(name, gate.enter(r, group));
    };
    enter('x', 'xavier');
    for (let i = 0; i < 3; i++) enter(`b${i}`, 'bob');
    enter('a0', 'alice');
    enter('c0', 'carol');
    const order: string[] = [];
    tickets.get('x')!.leave();
    for (let turn = 0; turn < 8; turn++) {
      const now = readers.find((r) => !r.held() && r.name !== 'x' && !order.includes(r.name))!;
      order.push(now.name);
      tickets.get(now.name)!.leave();
      // alice and carol ask again the moment theirs is done
      const group = { a: 'alice', c: 'carol' }[now.name[0] as 'a' | 'c'];
      if (group !== undefined) enter(`${now.name[0]}${Number(now.name.slice(1)) + 1}`, group);
    }
    expect(order.filter((name) => name.startsWith('b'))).toEqual(['b0', 'b1', 'b2']);
    expect(order.slice(0, 6)).toEqual(['b0', 'a0', 'c0', 'b1', 'a1', 'c1']);
  });

  it('refuses bounds that would hold every line for ever', () => {
    expect(() => new LargeLineGate({ atOnce: 0 })).toThrow(/atOnce a positive integer/);
    expect(() => new LargeLineGate({ lineBytes: 0 })).toThrow(/lineBytes and slowMs must be positive/);
    expect(() => new LargeLineGate({ slowMs: 0 })).toThrow(/lineBytes and slowMs must be positive/);
    expect(() => new LargeLineGate({ slowBytes: -1 })).toThrow(/slowBytes and parkedBytes not negative/);
    expect(() => new LargeLineGate({ parkedBytes: -1 })).toThrow(/slowBytes and parkedBytes not negative/);
  });

  describe('a line that reads slowly while another agent\'s waits', () => {
    const fast = SLOW_LINE_BYTES;
    const slow = SLOW_LINE_BYTES - 1;

    it('gives its place up within two looks and waits again, first of its agent\'s, reading on when a place is free', () => {
      const gate = new LargeLineGate({ atOnce: 1 });
      const [a1, a2, b] = [reader('a1'), reader('a2'), reader('b')];
      const ta1 = gate.enter(a1, 'alice'); // its server stops mid-line
      gate.enter(a2, 'alice');
      const tb = gate.enter(b, 'bob');
      vi.advanceTimersByTime(SLOW_LINE_MS); // the first look sees it reading
      ta1.read(slow);
      expect([a1.held(), b.held()]).toEqual([false, true]);
      vi.advanceTimersByTime(SLOW_LINE_MS);
      expect([a1.held(), a2.held(), b.held()]).toEqual([true, true, false]);
      expect(a1.stalledWith).toEqual([[1024 * 1024 + slow, true]]); // told, with what its line holds: the threshold and what it read since
      expect([gate.readingCount, gate.waitingCount]).toEqual([1, 2]);
      tb.leave();
      expect([a1.held(), a2.held()]).toEqual([false, true]); // alice's stopped line before her next
      ta1.leave();
      expect(a2.held()).toBe(false);
    });

    it('keeps its place while it reads at least the slow mark each look, and when no other agent\'s line waits', () => {
      const gate = new LargeLineGate({ atOnce: 1 });
      const [a, b] = [reader('a'), reader('b')];
      const ta = gate.enter(a, 'alice');
      for (let look = 0; look < 5; look++) {
        vi.advanceTimersByTime(SLOW_LINE_MS);
        expect(a.held()).toBe(false);
      }
      expect(vi.getTimerCount()).toBe(0); // nothing waits: nothing looks
      const tb = gate.enter(b, 'bob');
      expect(vi.getTimerCount()).toBe(1);
      for (let look = 0; look < 5; look++) {
        ta.read(fast);
        vi.advanceTimersByTime(SLOW_LINE_MS);
        expect([a.held(), b.held()]).toEqual([false, true]);
      }
      tb.leave();
      expect(vi.getTimerCount()).toBe(0);
    });

    it('keeps its place while the agents waiting may not read (the link is full for them)', () => {
      let roomy = false;
      const gate = new LargeLineGate({ atOnce: 1, roomy: (group) => roomy || group === 'alice' });
      const [a, b] = [reader('a'), reader('b')];
      gate.enter(a, 'alice');
      gate.enter(b, 'bob');
      vi.advanceTimersByTime(3 * SLOW_LINE_MS);
      expect([a.held(), b.held()]).toEqual([false, true]);
      roomy = true;
      vi.advanceTimersByTime(SLOW_LINE_MS);
      expect([a.held(), b.held()]).toEqual([true, false]);
    });

    it('lets two agents\' stalled lines go to two others, and back when those are done, in turns', () => {
      const gate = new LargeLineGate({ atOnce: 2 });
      const [a, b, c, d] = [reader('a'), reader('b'), reader('c'), reader('d')];
      gate.enter(a, 'alice');
      gate.enter(b, 'bob');
      const tc = gate.enter(c, 'carol');
      const td = gate.enter(d, 'dave');
      vi.advanceTimersByTime(2 * SLOW_LINE_MS);
      expect([a.held(), b.held(), c.held(), d.held()]).toEqual([true, true, false, false]);
      for (let look = 0; look < 2; look++) {
        tc.read(fast); // carol's reads on; dave's stalls in its turn
        vi.advanceTimersByTime(SLOW_LINE_MS);
      }
      expect([a.held(), b.held(), c.held(), d.held()]).toEqual([false, true, false, true]); // alice's turn was longest ago
      tc.leave();
      td.leave();
      expect([a.held(), b.held()]).toEqual([false, false]);
    });

    it('goes behind the agents waiting: one served before it takes the place, not the slow line again', () => {
      const gate = new LargeLineGate({ atOnce: 2 });
      const [a, c1, b, c2] = [reader('a'), reader('c1'), reader('b'), reader('c2')];
      gate.enter(a, 'alice'); // served first, and stalls
      const tc1 = gate.enter(c1, 'carol');
      const tb = gate.enter(b, 'bob');
      tc1.leave(); // bob's turn
      gate.enter(c2, 'carol'); // carol was served after alice
      for (let look = 0; look < 2; look++) {
        tb.read(fast);
        vi.advanceTimersByTime(SLOW_LINE_MS);
      }
      expect([a.held(), b.held(), c2.held()]).toEqual([true, false, false]);
    });

    it('gives up no more places than there are lines waiting to take them, the slowest first', () => {
      const gate = new LargeLineGate({ atOnce: 2 });
      const [a, b, c] = [reader('a'), reader('b'), reader('c')];
      const ta = gate.enter(a, 'alice');
      gate.enter(b, 'bob'); // reads nothing at all
      gate.enter(c, 'carol');
      for (let look = 0; look < 2; look++) {
        ta.read(slow); // slow, but reads
        vi.advanceTimersByTime(SLOW_LINE_MS);
      }
      expect([a.held(), b.held(), c.held()]).toEqual([false, true, false]);
    });

    it('keeps its place while the link holds it (it reads nothing for that), and is judged only over a whole period after the link lets it go', () => {
      const gate = new LargeLineGate({ atOnce: 1 });
      const [a, b] = [reader('a'), reader('b')];
      gate.enter(a, 'alice');
      gate.enter(b, 'bob');
      vi.advanceTimersByTime(SLOW_LINE_MS); // a look sees it reading, free
      a.linkHolds = true; // then the link holds it
      vi.advanceTimersByTime(3 * SLOW_LINE_MS);
      expect([a.held(), b.held()]).toEqual([false, true]);
      expect(a.stalledWith).toEqual([]); // never found slow, never parked meanwhile
      a.linkHolds = false; // let go just before a look: it had no time to read
      vi.advanceTimersByTime(SLOW_LINE_MS);
      expect([a.held(), b.held()]).toEqual([false, true]);
      vi.advanceTimersByTime(SLOW_LINE_MS); // a whole period free, and nothing read
      expect([a.held(), b.held()]).toEqual([true, false]);
    });

    it('keeps a slow line\'s place once the lines that gave theirs up hold the parked bytes, and counts again as they go', () => {
      const gate = new LargeLineGate({ atOnce: 1, lineBytes: 100, parkedBytes: 240 });
      const [a, b, c] = [reader('a'), reader('b'), reader('c')];
      const ta = gate.enter(a, 'alice');
      gate.enter(b, 'bob');
      ta.read(50); // alice's line holds 150: within the bound
      vi.advanceTimersByTime(2 * SLOW_LINE_MS);
      expect([a.held(), b.held()]).toEqual([true, false]); // bob's reads, and stalls
      gate.enter(c, 'carol');
      vi.advanceTimersByTime(3 * SLOW_LINE_MS); // bob's 100 more would pass 240
      expect([b.held(), c.held()]).toEqual([false, true]);
      expect(b.stalledWith.at(-1)).toEqual([100, false]); // told it kept its place
      ta.leave(); // alice's server closed: its 150 go
      vi.advanceTimersByTime(2 * SLOW_LINE_MS);
      expect([b.held(), c.held()]).toEqual([true, false]);
    });

    it('takes a line out of the parked bytes once it reads again', () => {
      const gate = new LargeLineGate({ atOnce: 1, lineBytes: 100, parkedBytes: 240 });
      const [a, b1, b2] = [reader('a'), reader('b1'), reader('b2')];
      const ta = gate.enter(a, 'alice');
      const tb1 = gate.enter(b1, 'bob');
      ta.read(50);
      vi.advanceTimersByTime(2 * SLOW_LINE_MS);
      expect([a.held(), b1.held()]).toEqual([true, false]); // alice's 150 parked
      tb1.leave();
      expect(a.held()).toBe(false); // reads again: its 150 are no longer parked
      ta.read(50);
      gate.enter(b2, 'bob');
      vi.advanceTimersByTime(2 * SLOW_LINE_MS); // stalls again, holding 200: within 240 only if the 150 went
      expect([a.held(), b2.held()]).toEqual([true, false]);
    });

    it('judges nothing at a look that comes late: the sidecar itself could read no line meanwhile', () => {
      const gate = new LargeLineGate({ atOnce: 1 });
      const [a, b] = [reader('a'), reader('b')];
      gate.enter(a, 'alice');
      gate.enter(b, 'bob');
      vi.advanceTimersByTime(SLOW_LINE_MS); // the first look sees alice's line reading
      vi.setSystemTime(Date.now() + 5 * SLOW_LINE_MS); // the sidecar was stopped
      vi.advanceTimersByTime(SLOW_LINE_MS);
      expect([a.held(), b.held()]).toEqual([false, true]);
      vi.advanceTimersByTime(SLOW_LINE_MS); // a look on time: alice's line read nothing since the late one
      expect([a.held(), b.held()]).toEqual([true, false]);
    });

    it('lets go of a line held for slowness whose reader closed', () => {
      const gate = new LargeLineGate({ atOnce: 1 });
      const [a, b] = [reader('a'), reader('b')];
      const ta = gate.enter(a, 'alice');
      gate.enter(b, 'bob');
      vi.advanceTimersByTime(2 * SLOW_LINE_MS);
      expect(a.held()).toBe(true);
      ta.leave();
      expect([a.held(), gate.waitingCount, gate.readingCount]).toEqual([false, 0, 1]);
    });
  });
});
