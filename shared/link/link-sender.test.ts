import { describe, expect, it } from 'vitest';
import { LinkFlow, type FlowAccount } from './link-flow.ts';
import { LinkSender, type SenderAccount } from './link-sender.ts';

/** A channel's account that records its holds; `group`, the agent it serves. */
function account(id: number, group?: string): SenderAccount & { holds: boolean[] } {
  const a: SenderAccount & { holds: boolean[] } = {
    id,
    ...(group !== undefined ? { group } : {}),
    queued: 0,
    over: false,
    holds: [],
    hold(on: boolean) {
      a.holds.push(on);
    },
  };
  return a;
}

const LIMITS = { channelBytes: 1000, channelResumeBytes: 300, linkBytes: 5000, linkResumeBytes: 2000 };

/**
 * A sender over a socket the test drains: `written` lists every text the socket was given, in
 * order; `drain(n)` reports the oldest n written out.
 */
function sender(options: { socketBytes?: number; partChars?: number; partedFrames?: number; largeFrameChars?: number; parts?: boolean } = {}, open: FlowAccount[] = []) {
  const written: string[] = [];
  const flow = new LinkFlow(LIMITS, () => open);
  const s = new LinkSender(flow, {
    write: (text) => written.push(text),
    part: options.parts === false ? null : (channel, last) => `part ${channel}${last ? ' last' : ''}: `,
    socketBytes: options.socketBytes ?? 10,
    partChars: options.partChars ?? 100,
    partedFrames: options.partedFrames ?? 4,
    largeFrameChars: options.largeFrameChars ?? 1000,
  });
  let reported = 0;
  return {
    s,
    flow,
    written,
    drain(count = written.length - reported) {
      for (let i = 0; i < count; i++) {
        reported++;
        s.written();
      }
    },
    /** Reports every write, including those the reports themselves cause, until nothing waits. */
    drainAll() {
      while (reported < written.length) {
        reported++;
        s.written();
      }
    },
  };
}

describe('LinkSender', () => {
  it('hands a frame to the socket at once while it has room and the channel nothing waiting', () => {
    const t = sender({ socketBytes: 10 });
    const a = account(1);
    t.s.send(a, 'a1');
    t.s.send(a, 'a2');
    expect(t.written).toEqual(['a1', 'a2']);
    expect(t.flow.inSocket).toBe(4);
    expect(t.s.waitingFrames).toBe(0);
  });

  it('keeps frames past the socket\'s room in a queue per channel, and gives the channels turns as the socket writes', () => {
    const t = sender({ socketBytes: 10 });
    const [a, b] = [account(1), account(2)];
    t.s.send(a, 'alice-1-xxxx'); // 12: the socket is past its room
    t.s.send(a, 'alice-2');
    t.s.send(a, 'alice-3');
    t.s.send(a, 'alice-4');
    t.s.send(b, 'bob-1');
    t.s.send(b, 'bob-2');
    expect(t.written).toEqual(['alice-1-xxxx']);
    expect(t.s.waitingFrames).toBe(5);
    t.drainAll();
    // Bob's first frame goes second, not behind every frame Alice queued before it.
    expect(t.written).toEqual(['alice-1-xxxx', 'alice-2', 'bob-1', 'alice-3', 'bob-2', 'alice-4']);
    expect([t.flow.queued, a.queued, b.queued]).toEqual([0, 0, 0]);
  });

  it('gives turns by agent, then by channel within an agent: an agent\'s three sessions take one turn between them against another agent\'s one', () => {
    const t = sender({ socketBytes: 10 });
    const [a1, a2, a3, b] = [account(1, 'alice'), account(2, 'alice'), account(3, 'alice'), account(4, 'bob')];
    t.s.send(a1, 'a1-first-xxx'); // 12: the socket is past its room
    t.s.send(a1, 'a1-2');
    t.s.send(a2, 'a2-1');
    t.s.send(a3, 'a3-1');
    t.s.send(a2, 'a2-2');
    t.s.send(a3, 'a3-2');
    for (const text of ['b-1', 'b-2', 'b-3']) t.s.send(b, text);
    t.drainAll();
    // By channel, bob's first frame would have gone fourth, behind one frame of each of alice's sessions.
    expect(t.written).toEqual(['a1-first-xxx', 'a1-2', 'b-1', 'a2-1', 'b-2', 'a3-1', 'b-3', 'a2-2', 'a3-2']);
    expect(t.s.waitingFrames).toBe(0);
  });

  it('counts what each agent has waiting, a frame in pieces whole until its last', () => {
    const t = sender({ socketBytes: 1, partChars: 4 });
    const [a1, a2, b] = [account(1, 'alice'), account(2, 'alice'), account(3, 'bob')];
    t.s.send(b, 'b1'); // to the socket at once: not waiting
    t.s.send(a1, 'AAAABBBB');
    t.s.send(a2, 'a2');
    t.s.send(b, 'bob-2');
    expect([t.s.waitingOf('alice'), t.s.waitingOf('bob'), t.s.waitingOf('carol')]).toEqual([10, 5, 0]);
    t.drain(1); // alice's turn: the first piece of her large frame
    expect(t.s.waitingOf('alice')).toBe(10);
    t.drainAll();
    expect([t.s.waitingOf('alice'), t.s.waitingOf('bob')]).toEqual([0, 0]);
  });

  it('keeps one channel\'s order: a frame waits behind that channel\'s queue even when the socket has room', () => {
    const t = sender({ socketBytes: 10 });
    const a = account(1);
    t.s.send(a, 'alice-1-xxxx');
    t.s.send(a, 'alice-2');
    t.drain(1); // the socket is empty, but alice-2 waited: it is sent by the report, not overtaken
    t.s.send(a, 'alice-3');
    t.drainAll();
    expect(t.written).toEqual(['alice-1-xxxx', 'alice-2', 'alice-3']);
  });

  it('sends a large frame in pieces, and another channel\'s frames between them', () => {
    const t = sender({ socketBytes: 1, partChars: 4 });
    const [a, b] = [account(1), account(2)];
    t.s.send(a, 'AAAABBBBCC');
    t.s.send(b, 'b1');
    t.s.send(b, 'b2');
    t.drainAll();
    // In turns: Alice's channel was first in line, then Bob's joined behind it.
    expect(t.written).toEqual(['part 1: AAAA', 'part 1: BBBB', 'b1', 'part 1 last: CC', 'b2']);
    expect([t.flow.queued, a.queued]).toEqual([0, 0]);
  });

  it('sends a large frame in pieces even when nothing waits, so that what comes after it need not wait for all of it', () => {
    const t = sender({ socketBytes: 100, partChars: 4 });
    const [a, b] = [account(1), account(2)];
    t.s.send(a, 'AAAABBBB');
    expect(t.written).toEqual(['part 1: AAAA', 'part 1 last: BBBB']);
    t.s.send(b, 'b1');
    expect(t.written.at(-1)).toBe('b1');
  });

  it('sends a large frame whole, in its turn, to a peer that reads no pieces', () => {
    const t = sender({ socketBytes: 1, partChars: 4, parts: false });
    const [a, b] = [account(1), account(2)];
    t.s.send(b, 'first');
    t.s.send(b, 'b1');
    t.s.send(a, 'AAAABBBB');
    t.s.send(b, 'b2');
    t.drainAll();
    expect(t.written).toEqual(['first', 'b1', 'AAAABBBB', 'b2']);
  });

  it('starts no more parted frames than it may hold at once, and lets small frames by meanwhile', () => {
    const t = sender({ socketBytes: 1, partChars: 2, partedFrames: 1 });
    const [a, b, c] = [account(1), account(2), account(3)];
    t.s.send(c, 'c0');
    t.s.send(a, 'AAAA');
    t.s.send(b, 'BBBB');
    t.s.send(c, 'c1');
    t.drainAll();
    // B's frame starts only once A's last piece went; C's small frame is not held behind either.
    expect(t.written).toEqual(['c0', 'part 1: AA', 'c1', 'part 1 last: AA', 'part 2: BB', 'part 2 last: BB']);
  });

  it('sends control frames at once, ahead of every queue', () => {
    const t = sender({ socketBytes: 1 });
    const a = account(1);
    t.s.send(a, 'a1');
    t.s.send(a, 'a2');
    t.s.send(null, 'keepalive-reply');
    expect(t.written).toEqual(['a1', 'keepalive-reply']);
    t.drainAll();
    expect(t.written).toEqual(['a1', 'keepalive-reply', 'a2']);
  });

  it('counts what waits against the channel\'s budget: a channel past it holds what feeds it, and lets go once written out', () => {
    const t = sender({ socketBytes: 1, partChars: 1000 });
    const a = account(1);
    t.s.send(a, 'x'.repeat(600));
    t.s.send(a, 'y'.repeat(600)); // waits, and counts: 1200 > 1000
    expect(a.holds).toEqual([true]);
    expect(a.queued).toBe(1200);
    t.drainAll();
    expect(a.holds).toEqual([true, false]);
    expect(t.written.map((w) => w[0])).toEqual(['x', 'y']);
  });

  it('hands the socket everything waiting on flush, past its room: the frames begun first, then each frame\'s pieces together, so that the other end holds no more in part', () => {
    const t = sender({ socketBytes: 2, partChars: 2, partedFrames: 1 });
    const [a, b, c, x] = [account(1), account(2), account(3), account(4)];
    t.s.send(b, 'bb'); // the socket is full
    t.s.send(c, 'CCCC');
    t.s.send(x, 'x1');
    t.drain(1); // c's first piece goes, and c's turn comes after x's
    t.s.send(a, 'AAA');
    t.s.send(b, 'BBB');
    t.s.flush();
    expect(t.written).toEqual(['bb', 'part 3: CC', 'part 3 last: CC', 'x1', 'part 1: AA', 'part 1 last: A', 'part 2: BB', 'part 2 last: B']);
    expect(t.s.waitingFrames).toBe(0);
  });

  it('keeps one large frame at a time in the middle of its pieces, and starts smaller parted frames beside it', () => {
    const t = sender({ socketBytes: 1, partChars: 2, partedFrames: 8, largeFrameChars: 4 });
    const [a, b, c] = [account(1), account(2), account(3)];
    t.s.send(a, 'LLLLLL');
    t.s.send(b, 'llllll');
    t.s.send(c, 'mmm'); // parted, not large: it need not wait for either
    t.drainAll();
    const at = (piece: string) => t.written.indexOf(piece);
    expect(at('part 3: mm')).toBeLessThan(at('part 1 last: LL'));
    expect(at('part 2: ll')).toBeGreaterThan(at('part 1 last: LL')); // the second large frame starts once the first is done
    expect(t.written.filter((w) => w.startsWith('part 2')).join('')).toBe('part 2: llpart 2: llpart 2 last: ll');
  });

  it('drops what waits on reset and clears every account it counted on, held ones let go', () => {
    const open: FlowAccount[] = [];
    const t = sender({ socketBytes: 1, partChars: 1000 }, open);
    const a = account(1);
    open.push(a);
    t.s.send(a, 'x'.repeat(600));
    t.s.send(a, 'y'.repeat(600));
    expect(a.holds).toEqual([true]);
    t.s.reset();
    expect([a.queued, a.over, t.flow.queued, t.flow.inSocket, t.s.waitingFrames]).toEqual([0, false, 0, 0, 0]);
    expect(a.holds).toEqual([true, false]);
    t.drainAll(); // reports of frames from before the reset change nothing
    expect(t.written).toHaveLength(1);
  });

  it('stops handing frames to a socket that throws, and keeps them waiting, each channel with its turn', () => {
    const written: string[] = [];
    let closed = false;
    const flow = new LinkFlow(LIMITS, () => []);
    const s = new LinkSender(flow, {
      write: (text) => {
        if (closed) throw new Error('closed');
        written.push(text);
      },
      part: null,
      socketBytes: 1,
    });
    const a = account(1);
    s.send(a, 'a1');
    s.send(a, 'a2');
    closed = true;
    expect(() => s.written()).not.toThrow();
    expect(written).toEqual(['a1']);
    expect(() => s.send(null, 'link-close')).toThrow('closed');
    closed = false; // whatever comes of it, a2 is still there, and goes
    s.flush();
    expect(written).toEqual(['a1', 'a2']);
  });
});

describe('LinkSender pieces', () => {
  it('never cuts between the two halves of a character outside the BMP', () => {
    for (const lead of ['', 'x']) {
      const t = sender({ socketBytes: 1_000_000, partChars: 8 });
      const text = `${lead}${'🦊'.repeat(20)}`;
      t.s.send(account(1), text);
      const pieces = t.written.map((w) => w.slice(w.indexOf(': ') + 2));
      expect(pieces.join('')).toBe(text);
      for (const piece of pieces) expect(piece).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    }
  });
});

describe('LinkSender window', () => {
  /** A sender whose peer acknowledges, with a window of `windowBytes`; the socket writes at once. */
  function paced(windowBytes: number) {
    const written: string[] = [];
    const flow = new LinkFlow(LIMITS, () => []);
    let s!: LinkSender;
    s = new LinkSender(flow, {
      write: (text) => {
        written.push(text);
        queueMicrotask(() => s.written());
      },
      part: (channel, last) => `part ${channel}${last ? ' last' : ''}: `,
      socketBytes: 1_000_000,
      partChars: 10,
      window: { minBytes: windowBytes },
    });
    return { s, written };
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

  it('keeps at most a window unacknowledged, the rest in turns, and lets as much go as each ack frees', async () => {
    const t = paced(10);
    const [a, b] = [account(1), account(2)];
    t.s.send(a, 'a1-xxxx'); // 7
    t.s.send(a, 'a2-xxxx'); // 14: past the window
    t.s.send(a, 'a3-xxxx');
    t.s.send(b, 'b1');
    await settle();
    expect(t.written).toEqual(['a1-xxxx', 'a2-xxxx']);
    expect(t.s.inFlight).toBe(14);
    t.s.acked(1); // a1 read: 7 on the way, room for one more
    await settle();
    expect(t.written).toEqual(['a1-xxxx', 'a2-xxxx', 'a3-xxxx']);
    t.s.acked(2);
    await settle();
    expect(t.written.at(-1)).toBe('b1');
    t.s.acked(1);
    expect(t.s.inFlight).toBe(0);
  });

  it('sends control frames past a full window, and counts them in it', async () => {
    const t = paced(5);
    const a = account(1);
    t.s.send(a, 'a1-xxxx');
    t.s.send(a, 'a2');
    t.s.send(null, 'ping');
    await settle();
    expect(t.written).toEqual(['a1-xxxx', 'ping']);
    expect(t.s.inFlight).toBe(11);
    t.s.acked(2);
    await settle();
    expect(t.written.at(-1)).toBe('a2');
  });

  it('sends the link\'s own frames outside the window: at once, and never waiting for an ack', async () => {
    const t = paced(5);
    t.s.send(account(1), 'a1-xxxx');
    t.s.sendUncounted('keepalive');
    await settle();
    expect(t.written).toEqual(['a1-xxxx', 'keepalive']);
    expect(t.s.inFlight).toBe(7);
    t.s.acked(1);
    expect(t.s.inFlight).toBe(0);
  });

  it('says it stalled when nothing was acknowledged for 30 s while frames are on their way, and restarts its window', () => {
    let now = 1_000;
    const written: string[] = [];
    const s = new LinkSender(new LinkFlow(LIMITS, () => []), { write: (text) => written.push(text), part: null, socketBytes: 1_000_000, window: { minBytes: 5 }, acksAreWrites: true, now: () => now });
    const a = account(1);
    s.send(a, 'a1-xxxx');
    s.send(a, 'a2');
    now += 29_000;
    expect(s.stalled()).toBe(false);
    now += 2_000;
    expect(s.stalled()).toBe(true);
    s.restartWindow();
    expect([s.stalled(), s.inFlight, written]).toEqual([false, 2, ['a1-xxxx', 'a2']]);
  });

  it('takes an ack for more frames than it sent as an ack for all of them', () => {
    const t = paced(100);
    t.s.send(account(1), 'a1');
    t.s.acked(5);
    expect(t.s.inFlight).toBe(0);
    t.s.send(account(1), 'a2');
    expect(t.s.inFlight).toBe(2);
  });
});
