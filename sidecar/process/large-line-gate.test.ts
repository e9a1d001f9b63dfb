import { describe, expect, it } from 'vitest';
import { LargeLineGate, type GatedReader } from './large-line-gate.ts';

/** A reader that says whether it is held (as a transport's stdout is paused). */
function reader(name: string): GatedReader & { name: string; held: () => boolean } {
  let holds = 0;
  return {
    name,
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
  it('reads as many large lines at once as it may, and holds the rest until one is whole', () => {
    const gate = new LargeLineGate({ atOnce: 2 });
    const [a, b, c] = [reader('a'), reader('b'), reader('c')];
    const ta = gate.enter(a, 'alice');
    const tb = gate.enter(b, 'alice');
    const tc = gate.enter(c, 'alice');
    expect([a.held(), b.held(), c.held()]).toEqual([false, false, true]);
    expect([gate.readingCount, gate.waitingCount]).toEqual([2, 1]);
    ta.leave();
    expect(c.held()).toBe(false);
    expect([gate.readingCount, gate.waitingCount]).toEqual([2, 0]);
    tb.leave();
    tc.leave();
    expect(gate.readingCount).toBe(0);
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

  it('refuses bounds that would hold every line for ever', () => {
    expect(() => new LargeLineGate({ atOnce: 0 })).toThrow(/atOnce a positive integer/);
    expect(() => new LargeLineGate({ lineBytes: 0 })).toThrow(/lineBytes must be positive/);
  });
});
