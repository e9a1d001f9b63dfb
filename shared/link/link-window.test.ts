import { describe, expect, it } from 'vitest';
import { LinkWindow, RATE_SAMPLES, WINDOW_GAIN, WINDOW_IDLE_MS, WINDOW_MAX_BYTES, WINDOW_MIN_BYTES } from './link-window.ts';

const CHUNK = 64 * 1024;

interface Path {
  /** Round trip without any queue (ms). */
  rttMs: number;
  /** The bottleneck's rate (bytes per ms). */
  bytesPerMs: number;
}

/**
 * A sender that always has more to send, over a path with a bottleneck queue: each ms, the acks
 * due arrive, then chunks go while the window has room. Each chunk leaves the bottleneck after
 * those before it, and its ack comes a round trip later. Returns the window after each ms and
 * the bytes acknowledged in the last second.
 */
function run(window: LinkWindow, ms: number, path: (t: number) => Path, from = 0) {
  const inFlight: { bytes: number; ackAt: number }[] = [];
  let unacked = 0;
  let departs = from;
  const sizes: number[] = [];
  let lastSecond = 0;
  for (let t = from; t < from + ms; t++) {
    while (inFlight.length > 0 && inFlight[0]!.ackAt <= t) {
      const { bytes } = inFlight.shift()!;
      unacked -= bytes;
      window.acked(bytes, t);
      if (t >= from + ms - 1000) lastSecond += bytes;
    }
    const { rttMs, bytesPerMs } = path(t);
    while (unacked < window.size) {
      unacked += CHUNK;
      window.wrote(unacked, () => t);
      departs = Math.max(t, departs) + CHUNK / bytesPerMs;
      inFlight.push({ bytes: CHUNK, ackAt: Math.ceil(departs + rttMs) });
    }
    sizes.push(window.size);
  }
  return { sizes, lastSecond, end: from + ms };
}

describe('LinkWindow', () => {
  it('grows over a long round trip until the path is full, up to its most', () => {
    const window = new LinkWindow();
    window.rtt(100);
    const { sizes, lastSecond } = run(window, 3000, () => ({ rttMs: 100, bytesPerMs: 1e6 }));
    expect(sizes[0]).toBe(WINDOW_MIN_BYTES);
    expect(sizes.at(-1)).toBe(WINDOW_MAX_BYTES);
    // A fixed least window carries 10.5 MB a second over this path; this one carries its most per round trip.
    expect(lastSecond).toBeGreaterThan(0.9 * (WINDOW_MAX_BYTES * 1000) / 100);
  });

  it('settles near its gain times the path\'s bandwidth-delay product, not growing on its own queue', () => {
    const window = new LinkWindow();
    window.rtt(100);
    const { sizes, lastSecond } = run(window, 5000, () => ({ rttMs: 100, bytesPerMs: 12_500 }));
    const bdp = 12_500 * 100;
    for (const size of sizes.slice(-2000)) {
      expect(size).toBeGreaterThan((WINDOW_GAIN - 0.25) * bdp);
      expect(size).toBeLessThan((WINDOW_GAIN + 0.25) * bdp);
    }
    expect(lastSecond).toBeGreaterThan(0.95 * 12_500 * 1000);
  });

  it('stays at its least where the round trip is short, however fast the acks come', () => {
    const window = new LinkWindow();
    window.rtt(1);
    const { sizes } = run(window, 2000, () => ({ rttMs: 1, bytesPerMs: 200_000 }));
    expect(new Set(sizes)).toEqual(new Set([WINDOW_MIN_BYTES]));
  });

  it('stays at its least until a round trip is known', () => {
    const window = new LinkWindow();
    const { sizes } = run(window, 2000, () => ({ rttMs: 100, bytesPerMs: 1e6 }));
    expect(new Set(sizes)).toEqual(new Set([WINDOW_MIN_BYTES]));
  });

  it('shrinks when the path slows down, at the first probe that reads it', () => {
    const window = new LinkWindow();
    window.rtt(100);
    const fast = run(window, 3000, () => ({ rttMs: 100, bytesPerMs: 1e6 }));
    expect(fast.sizes.at(-1)).toBe(WINDOW_MAX_BYTES);
    // The window on its way when the path slowed drains at its new rate, in 1.3 s: the first probe after it reads the new rate.
    const slow = run(window, 4000, () => ({ rttMs: 100, bytesPerMs: 12_500 }), fast.end);
    for (const size of slow.sizes.slice(-1000)) expect(size).toBeLessThan((WINDOW_GAIN + 0.25) * 12_500 * 100);
  });

  it('goes back to its least, its rates forgotten, after 10 s without a probe', () => {
    const window = new LinkWindow();
    window.rtt(100);
    for (let i = 0; i < 10; i++) probe(window, i * 1000, 10);
    // The last probe completed at 9,010 ms.
    window.idle(9_010 + WINDOW_IDLE_MS - 1);
    expect(window.size).toBe(WINDOW_MAX_BYTES);
    window.idle(9_010 + WINDOW_IDLE_MS);
    expect(window.size).toBe(WINDOW_MIN_BYTES);
    // Its rates were forgotten: one fast probe alone grows nothing.
    probe(window, 20_000, 10);
    expect(window.size).toBe(WINDOW_MIN_BYTES);
  });

  it('takes the least round trip it is told of', () => {
    const window = new LinkWindow();
    window.rtt(40);
    window.rtt(90);
    window.rtt(-1);
    expect(window.minRttMs).toBe(40);
  });

  /** One probe: a full window written at `at`, acknowledged `ms` later. */
  function probe(window: LinkWindow, at: number, ms: number): void {
    const size = window.size;
    window.wrote(size, () => at);
    window.acked(size, at + ms);
  }

  it('probes only with a full window: a window the channels leave room in says nothing of how far it could go', () => {
    const window = new LinkWindow();
    window.rtt(100);
    // Half the window, acknowledged in 10 ms, again and again: a rate that would grow the window fifteenfold, but no probe.
    for (let i = 0; i < 2 * RATE_SAMPLES; i++) {
      window.wrote(WINDOW_MIN_BYTES / 2, () => i * 200);
      window.acked(WINDOW_MIN_BYTES / 2, i * 200 + 10);
    }
    expect(window.size).toBe(WINDOW_MIN_BYTES);
    // Full windows, the same: the gain times the window that was on its way over the round trip, once as many probes said so.
    for (let i = 0; i < RATE_SAMPLES; i++) probe(window, 10_000 + i * 200, 100);
    expect(window.size).toBe(WINDOW_GAIN * WINDOW_MIN_BYTES);
  });

  it('takes the least of its last probes\' rates: a probe that fell in a burst of the peer\'s reads grows nothing', () => {
    const window = new LinkWindow();
    window.rtt(10);
    // A peer that reads 1 MiB in 10 ms, once in 5: the link carries 100 MB/s a moment, never for long.
    for (let i = 0; i < 20; i++) probe(window, i * 1000, i % 5 === 4 ? 4 : 20);
    expect(window.size).toBe(WINDOW_MIN_BYTES);
    // Every probe that fast, the window grows: 1.5 × 1 MiB / 4 ms × 10 ms.
    for (let i = 0; i < RATE_SAMPLES; i++) probe(window, 50_000 + i * 1000, 4);
    expect(window.size).toBe(Math.round((WINDOW_GAIN * WINDOW_MIN_BYTES * 10) / 4));
  });

  it('starts its count afresh on restart: acks of frames sent before complete no probe', () => {
    const window = new LinkWindow();
    window.rtt(100);
    // Two probes read 1 MiB in 10 ms; a third is on its way when the window restarts.
    probe(window, 0, 10);
    probe(window, 1000, 10);
    window.wrote(WINDOW_MIN_BYTES, () => 2000);
    window.restart();
    // The late ack is of nothing written since: without the restart it would complete the third probe and grow the window.
    window.acked(WINDOW_MIN_BYTES, 2010);
    expect(window.size).toBe(WINDOW_MIN_BYTES);
  });
});
