/**
 * AnswerStream: the body of an answer the worker writes to an agent (an SSE stream, or a large
 * JSON answer), with its unread bytes counted exactly: the bytes it holds that the runtime's HTTP
 * server has not yet taken for the agent's connection. The server takes a chunk only when the
 * connection can carry it (`Deno.serve` pulls about as much as the socket buffers hold, a few
 * MB, then waits), so what is unread here is what an agent that stopped reading leaves in the
 * worker's memory, and a bound on it is a bound on that memory (review isolation.md, findings 2
 * and 3).
 *
 * - Pull-based, queue of its own: an event stays whole in the queue until taken, so a stream
 *   ended early (`cut` with a last event) drops only events not started, and the agent's parser
 *   never sees half an event followed by another.
 * - Taken in chunks of at most `ANSWER_CHUNK_BYTES` (views, no copy): handed whole, a 10 MB answer
 *   would leave the queue at once and sit in the server's buffer instead, uncounted.
 * - Counted twice: `unread` for the stream's own bound, and the agent's `UnreadMeter`, so one
 *   agent's streams and held answers together stay within its budget.
 * - `ondrained` is told each time everything queued has been taken (a stream's answers are read,
 *   their requests' places can be given back), `oncancel` when the agent's connection went away.
 *
 * @module
 */

/**
 * Unread bytes one answer stream may hold behind the event it is sending (`queuedBehind`) before
 * it is ended (the legacy endpoint's `MAX_SSE_QUEUED_BYTES`, a modern request's or listen
 * stream's). Enough for a fast reader behind a burst of large events; a stalled one costs at most
 * this plus the event at the head and the one event that crossed it.
 */
export const MAX_UNREAD_BYTES_PER_STREAM = 4 * 1024 * 1024;

/**
 * A JSON answer up to this many characters is served as a plain body, its request's place given
 * back at once: it fits the socket buffers of any connection, so it never waits in the worker for
 * an agent that does not read, and a plain body is one write where a stream costs the hot path
 * (issue 17). A larger one is an `AnswerStream`, held (and its place with it) until it is read.
 */
export const HELD_ANSWER_MIN_CHARS = 64 * 1024;

/** Largest piece handed to the runtime at a time. */
export const ANSWER_CHUNK_BYTES = 64 * 1024;

/**
 * How many times its unread budget an agent may hold before answers already on their way are
 * dropped or cut (`hardUnreadLimit`). Past the budget itself the agent only gets no new requests
 * (`request-limits.ts`): an agent reading several large answers over a slow link passes it while
 * reading all the time, and dropping its finished answers threw away work it was waiting for.
 */
export const HARD_UNREAD_FACTOR = 4;

/** An agent's unread answer bytes across its streams and held answers, and the most it may hold. */
export interface UnreadMeter {
  readonly agent: string;
  unreadBytes: number;
  /** Past it, the agent's new requests are refused (admission); its answers still go out. */
  readonly maxUnreadBytes: number;
  /** Past it, answers are dropped and streams it is not reading ended; `HARD_UNREAD_FACTOR` × `maxUnreadBytes` by default. */
  readonly hardUnreadBytes?: number;
}

/** The unread bytes past which `meter`'s agent gets no more answer bytes queued. */
export function hardUnreadLimit(meter: UnreadMeter): number {
  return meter.hardUnreadBytes ?? meter.maxUnreadBytes * HARD_UNREAD_FACTOR;
}

/** Whether `meter`'s agent holds more unread than the worker keeps for it: answers are dropped, streams it is not reading ended. */
export function pastHardUnread(meter: UnreadMeter | undefined): meter is UnreadMeter {
  return meter !== undefined && meter.unreadBytes > hardUnreadLimit(meter);
}

export interface AnswerStreamOptions {
  /** The agent's meter, when the answer is known to be its. */
  meter?: UnreadMeter | undefined;
  ondrained?: () => void;
  oncancel?: () => void;
}

export class AnswerStream {
  readonly body: ReadableStream<Uint8Array>;
  readonly #meter: UnreadMeter | undefined;
  readonly #ondrained: (() => void) | undefined;
  readonly #oncancel: (() => void) | undefined;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  /** Whole events as pushed, oldest first; the head may be partly taken (`#offset`). */
  readonly #queue: Uint8Array[] = [];
  #offset = 0;
  #unread = 0;
  /** The runtime asked for a chunk and found none: the next push goes straight to it. */
  #waiting = false;
  /** Closes once the queue is taken. */
  #ending = false;
  /** Closed, errored or cancelled: nothing more goes in. */
  #done = false;

  constructor(options: AnswerStreamOptions = {}) {
    this.#meter = options.meter;
    this.#ondrained = options.ondrained;
    this.#oncancel = options.oncancel;
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => this.#pull(),
        cancel: () => {
          if (this.#done) return;
          this.#done = true;
          this.#drop(false);
          this.#oncancel?.();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** Bytes queued and not yet taken. */
  get unread(): number {
    return this.#unread;
  }

  /**
   * Bytes queued behind the event at the head of the queue (the one being taken, or next to be):
   * what a stream's own bound counts. The head's rest is left out because the runtime takes a large
   * event in pieces, so an agent reading a 6 MB answer at its link's pace has most of it here;
   * counting it ended the stream at the next event (a batch's second answer, a notification) and
   * lost the answer being read. An agent that stops reading still leaves at most the bound behind
   * one event.
   */
  get queuedBehind(): number {
    const head = this.#queue[0];
    return head === undefined ? 0 : this.#unread - (head.byteLength - this.#offset);
  }

  /** Whether the runtime is waiting for more right now: what is pushed next is taken at once. */
  get reading(): boolean {
    return this.#waiting;
  }

  /** Whether more may still be pushed (not ended, cut, or cancelled by the agent). */
  get open(): boolean {
    return !this.#done && !this.#ending;
  }

  /** Queues one event (or a whole JSON answer); false when the stream no longer takes any. */
  push(bytes: Uint8Array): boolean {
    if (this.#done || this.#ending) return false;
    if (this.#waiting && this.#queue.length === 0 && bytes.byteLength <= ANSWER_CHUNK_BYTES) {
      // The common case for a reader that keeps up: never queued, never counted.
      this.#waiting = false;
      this.#controller.enqueue(bytes);
      return true;
    }
    this.#queue.push(bytes);
    this.#count(bytes.byteLength);
    if (this.#waiting) {
      this.#waiting = false;
      this.#give();
    }
    return true;
  }

  /** Ends the stream once what it holds has been taken (at once when nothing is queued). */
  end(): void {
    if (this.#done || this.#ending) return;
    this.#ending = true;
    if (this.#queue.length === 0) this.#close();
  }

  /**
   * Ends the stream now. With `last`, every event not yet started is dropped, `last` goes after
   * the rest of the one being taken, and the stream ends behind it; without, it is errored with
   * `reason` (which drops the queue at once: the agent's connection is cut).
   */
  cut(reason: Error, last?: Uint8Array): void {
    if (this.#done) return;
    if (last === undefined) {
      this.#done = true;
      this.#drop(false);
      this.#controller.error(reason);
      return;
    }
    this.#drop(true);
    this.#ending = false;
    this.push(last);
    this.end();
  }

  #pull(): void {
    if (this.#queue.length === 0) {
      if (this.#ending) this.#close();
      else this.#waiting = true;
      return;
    }
    this.#give();
  }

  /** Hands the next chunk of the head event to the runtime's pending read. */
  #give(): void {
    const head = this.#queue[0]!;
    const end = Math.min(head.byteLength, this.#offset + ANSWER_CHUNK_BYTES);
    const chunk = this.#offset === 0 && end === head.byteLength ? head : head.subarray(this.#offset, end);
    if (end === head.byteLength) {
      this.#queue.shift();
      this.#offset = 0;
    } else {
      this.#offset = end;
    }
    this.#count(-chunk.byteLength);
    this.#controller.enqueue(chunk);
    if (this.#queue.length > 0) return;
    if (this.#ending) this.#close();
    this.#ondrained?.();
  }

  /** Forgets what is queued; `keepStarted`: but the rest of an event already partly taken. */
  #drop(keepStarted: boolean): void {
    const kept = keepStarted && this.#offset > 0 ? this.#queue[0]! : undefined;
    let dropped = this.#unread;
    if (kept !== undefined) dropped -= kept.byteLength - this.#offset;
    this.#queue.length = 0;
    if (kept !== undefined) this.#queue.push(kept);
    else this.#offset = 0;
    this.#count(-dropped);
  }

  #close(): void {
    if (this.#done) return;
    this.#done = true;
    this.#controller.close();
  }

  #count(bytes: number): void {
    this.#unread += bytes;
    if (this.#meter !== undefined) this.#meter.unreadBytes += bytes;
  }
}
