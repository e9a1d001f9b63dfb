import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitFor } from '../../test/support/processes.ts';
import { LinkLiveness } from './link-liveness.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('LinkLiveness', () => {
  it('keeps to a clock of its own when the wall clock steps: back, it stops no keepalive; forward, it ends no link (review s20)', async () => {
    // Only the wall clock is the test's; the timers and the monotonic clock run as they do.
    vi.useFakeTimers({ toFake: ['Date'] });
    let pings = 0;
    let dead: number | null = null;
    // The peer answers every other keepalive: one tick in two hears nothing.
    const liveness: LinkLiveness = new LinkLiveness({ keepaliveMs: 10, deadAfterMs: 200, ping: () => (++pings % 2 === 0 ? liveness.heard() : undefined), dead: (silentMs) => (dead = silentMs) });
    try {
      vi.setSystemTime(Date.now() - 3_600_000);
      await waitFor(() => (pings >= 6 ? true : undefined), 'keepalives after the clock went back an hour');
      vi.setSystemTime(Date.now() + 7_200_000);
      const before = pings;
      await waitFor(() => (pings >= before + 6 ? true : undefined), 'keepalives after the clock went forward two hours');
      expect(dead).toBeNull();
    } finally {
      liveness.stop();
    }
  });

  it('gives a peer silent across a sleep three ticks to be heard, not a whole deadline of waking time (review s20)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    let pings = 0;
    let dead: number | null = null;
    const liveness = new LinkLiveness({ keepaliveMs: 10, deadAfterMs: 2_000, ping: () => void pings++, dead: (silentMs) => (dead = silentMs) });
    try {
      await waitFor(() => (pings >= 3 ? true : undefined), 'keepalives before the sleep');
      // The machine slept an hour: the wall clock moved, the monotonic one did not.
      vi.setSystemTime(Date.now() + 3_600_000);
      const before = pings;
      await waitFor(() => (dead !== null ? true : undefined), 'the silent peer found dead');
      // A keepalive at once, then at most a few ticks', where 2 s of waking time would have been ~200.
      expect(pings - before).toBeLessThanOrEqual(5);
    } finally {
      liveness.stop();
    }
  });
});
