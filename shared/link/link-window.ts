/**
 * How much a paced link's end may have on its way unacknowledged: as little as keeps the link
 * busy, so that what another channel sends now finds little ahead of it.
 *
 * Why not a fixed size: a window lets one window through per round trip. 1 MiB kept a 100 Mbit/s
 * link busy near the worker, but over a 100 ms round trip it let one agent's large answers through
 * at 10 MB/s at best, whatever the link could carry; a larger fixed window would have put that
 * much ahead of every other agent's messages on short links, where it only queues.
 *
 * How (as BBR sizes a congestion window: a gain times the delivery rate times the shortest round trip):
 * - The shortest round trip (`minRttMs`) comes from exchanges nothing queues behind on this end:
 *   the handshake (the sidecar's from its proof to `link-accepted`, the worker's from its challenge
 *   to the proof, kept by a Durable Object through hibernation) and each keepalive and its reply
 *   (`rtt`). It is the least seen on the link: a sample taken while this end's own
 *   frames fill the path is longer by their queue, and would let the window grow on its own queue.
 * - The delivery rate comes from probes: a frame written that fills the window is marked, and once
 *   the peer acknowledged it, what was unacknowledged when it was written (the window, itself
 *   included) over the time that took is the rate. A frame written with room to spare is no
 *   probe: what was ahead of it says nothing of how much the link could hold (a burst's first
 *   frame, with nothing ahead, would read one frame per round trip; probes where the socket's room
 *   ran out read 15 MB/s over a 100 ms round trip that carried 39–54).
 *   A probe whose ack waited on the peer's timer (nothing followed it) reads slow, which shrinks
 *   the window as a flood ends, when it no longer matters.
 * - The rate taken is the least of the last `RATE_SAMPLES` probes': a peer busy with other work
 *   reads in bursts, and a probe that fell in one reads a rate the link never keeps. On loopback,
 *   where the worker's CPU is what a flood saturates, single probes read up to 370 MB/s of a flood
 *   carried at 86, and the window they grew put another agent's echo at 33 ms at the median
 *   against 17–19 with the least window; with the least of three, 12–25 ms.
 * - The window is then `WINDOW_GAIN` times the rate times the shortest round trip, between
 *   `WINDOW_MIN_BYTES` and `WINDOW_MAX_BYTES`: on a link whose round trip is short (a loopback, a
 *   LAN, a workstation near its worker) that stays the least, as before; on a long one it grows
 *   every round trip or two while the peer keeps up, and shrinks
 *   at the first probe that reads the path slower: a window past what the path carries is only a
 *   queue, ahead of every other channel's frames.
 * - No probe for `WINDOW_IDLE_MS` (checked at each keepalive, `idle`): the window is back at its
 *   least, its rates forgotten. Nothing said it was still right: the link was idle, or something
 *   else held its frames back (the kernel's buffer full, on a path that got slower than the one
 *   the window grew on: another upload on the workstation's uplink), and a window grown on a faster
 *   path puts its size ahead of every frame once that drains. Growing again costs a few round trips.
 * - No round trip seen yet: the window stays at its least.
 *
 * @module
 */

/** No probe for this long: the window goes back to its least (`idle`). */
export const WINDOW_IDLE_MS = 10_000;

/** Probes whose rates the window takes the least of. */
export const RATE_SAMPLES = 3;

/** The least window, and the window of a link whose round trip is not known: 84 ms at 100 Mbit/s. */
export const WINDOW_MIN_BYTES = 1024 * 1024;
/** The most: what one channel's bulk can put ahead of another's frame, 1.3 s at 100 Mbit/s, and 168 MB/s over 100 ms. */
export const WINDOW_MAX_BYTES = 16 * 1024 * 1024;
/**
 * The window over the bandwidth-delay product: more than 1, as acks come every 64 KiB read, a few
 * at once from a busy peer, and the window must outlast their gaps; what is past the product is a
 * queue, ahead of every other channel. Over a 100 Mbit/s link with a 100 ms round trip
 * (`test/bench/link-fairness.ts --link-rate 100mbit --link-delay 100`) both 1.5 and 2 filled the
 * link (11.8 MB/s, against 7.4 with a fixed 1 MiB), and another agent's echo took 179 ms at 1.5,
 * 230 at 2 (103 alone); over 100 ms of loopback, where the CPU is the bottleneck, 2 carried 96
 * MB/s and 1.5 70 (8.9 before), each from single probes' rates (before `RATE_SAMPLES`).
 */
export const WINDOW_GAIN = 1.5;

export interface LinkWindowOptions {
  minBytes?: number;
  maxBytes?: number;
}

export class LinkWindow {
  #size: number;
  readonly #min: number;
  readonly #max: number;
  #minRtt = Infinity;
  /**
   * The probe on its way: what was unacknowledged once its frame was written (its own bytes and
   * all ahead of it), how much of that the peer has yet to acknowledge (0: no probe), and when.
   * Acks come in order, so the probe's frame is read once all of it is.
   */
  #probeBytes = 0;
  #probeLeft = 0;
  #probeAt = 0;
  /** The last probes' rates (bytes per ms), oldest first. */
  readonly #rates: number[] = [];
  /** When the last probe completed (ms). */
  #probedAt = 0;

  constructor(options: LinkWindowOptions = {}) {
    this.#min = options.minBytes ?? WINDOW_MIN_BYTES;
    this.#max = Math.max(this.#min, options.maxBytes ?? WINDOW_MAX_BYTES);
    this.#size = this.#min;
  }

  /** Bytes that may be on their way unacknowledged. */
  get size(): number {
    return this.#size;
  }

  /** The shortest round trip seen (ms); Infinity before any. */
  get minRttMs(): number {
    return this.#minRtt;
  }

  /** A round trip that nothing of this end's queued ahead of (a handshake, a keepalive), in ms. */
  rtt(ms: number): void {
    if (ms >= 0 && ms < this.#minRtt) this.#minRtt = ms;
  }

  /** A frame went to the socket, which left `inFlight` bytes unacknowledged; `now` (ms) is read only to start a probe. */
  wrote(inFlight: number, now: () => number): void {
    if (this.#probeLeft === 0 && inFlight >= this.#size) {
      this.#probeBytes = this.#probeLeft = inFlight;
      this.#probeAt = now();
    }
  }

  /** The peer acknowledged `bytes` more at `now` (ms). */
  acked(bytes: number, now: number): void {
    if (this.#probeLeft === 0 || (this.#probeLeft -= bytes) > 0) return;
    this.#probeLeft = 0;
    this.#probedAt = now;
    if (this.#minRtt === Infinity) return;
    const elapsed = Math.max(now - this.#probeAt, 0.1);
    const rates = this.#rates;
    rates.push(this.#probeBytes / elapsed);
    if (rates.length > RATE_SAMPLES) rates.shift();
    if (rates.length < RATE_SAMPLES) return;
    const rate = Math.min(...rates);
    this.#size = Math.round(Math.min(this.#max, Math.max(this.#min, WINDOW_GAIN * rate * Math.max(this.#minRtt, 0.1))));
  }

  /** Checked now and then (at each keepalive): with no probe for `WINDOW_IDLE_MS`, the window goes back to its least. */
  idle(now: number): void {
    if (now - this.#probedAt < WINDOW_IDLE_MS) return;
    this.#size = this.#min;
    this.#rates.length = 0;
  }

  /** The count of what is on its way starts afresh (the peer lost count, or the link ended): no probe is on its way. */
  restart(): void {
    this.#probeLeft = 0;
  }
}
