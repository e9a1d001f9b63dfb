/**
 * LinkLiveness: notices a dead peer. TCP alone can take minutes to report a peer that vanished
 * without closing (a laptop lid, a NAT that forgot the flow), so both ends send a keepalive every
 * `keepaliveMs` and declare the link dead after `deadAfterMs` without any inbound frame.
 *
 * Kept off the hot path: receiving a frame only increments a counter; one timer, ticking at a
 * quarter of the deadline, turns counter changes into "heard from the peer". Death is therefore
 * noticed within `deadAfterMs` plus one tick (defaults: 20 s + 5 s).
 *
 * Every keepalive is the same frame (id 0), and so is its reply: a Cloudflare Durable Object
 * holding the worker end answers that exact text with the runtime's auto-response, without waking
 * from hibernation (`worker/adapters/cloudflare/`). The id is in the frame schema for a peer's
 * own matching; nothing here matches replies, since any inbound frame is a sign of life.
 *
 * @module
 */
import { unrefTimer } from '../unref-timer.ts';

export interface LivenessOptions {
  keepaliveMs: number;
  deadAfterMs: number;
  /** Sends one keepalive (`KEEPALIVE_FRAME`). */
  ping(): void;
  /** The peer has been silent for `silentMs`; called once, then the watchdog stops. */
  dead(silentMs: number): void;
}

/** The keepalive every end sends, and the reply to it, always these same two frames. */
export const KEEPALIVE_FRAME = { v: 1, type: 'keepalive', id: 0 } as const;
export const KEEPALIVE_REPLY_FRAME = { v: 1, type: 'keepalive-reply', id: 0 } as const;

export class LinkLiveness {
  readonly #options: LivenessOptions;
  readonly #timer: ReturnType<typeof setInterval>;
  #frames = 0;
  #framesAtLastTick = 0;
  // The monotonic clock: a wall clock stepped back (NTP at boot, a resumed VM) would stop the
  // keepalives for as long as the step, and one stepped forward would end a healthy link.
  #lastHeardAt = performance.now();
  #lastPingAt = -Infinity;
  readonly #tickMs: number;
  /** The wall clock and the monotonic one at the last tick: the wall one far ahead says the machine slept. */
  #lastTick = { wall: Date.now(), mono: performance.now() };

  constructor(options: LivenessOptions) {
    this.#options = options;
    const tickMs = Math.max(1, Math.min(options.keepaliveMs, Math.floor(options.deadAfterMs / 4)));
    this.#tickMs = tickMs;
    this.#timer = setInterval(() => this.#tick(), tickMs);
    // Never the reason a process stays alive: the socket is (under Deno too).
    unrefTimer(this.#timer);
  }

  /** Inbound frames so far (every kind counts as a sign of life). */
  get frames(): number {
    return this.#frames;
  }

  /** Called for every inbound frame. */
  heard(): void {
    this.#frames++;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #tick(): void {
    const now = performance.now();
    const wall = Date.now();
    // The monotonic clock stands still while the machine sleeps: woken, a link whose peer forgot
    // it (a NAT's flow gone) would wait a whole deadline of waking time. Past a deadline of wall
    // time unaccounted for (a sleep, or the clock stepped), the peer has three ticks to be heard.
    const unaccounted = wall - this.#lastTick.wall - (now - this.#lastTick.mono);
    this.#lastTick = { wall, mono: now };
    if (unaccounted > this.#options.deadAfterMs && this.#frames === this.#framesAtLastTick) {
      this.#lastHeardAt = Math.min(this.#lastHeardAt, now - this.#options.deadAfterMs + 3 * this.#tickMs);
      this.#lastPingAt = -Infinity;
    }
    if (this.#frames !== this.#framesAtLastTick) {
      this.#framesAtLastTick = this.#frames;
      this.#lastHeardAt = now;
    } else if (now - this.#lastHeardAt >= this.#options.deadAfterMs) {
      this.stop();
      this.#options.dead(now - this.#lastHeardAt);
      return;
    }
    if (now - this.#lastPingAt >= this.#options.keepaliveMs) {
      this.#lastPingAt = now;
      this.#options.ping();
    }
  }
}
