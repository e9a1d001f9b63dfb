import { describe, expect, it } from 'vitest';
import { holdReadingOf, LinkFlow, type FlowAccount } from './link-flow.ts';

/** A channel's account whose holds are recorded: true for a hold, false for a release. */
function account(): FlowAccount & { holds: boolean[] } {
  const holds: boolean[] = [];
  return { queued: 0, over: false, holds, hold: (on) => void holds.push(on) };
}

const LIMITS = { channelBytes: 100, channelResumeBytes: 40, linkBytes: 250, linkResumeBytes: 120, quietBytes: 50 };

describe('LinkFlow', () => {
  it('holds a channel past its budget and lets it go at the resume mark, as its frames are written out in order', () => {
    const a = account();
    const flow = new LinkFlow(LIMITS, () => [a]);
    flow.sent(a, 60);
    flow.sent(a, 40);
    expect(a.holds).toEqual([]); // at the budget, not past it
    flow.sent(a, 30);
    expect(a.holds).toEqual([true]);
    expect(flow.heldCount).toBe(1);
    flow.sent(a, 30); // held already: no second hold
    flow.written(); // 60 out: 100 left
    flow.written(); // 40 out: 60 left, still above the resume mark
    expect(a.holds).toEqual([true]);
    flow.written(); // 30 out: 30 left
    expect(a.holds).toEqual([true, false]);
    expect(a.queued).toBe(30);
    expect(flow.queued).toBe(30);
    expect(flow.peak).toBe(160);
  });

  it('lets a frame larger than the budget go, and holds after it', () => {
    const a = account();
    const flow = new LinkFlow(LIMITS, () => [a]);
    flow.sent(a, 200);
    expect(a.holds).toEqual([true]);
    flow.written();
    expect(a.holds).toEqual([true, false]);
  });

  it('counts control frames against the link only', () => {
    const a = account();
    const flow = new LinkFlow(LIMITS, () => [a]);
    flow.sent(null, 90);
    flow.sent(a, 90);
    expect(a.holds).toEqual([]);
    expect(flow.queued).toBe(180);
    flow.written();
    expect(a.queued).toBe(90);
    expect(flow.queued).toBe(90);
  });

  it('holds the busy channels past the link budget, a quiet one only once it grows, and lets go of those not over their own at the link resume mark', () => {
    const a = account();
    const b = account();
    const quiet = account();
    const late = account();
    const open = [a, b, quiet];
    const events: string[] = [];
    const flow = new LinkFlow(LIMITS, () => open, { held: (q) => events.push(`held ${q}`), released: (q, peak) => events.push(`released ${q} ${peak}`) });
    flow.sent(a, 90);
    flow.sent(b, 90);
    flow.sent(quiet, 10);
    flow.sent(a, 80); // a: 170, over its own; link 270: over
    expect(a.holds).toEqual([true]);
    expect(b.holds).toEqual([true]); // 90, more than a quiet channel's 50
    expect(quiet.holds).toEqual([]); // 10: its answers go on while the others fill the link
    expect(events).toEqual(['held 270']);
    flow.opened(late);
    expect(late.holds).toEqual([]);
    flow.sent(quiet, 60); // quiet: 70, past 50 while the link is over
    expect(quiet.holds).toEqual([true]);
    flow.written(); // a's 90 out: link 240, a 80
    flow.written(); // b's 90 out: link 150
    expect(b.holds).toEqual([true]);
    flow.written(); // quiet's 10 out: link 140
    flow.written(); // a's 80 out: link 60, at or below the link's resume mark
    expect(events).toEqual(['held 270', 'released 60 330']);
    expect(b.holds).toEqual([true, false]);
    expect(a.holds).toEqual([true, false]);
    expect(quiet.holds).toEqual([true, false]); // held by the link only, never over its own budget
    expect(flow.heldCount).toBe(0);
  });

  it('holds every channel, quiet and new ones too, once the channels not held have more than the link budget waiting', () => {
    const busy = account();
    const quiet = Array.from({ length: 6 }, () => account());
    const late = account();
    const flow = new LinkFlow(LIMITS, () => [busy, ...quiet]);
    flow.sent(busy, 240);
    flow.sent(quiet[0]!, 45); // 285: over; the busy one holds, the quiet one goes on
    expect([busy.holds, quiet[0]!.holds]).toEqual([[true], []]);
    for (const q of quiet.slice(1, 5)) flow.sent(q, 45); // the quiet ones: 225 between them
    expect(quiet.map((q) => q.holds.length)).toEqual([0, 0, 0, 0, 0, 0]);
    flow.sent(quiet[5]!, 45); // 270, past the link's budget: every channel holds
    expect(quiet.map((q) => q.holds)).toEqual(quiet.map(() => [true]));
    flow.opened(late);
    expect(late.holds).toEqual([true]);
    for (let i = 0; i < 6; i++) flow.written(); // the busy one's 240 and five quiet frames out: 45 left
    expect([busy.holds, late.holds, quiet[5]!.holds]).toEqual([[true, false], [true, false], [true, false]]);
    expect(flow.heldCount).toBe(0);
  });

  it('keeps a closed channel held until its frames are out, and ends every hold with the link', () => {
    const a = account();
    const b = account();
    const open: FlowAccount[] = [a, b];
    const flow = new LinkFlow(LIMITS, () => open);
    flow.sent(a, 150);
    open.splice(0, 1); // a closes, its frame still queued
    flow.sent(b, 150); // the link is full: b is held too
    expect(a.holds).toEqual([true]);
    expect(b.holds).toEqual([true]);
    flow.reset();
    expect(a.holds).toEqual([true, false]);
    expect(b.holds).toEqual([true, false]);
    expect(a.queued).toBe(0);
    expect(flow.queued).toBe(0);
    flow.written(); // a report of a frame of before the reset
    expect(flow.queued).toBe(0);
    expect(a.queued).toBe(0);
  });

  it('keeps many frames in order as its ring grows', () => {
    const a = account();
    const b = account();
    const flow = new LinkFlow({ channelBytes: 1e9, channelResumeBytes: 0, linkBytes: 1e9, linkResumeBytes: 0 }, () => []);
    for (let i = 0; i < 300; i++) flow.sent(i % 3 === 0 ? a : b, i);
    for (let i = 0; i < 150; i++) flow.written();
    for (let i = 300; i < 500; i++) flow.sent(i % 3 === 0 ? a : b, i); // wraps around, then grows
    let expectedA = 0;
    let expectedB = 0;
    for (let i = 150; i < 500; i++) (i % 3 === 0 ? (expectedA += i) : (expectedB += i));
    expect(a.queued).toBe(expectedA);
    expect(b.queued).toBe(expectedB);
    for (let i = 150; i < 500; i++) flow.written();
    expect([a.queued, b.queued, flow.queued]).toEqual([0, 0, 0]);
  });
});

describe('holdReadingOf', () => {
  it('holds what can be held, and gives a release that does nothing for what cannot', () => {
    let holds = 0;
    const release = holdReadingOf({ holdReading: () => (holds++, () => holds--) });
    expect(holds).toBe(1);
    release();
    expect(holds).toBe(0);
    expect(() => holdReadingOf({})()).not.toThrow();
  });
});
