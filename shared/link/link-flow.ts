/**
 * Flow control on the sending end of a link: what this end handed its socket and the socket has
 * not yet written out, per channel and in all, and which channels must hold back what feeds them.
 *
 * Why: a socket queues whatever it is given. A host whose servers write faster than the worker
 * reads queued their output in the sidecar without bound, until the socket's write failed
 * (`ENOBUFS` at about 2 GB) and the link dropped, ending every agent's sessions on that host. A
 * channel now holds back its producer (a server's stdout: the pipe fills and the server waits in
 * its own write) while more than `channelBytes` of its frames wait to be written out (in the
 * sender's queues, `link-sender.ts`, or in the socket), and lets it go once they are down to
 * `channelResumeBytes`. Past `linkBytes` in all, every channel with more than `quietBytes`
 * waiting holds its producer until the link is down to `linkResumeBytes`, and a channel that
 * grows past `quietBytes` meanwhile holds too; once the channels not held have more than
 * `linkBytes` waiting between them (many quiet ones), every channel holds, new ones too. A
 * channel with little waiting is left alone while others fill the link: when every
 * channel held, an agent whose echo answered in a millisecond waited seconds for another agent's
 * bulk to drain over a 100 Mbit/s link, its answer held in its server's pipe. A frame larger than
 * a budget still goes: the channel holds after it.
 *
 * How it knows what went: the socket reports each frame written, in the order sent (`ws` calls a
 * send's callback once its bytes are handed to the kernel; `FrameSocket.onwritten`). Each frame
 * sent is one entry in a ring (its channel, its size) and each report takes the oldest, so the hot
 * path allocates nothing and runs no timer. A socket that reports nothing (the worker's, an
 * in-memory pair) has no flow control: the endpoint makes no `LinkFlow` for it.
 *
 * Sizes are counted in UTF-16 code units (`text.length`): a frame's bytes where it is ASCII, as
 * JSON mostly is, and a third of them at worst, so what a budget lets queue is at most three times
 * its figure in bytes.
 *
 * A channel closed while held stays held until its frames have been written out (its producer may
 * serve other channels: a modern agent's instance does), and every hold ends with the link.
 *
 * @module
 */

/** Queued frames past which a channel holds what feeds it: a few seconds of a fast server's output, well under what hurts. */
export const CHANNEL_QUEUE_BYTES = 8 * 1024 * 1024;
/** A held channel lets go at or below this: low enough that a resumed server writes a while before it is held again. */
export const CHANNEL_RESUME_BYTES = 2 * 1024 * 1024;
/** Queued frames on the whole link past which every channel holds: what one host may make the sidecar keep. */
export const LINK_QUEUE_BYTES = 64 * 1024 * 1024;
/** Every channel held by the link lets go at or below this. */
export const LINK_RESUME_BYTES = 32 * 1024 * 1024;
/** While the link is over its budget, a channel with at most this much waiting goes on: a few answers of an agent whose answers are small. */
export const QUIET_CHANNEL_BYTES = 256 * 1024;
/**
 * The worker's end of a paced link: one agent's messages waiting for their turn past this, its
 * next requests to that host are refused with `limit-reached` until they drain (`LinkEndpoint`).
 * Nothing on the worker can be held back but the agent, and a channel's budget alone bounded an
 * agent by its channels: each modern request opens one, so 256 requests of 4 MiB (the agent's
 * `max-requests-per-agent` and body cap) could wait in the worker, 1 GiB, for a host behind a slow
 * uplink. Twice a channel's budget: a burst of large requests goes, a flood does not.
 */
export const AGENT_QUEUE_BYTES = 16 * 1024 * 1024;

export interface FlowLimits {
  channelBytes: number;
  channelResumeBytes: number;
  linkBytes: number;
  linkResumeBytes: number;
  quietBytes: number;
  /** Read by the worker's end (`AGENT_QUEUE_BYTES`), not by the flow. */
  agentBytes: number;
}

export const DEFAULT_FLOW_LIMITS: Readonly<FlowLimits> = Object.freeze({
  channelBytes: CHANNEL_QUEUE_BYTES,
  channelResumeBytes: CHANNEL_RESUME_BYTES,
  linkBytes: LINK_QUEUE_BYTES,
  linkResumeBytes: LINK_RESUME_BYTES,
  quietBytes: QUIET_CHANNEL_BYTES,
  agentBytes: AGENT_QUEUE_BYTES,
});

/**
 * What can be held back: a server's output. Each hold's release (idempotent) lets it go once
 * every hold taken is released.
 */
export interface ReadHold {
  holdReading(): () => void;
}

const NOTHING_HELD = (): void => {};

/** Holds `source` where it can be held; a release that does nothing where it cannot (an HTTP server's answers). */
export function holdReadingOf(source: object): () => void {
  const hold = (source as Partial<ReadHold>).holdReading;
  return typeof hold === 'function' ? hold.call(source) : NOTHING_HELD;
}

/** What the flow keeps per channel; a link channel is one (`mcp-channel-client-transport.ts`). */
export interface FlowAccount {
  /** Size of its frames sent and not yet written out. */
  queued: number;
  /** Past its own budget, until down to the resume mark. Only `LinkFlow` sets it. */
  over: boolean;
  /** Holds (true) or lets go (false) what feeds it; called on changes only. */
  hold(on: boolean): void;
}

/** Told when the whole link starts or stops holding its channels, for the log. */
export interface LinkFlowEvents {
  held?(queued: number): void;
  released?(queued: number, peak: number): void;
}

const FIRST_RING_SIZE = 64;

export class LinkFlow {
  readonly limits: Readonly<FlowLimits>;
  readonly #open: () => Iterable<FlowAccount>;
  readonly #events: LinkFlowEvents;
  /** Frames sent, oldest first from `#head`: whose (null for a control frame) and how large. */
  #owners: (FlowAccount | null)[] = new Array<FlowAccount | null>(FIRST_RING_SIZE).fill(null);
  #sizes: number[] = new Array<number>(FIRST_RING_SIZE).fill(0);
  #head = 0;
  #count = 0;
  #queued = 0;
  #inSocket = 0;
  #peak = 0;
  #linkOver = false;
  /** The channels not held (and the link's own frames) have more than the link's budget waiting: every channel holds, new ones too. */
  #linkFull = false;
  /** What the channels not held, and the link's own frames, have waiting. */
  #free = 0;
  /** Every channel holding its producer now, closed ones included: each is let go, the link's end at the latest. */
  readonly #held = new Set<FlowAccount>();

  /** `open`: the channels open now, each of which the whole link holds when it is full. */
  constructor(limits: Partial<FlowLimits> | undefined, open: () => Iterable<FlowAccount>, events: LinkFlowEvents = {}) {
    this.limits = { ...DEFAULT_FLOW_LIMITS, ...limits };
    this.#open = open;
    this.#events = events;
  }

  /** Size of every frame sent and not yet written out, queued before the socket or in it. */
  get queued(): number {
    return this.#queued;
  }

  /** The most `queued` has been. */
  get peak(): number {
    return this.#peak;
  }

  /** Past the link's budget, until down to its resume mark: busy channels hold their producers. */
  get over(): boolean {
    return this.#linkOver;
  }

  /** Channels holding their producer now. */
  get heldCount(): number {
    return this.#held.size;
  }

  /** Size of the frames handed to the socket and not yet written out: the part of `queued` past the sender's queues (`link-sender.ts`). */
  get inSocket(): number {
    return this.#inSocket;
  }

  /** A frame of `size` went to the socket, for `owner` (null: a control frame of the link's own). */
  sent(owner: FlowAccount | null, size: number): void {
    this.add(owner, size);
    this.wrote(owner, size);
  }

  /** `size` of `owner`'s frames handed to the socket, counted by `add` already; reported by one `written()`. */
  wrote(owner: FlowAccount | null, size: number): void {
    if (this.#count === this.#sizes.length) this.#grow();
    const at = (this.#head + this.#count) & (this.#sizes.length - 1);
    this.#owners[at] = owner;
    this.#sizes[at] = size;
    this.#count++;
    this.#inSocket += size;
  }

  /** A frame of `size` for `owner` is on its way out, in a queue before the socket or in it: it counts against its budgets from now on. */
  add(owner: FlowAccount | null, size: number): void {
    const queued = (this.#queued += size);
    if (owner === null || this.#held.size === 0 || !this.#held.has(owner)) this.#free += size;
    if (queued > this.#peak) this.#peak = queued;
    if (owner !== null) {
      const mine = (owner.queued += size);
      if (mine > this.limits.channelBytes && !owner.over) {
        owner.over = true;
        this.#hold(owner);
      } else if (this.#linkOver && mine > this.limits.quietBytes) this.#hold(owner);
    }
    if (!this.#linkOver) {
      if (queued > this.limits.linkBytes) this.#holdBusy();
    }
    if (this.#linkOver && !this.#linkFull && this.#free > this.limits.linkBytes) this.#holdAll();
  }

  /** The socket wrote out its oldest frame not yet reported. */
  written(): void {
    if (this.#count === 0) return; // a frame of before `reset`
    const at = this.#head;
    const owner = this.#owners[at] ?? null;
    const size = this.#sizes[at] ?? 0;
    this.#owners[at] = null;
    this.#head = (at + 1) & (this.#sizes.length - 1);
    this.#count--;
    this.#inSocket -= size;
    this.#queued -= size;
    if (owner === null || this.#held.size === 0 || !this.#held.has(owner)) this.#free -= size;
    if (owner !== null && (owner.queued -= size) <= this.limits.channelResumeBytes && owner.over) {
      owner.over = false;
      if (!this.#linkOver) this.#release(owner);
    }
    if (this.#linkOver && this.#queued <= this.limits.linkResumeBytes) this.#releaseAll();
  }

  /** A channel just opened: held at once while every channel is. */
  opened(owner: FlowAccount): void {
    if (this.#linkFull) this.#hold(owner);
  }

  /** The link ended: every hold ends, and reports of frames sent before are ignored. */
  reset(): void {
    const held = [...this.#held];
    this.#held.clear();
    this.#linkOver = false;
    this.#linkFull = false;
    this.#free = 0;
    for (let i = 0; i < this.#count; i++) {
      const owner = this.#owners[(this.#head + i) & (this.#sizes.length - 1)] ?? null;
      if (owner !== null) {
        owner.queued = 0;
        owner.over = false;
      }
    }
    this.#owners.fill(null);
    this.#head = 0;
    this.#count = 0;
    this.#queued = 0;
    this.#inSocket = 0;
    for (const owner of held) owner.hold(false);
  }

  #hold(owner: FlowAccount): void {
    if (this.#held.has(owner)) return;
    this.#held.add(owner);
    this.#free -= owner.queued;
    owner.hold(true);
  }

  #release(owner: FlowAccount): void {
    if (!this.#held.delete(owner)) return;
    this.#free += owner.queued;
    owner.hold(false);
  }

  /** The link is over its budget: every channel with more than a quiet one's waiting holds. */
  #holdBusy(): void {
    this.#linkOver = true;
    this.#events.held?.(this.#queued);
    const quiet = this.limits.quietBytes;
    for (const owner of this.#open()) if (owner.queued > quiet) this.#hold(owner);
  }

  #holdAll(): void {
    this.#linkFull = true;
    for (const owner of this.#open()) this.#hold(owner);
  }

  #releaseAll(): void {
    this.#linkOver = false;
    this.#linkFull = false;
    this.#events.released?.(this.#queued, this.#peak);
    for (const owner of this.#held) if (!owner.over) this.#release(owner);
  }

  /** Doubles the ring, oldest entry first. */
  #grow(): void {
    const size = this.#sizes.length;
    const owners = new Array<FlowAccount | null>(size * 2).fill(null);
    const sizes = new Array<number>(size * 2).fill(0);
    for (let i = 0; i < this.#count; i++) {
      const at = (this.#head + i) & (size - 1);
      owners[i] = this.#owners[at] ?? null;
      sizes[i] = this.#sizes[at] ?? 0;
    }
    this.#owners = owners;
    this.#sizes = sizes;
    this.#head = 0;
  }
}
