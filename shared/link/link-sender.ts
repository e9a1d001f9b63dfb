/**
 * The sending end of a link: its channels' frames leave in turns, a large one in pieces, and,
 * where the other end acknowledges what it reads (a paced link), only a window of them is on its
 * way at a time, so that one channel's bulk never stands between another channel and the other
 * end. The sidecar's end has one on every link (its socket reports its writes, which the flow's
 * budgets count); the worker's, on a paced link, where the acks alone count what went.
 *
 * Why: a socket, the kernel's buffers under it and the network after them all deliver in the
 * order they were given. While one agent's calls answered megabytes, every frame the host sent
 * afterwards, another agent's one-line answer included, waited behind those bytes: in the
 * sidecar's socket (up to the link's 64 MiB budget, `link-flow.ts`), then in the kernel's send
 * buffer (up to 4 MB on Linux). Over a link shaped to 100 Mbit/s
 * (`test/bench/link-fairness.ts --link-rate`), another agent's echo took 3.5 s while one agent's
 * 4 sessions read 15 MB answers.
 *
 * How:
 * - The socket is given at most `SOCKET_BYTES` more than it has written out and, on a paced link,
 *   at most a window more than the other end has acknowledged reading (`link-ack`), as much as
 *   keeps the link busy (`link-window.ts`): that is all a frame sent now can find ahead of it.
 *   The rest waits here, in a queue per channel, and whenever there is room the next agent in
 *   turn sends, from its next channel in turn, one frame or one piece of a large one: an agent's
 *   many sessions take one turn between them against another agent's one.
 *   A frame that finds no queue and room goes at once, as before: on a quiet link this costs a
 *   few comparisons.
 * - A frame longer than `PART_CHARS` goes, on a paced link, as `channel-part` frames of that size
 *   (`frames.ts`), which the worker joins and reads as the frame they came from; whole, in its
 *   turn, elsewhere. Where the socket takes bytes (`FrameSocket.sendUtf8`), the frame is encoded
 *   once and its pieces cut from the bytes, never inside a character. The other end holds each
 *   frame's pieces until its last, so at most `PARTED_FRAMES` frames are in the middle of their
 *   pieces at a time, of which one larger than `LARGE_FRAME_CHARS`: an agent's answer of a few
 *   hundred KiB starts at once beside another's megabytes, and the other end holds at most one
 *   large frame in part (`partedHeldLimit`), as it held one whole frame before.
 * - Nothing acknowledged for `ACK_STALL_MS` while frames are on their way: the other end lost
 *   count, and the window starts afresh (logged), rather than hold every channel for good.
 * - Control frames (keepalives, acks, errors of the link's own) go at once, ahead of any queue: a
 *   link busy with bulk still answers its keepalives in time. What belongs to a channel (its
 *   messages, its reply, its close) keeps that channel's order.
 *
 * The flow's budgets count everything a channel has waiting, here or in the socket
 * (`LinkFlow.add`): a channel holds what feeds it past its own budget, as it did.
 *
 * @module
 */
import type { FlowAccount, LinkFlow } from './link-flow.ts';
import { LinkWindow, type LinkWindowOptions } from './link-window.ts';

/** What the socket is given beyond what it has written out: enough to keep a loopback or a long link busy between two write reports. */
export const SOCKET_BYTES = 256 * 1024;
/** Size of each piece of a large frame (in bytes where the socket takes them, else UTF-16 code units), and the largest frame sent whole. */
export const PART_CHARS = 128 * 1024;
/** Frames in the middle of their pieces at a time, on the whole link: the other end holds each one's pieces until its last. */
export const PARTED_FRAMES = 16;
/**
 * Past this a frame is large: one at a time is in the middle of its pieces, so that the other
 * end holds at most one large frame in part (`partedHeldLimit`), and frames of a few hundred KiB
 * are never kept waiting behind other channels' megabytes for their start.
 */
export const LARGE_FRAME_CHARS = 1024 * 1024;
/** What a link's end may hold of frames in part, when the other end follows the rules: one large frame, and the rest of `PARTED_FRAMES` smaller ones. */
export function partedHeldLimit(maxFrameBytes: number): number {
  return maxFrameBytes + (PARTED_FRAMES - 1) * LARGE_FRAME_CHARS;
}
/** Nothing acknowledged for this long while frames are on their way: the other end lost count (a bug, or an object rebuilt with frames unacknowledged), and the window starts afresh. */
export const ACK_STALL_MS = 30_000;

export interface LinkSenderOptions {
  /** Hands one frame's text to the socket; throws when the socket is closed. */
  write(text: string): void;
  /**
   * Hands the socket one text frame as its UTF-8 bytes, where it can (`FrameSocket.sendUtf8`): a
   * large frame is then encoded once and its pieces cut from the bytes. Cutting the text and
   * encoding each piece copied a frame twice more: 1.9 ms against 0.95 for a 1 MB frame whole,
   * 1.03 ms this way (Node 20).
   */
  writeUtf8?: ((bytes: Uint8Array) => void) | undefined;
  /** The header of a piece of a frame on `channel` (`channelPartHeader`); null when the peer reads no pieces (the frame goes whole). */
  part: ((channel: number, last: boolean) => string) | null;
  socketBytes?: number;
  partChars?: number;
  partedFrames?: number;
  largeFrameChars?: number;
  /** The clock of `stalled` and of the window's probes, in ms (tests). */
  now?: () => number;
  /**
   * Where the peer acknowledges frames (`acked`): how much may be on its way unacknowledged
   * (`link-window.ts`), past which the rest waits here, in turns: what is on its way (the kernel's
   * socket buffers, which grow to 4 MB, and the network's queues) leaves in the order it was
   * sent, and every frame sent after waits for it. Null: no acks, no window.
   */
  window?: LinkWindowOptions | null;
  /**
   * The socket reports no writes (the worker's, under Deno or Workers): a frame counts as written
   * out once the peer acknowledged it, for the flow's budgets too.
   */
  acksAreWrites?: boolean;
}

/** A channel's account, as the sender knows it: its flow account, its id and whose it is. */
export interface SenderAccount extends FlowAccount {
  readonly id: number;
  /**
   * The agent the channel serves (its open's `agent`; '' when none): turns go by agent, then by
   * channel within an agent, so that an agent's many sessions take no more turns than another's one.
   */
  readonly group?: string;
}

/** An agent's channels with frames waiting, in the order their turns come. */
interface Group {
  readonly name: string;
  readonly turns: SenderAccount[];
  /** Size of its frames waiting here, a frame in pieces counted whole until its last. */
  waiting: number;
}

interface Waiting {
  text: string;
  /** `text` as UTF-8, once its first piece is cut where the socket takes bytes. */
  bytes: Uint8Array | null;
  /** How much of `text` (or of `bytes`) has gone, in pieces. */
  sent: number;
}

const encoder = new TextEncoder();

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

export class LinkSender {
  readonly #flow: LinkFlow;
  readonly #write: (text: string) => void;
  readonly #writeUtf8: ((bytes: Uint8Array) => void) | undefined;
  readonly #part: LinkSenderOptions['part'];
  readonly #socketBytes: number;
  readonly #partChars: number;
  readonly #partedMax: number;
  readonly #largeFrameChars: number;
  readonly #now: () => number;
  /** When the peer last acknowledged, or the window last went from empty to not (ms). */
  #ackedAt = 0;
  /** Each channel with frames waiting, and them, oldest first. */
  readonly #waiting = new Map<SenderAccount, Waiting[]>();
  /** The agents with frames waiting, in the order their turns come, and each by name. */
  #turns: Group[] = [];
  readonly #groups = new Map<string, Group>();
  /** Channels that have sent some of a frame's pieces and not its last, and whether that frame is large. */
  readonly #parted = new Map<SenderAccount, boolean>();
  #partedLarge = 0;
  #pumping = false;
  /** Null where the peer acknowledges nothing. */
  readonly #window: LinkWindow | null;
  readonly #acksAreWrites: boolean;
  /** Sizes of the frames written and not yet acknowledged, oldest first from `#unackedHead`, and their sum. */
  #unacked: number[] = [];
  #unackedHead = 0;
  #inFlight = 0;

  constructor(flow: LinkFlow, options: LinkSenderOptions) {
    this.#flow = flow;
    this.#write = options.write;
    this.#writeUtf8 = options.writeUtf8;
    this.#part = options.part;
    this.#socketBytes = options.socketBytes ?? SOCKET_BYTES;
    this.#partChars = options.partChars ?? PART_CHARS;
    this.#partedMax = options.partedFrames ?? PARTED_FRAMES;
    this.#largeFrameChars = options.largeFrameChars ?? LARGE_FRAME_CHARS;
    this.#now = options.now ?? (() => performance.now());
    this.#window = options.window === null || options.window === undefined ? null : new LinkWindow(options.window);
    this.#acksAreWrites = options.acksAreWrites === true;
  }

  /** Bytes written and not yet acknowledged by the peer (0 where it does not acknowledge). */
  get inFlight(): number {
    return this.#acksAreWrites ? this.#flow.inSocket : this.#inFlight;
  }

  /** What may be on its way unacknowledged now (Infinity where the peer acknowledges nothing). */
  get windowBytes(): number {
    return this.#window?.size ?? Infinity;
  }

  /** A round trip nothing of this end's queued ahead of (the handshake, a keepalive), in ms: the window's least. */
  rtt(ms: number): void {
    this.#window?.rtt(ms);
  }

  /** A keepalive's tick (`LinkWindow.idle`). */
  idle(): void {
    this.#window?.idle(this.#now());
  }

  /** The shortest round trip seen (ms); null before any, or where the peer acknowledges nothing. */
  get roundTripMs(): number | null {
    const ms = this.#window?.minRttMs ?? Infinity;
    return ms === Infinity ? null : ms;
  }

  /**
   * Size of the frames of agent `group`'s channels waiting here for their turn ('': channels of no
   * agent), in UTF-16 code units as the flow counts (`link-flow.ts`): a frame's bytes where it is
   * ASCII, as JSON mostly is, a third of them at worst.
   */
  waitingOf(group: string): number {
    return this.#groups.get(group)?.waiting ?? 0;
  }

  /** Frames waiting for their turn, in all. */
  get waitingFrames(): number {
    let count = 0;
    for (const queue of this.#waiting.values()) count += queue.length;
    return count;
  }

  /**
   * Sends `text` for `owner` (null: a control frame, which goes at once), now or in its turn.
   * Throws what the socket's `write` throws when it is sent now: a frame that waits fails
   * nothing if the link ends first, as one sent and lost with the socket would.
   */
  send(owner: SenderAccount | null, text: string): void {
    const size = text.length;
    if (owner === null) {
      this.#write(text);
      this.#flow.add(null, size);
      this.#wrote(null, size);
      return;
    }
    if (this.#hasRoom() && (this.#waiting.size === 0 || !this.#waiting.has(owner)) && (size <= this.#partChars || this.#part === null)) {
      this.#write(text);
      this.#flow.add(owner, size);
      this.#wrote(owner, size);
      return;
    }
    this.#flow.add(owner, size);
    const name = owner.group ?? '';
    let group = this.#groups.get(name);
    if (group === undefined) {
      group = { name, turns: [], waiting: 0 };
      this.#groups.set(name, group);
      this.#turns.push(group);
    }
    group.waiting += size;
    const queue = this.#waiting.get(owner);
    if (queue !== undefined) queue.push({ text, bytes: null, sent: 0 });
    else {
      this.#waiting.set(owner, [{ text, bytes: null, sent: 0 }]);
      group.turns.push(owner);
    }
    this.#pump();
  }

  /**
   * One of the link's own frames (a keepalive, an ack, the link's close): at once, and outside the
   * window, as the peer does not acknowledge it. Throws what the socket's `write` throws.
   */
  sendUncounted(text: string): void {
    this.#write(text);
    // The socket still reports its write, which the flow counts in order; acks never name it.
    if (!this.#acksAreWrites) this.#flow.sent(null, text.length);
  }

  /** The socket wrote out its oldest frame not yet reported: the next ones may go. */
  written(): void {
    this.#flow.written();
    if (this.#turns.length > 0) this.#pump();
  }

  /** The peer read `frames` more of the frames written (`link-ack`): as many more may go. */
  acked(frames: number): void {
    const now = (this.#ackedAt = this.#now());
    if (this.#acksAreWrites) {
      // The flow's own count of what the socket has not written out is what the peer has not read.
      const before = this.#flow.inSocket;
      for (let i = 0; i < frames && this.#flow.inSocket > 0; i++) this.#flow.written();
      this.#window?.acked(before - this.#flow.inSocket, now);
      if (this.#turns.length > 0) this.#pump();
      return;
    }
    const sizes = this.#unacked;
    let head = this.#unackedHead;
    const before = this.#inFlight;
    for (let i = 0; i < frames && head < sizes.length; i++) {
      this.#inFlight -= sizes[head++]!;
    }
    this.#window?.acked(before - this.#inFlight, now);
    if (head === sizes.length) {
      sizes.length = 0;
      head = 0;
    } else if (head > 1024 && head * 2 > sizes.length) {
      sizes.splice(0, head);
      head = 0;
    }
    this.#unackedHead = head;
    if (this.#turns.length > 0) this.#pump();
  }

  /**
   * True when frames have been on their way unacknowledged for `ACK_STALL_MS` with no ack at all:
   * then `restartWindow` (`link-endpoint.ts` checks at each keepalive).
   */
  stalled(): boolean {
    return this.inFlight > 0 && this.#now() - this.#ackedAt > ACK_STALL_MS;
  }

  /**
   * Takes every frame on its way for read: the peer lost count of them, and a window that never
   * empties would hold every channel's frames for good, with nothing to say why.
   */
  restartWindow(): void {
    this.#ackedAt = this.#now();
    if (this.#acksAreWrites) while (this.#flow.inSocket > 0) this.#flow.written();
    this.#window?.restart();
    this.#unacked = [];
    this.#unackedHead = 0;
    this.#inFlight = 0;
    if (this.#turns.length > 0) this.#pump();
  }

  /**
   * Hands the socket everything waiting, ignoring its room: before the link's own last frame
   * (`link-close`), so what was sent before it still arrives before it, as it did when every frame
   * went to the socket at once. The frames in the middle of their pieces are finished first, then
   * each channel's frames go in order, each frame's pieces together, so that the other end holds no
   * more in part than it did. Throws nothing: a socket that fails here is closing.
   */
  flush(): void {
    try {
      for (const owner of [...this.#parted.keys()]) this.#sendFrame(owner);
      while (this.#turns.length > 0) this.#sendFrame(this.#turns[0]!.turns[0]!);
    } catch {
      // The socket closed: the link's end drops the rest (`reset`).
    }
  }

  /** All of `owner`'s oldest frame waiting, whole or every piece left. */
  #sendFrame(owner: SenderAccount): void {
    const queue = this.#waiting.get(owner)!;
    const head = queue[0]!;
    if (this.#part === null || head.text.length <= this.#partChars) {
      this.#write(head.text);
      this.#wrote(owner, head.text.length);
    } else {
      while (this.#writePiece(owner, head) < (head.bytes ?? head.text).length);
      if (this.#parted.get(owner) === true) this.#partedLarge--;
      this.#parted.delete(owner);
    }
    queue.shift();
    const group = this.#groups.get(owner.group ?? '')!;
    group.waiting -= head.text.length;
    if (queue.length === 0) {
      this.#waiting.delete(owner);
      const at = group.turns.indexOf(owner);
      if (at !== -1) group.turns.splice(at, 1);
      if (group.turns.length === 0) this.#dropGroup(group);
    }
  }

  /** The link ended: what waits is dropped with it, and every account it counted on is cleared. */
  reset(): void {
    for (const owner of this.#waiting.keys()) {
      owner.queued = 0;
      owner.over = false;
    }
    this.#waiting.clear();
    this.#turns = [];
    this.#groups.clear();
    this.#parted.clear();
    this.#partedLarge = 0;
    this.#window?.restart();
    this.#unacked = [];
    this.#unackedHead = 0;
    this.#inFlight = 0;
    this.#flow.reset();
  }

  #pump(): void {
    // A write may report at once (an in-memory socket): the loop below then goes on from there.
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#turns.length > 0 && this.#hasRoom()) {
        if (!this.#sendTurn()) return;
      }
    } catch {
      // The socket closed: the link's end drops what waits (`reset`).
    } finally {
      this.#pumping = false;
    }
  }

  /**
   * The next agent in turn that may sends one frame or one piece, from its next channel in turn
   * that may; false when every channel waiting has a frame to start in pieces and as many are in
   * the middle of theirs as may be.
   */
  #sendTurn(): boolean {
    const groups = this.#turns;
    for (let tried = 0; tried < groups.length; tried++) {
      const group = groups.shift()!;
      let sent: boolean;
      try {
        sent = this.#sendGroupTurn(group);
      } catch (error) {
        groups.unshift(group); // the socket failed: the agent keeps its turn for whatever comes of it
        throw error;
      }
      if (group.turns.length > 0) groups.push(group);
      else this.#groups.delete(group.name);
      if (sent) return true;
    }
    return false;
  }

  /** The next of `group`'s channels in turn that may sends one frame or one piece; false when none may. */
  #sendGroupTurn(group: Group): boolean {
    const turns = group.turns;
    for (let tried = 0; tried < turns.length; tried++) {
      const owner = turns.shift()!;
      const queue = this.#waiting.get(owner)!;
      const head = queue[0]!;
      const text = head.text;
      let done = true;
      try {
        if (this.#part === null || text.length <= this.#partChars) {
          this.#write(text);
          this.#wrote(owner, text.length);
        } else if (head.sent === 0 && !this.#mayStartParted(text.length)) {
          turns.push(owner); // its turn comes again once a parted frame is done
          continue;
        } else {
          if (head.sent === 0) {
            const large = text.length > this.#largeFrameChars;
            this.#parted.set(owner, large);
            if (large) this.#partedLarge++;
          }
          const to = this.#writePiece(owner, head);
          done = to === (head.bytes ?? text).length;
          if (done) {
            if (this.#parted.get(owner) === true) this.#partedLarge--;
            this.#parted.delete(owner);
          }
        }
      } catch (error) {
        turns.unshift(owner); // the socket failed: the channel keeps its turn for whatever comes of it
        throw error;
      }
      if (done) {
        queue.shift();
        group.waiting -= text.length;
      }
      if (queue.length > 0) turns.push(owner);
      else this.#waiting.delete(owner);
      return true;
    }
    return false;
  }

  /** `group` has no channel waiting any more (`flush`). */
  #dropGroup(group: Group): void {
    this.#groups.delete(group.name);
    const at = this.#turns.indexOf(group);
    if (at !== -1) this.#turns.splice(at, 1);
  }

  /** Whether a frame of `chars` may start its pieces: as many frames in part as may be, of which one large. */
  #mayStartParted(chars: number): boolean {
    if (this.#parted.size >= this.#partedMax) return false;
    return chars <= this.#largeFrameChars || this.#partedLarge === 0;
  }

  /** Sends the next piece of `head`, a frame on `owner` larger than a piece; returns where the next one starts. */
  #writePiece(owner: SenderAccount, head: Waiting): number {
    const from = head.sent;
    const writeUtf8 = this.#writeUtf8;
    let to: number;
    if (writeUtf8 === undefined) {
      const text = head.text;
      to = Math.min(text.length, from + this.#partChars);
      // Never between the two halves of a character outside the BMP: a piece is sent as UTF-8, which has no half a character.
      if (to < text.length && isHighSurrogate(text.charCodeAt(to - 1))) to--;
      this.#write(`${this.#part!(owner.id, to === text.length)}${text.slice(from, to)}`);
    } else {
      let bytes = head.bytes;
      if (bytes === null) {
        bytes = head.bytes = encoder.encode(head.text);
        // Counted from now on in bytes, as its pieces are: never fewer than its UTF-16 units.
        this.#flow.add(owner, bytes.length - head.text.length);
      }
      to = Math.min(bytes.length, from + this.#partChars);
      // Never inside a character's UTF-8 sequence: back to the byte that starts it.
      while (to < bytes.length && (bytes[to]! & 0xc0) === 0x80) to--;
      const header = encoder.encode(this.#part!(owner.id, to === bytes.length));
      const frame = new Uint8Array(header.length + to - from);
      frame.set(header);
      frame.set(bytes.subarray(from, to), header.length);
      writeUtf8(frame);
    }
    this.#wrote(owner, to - from);
    head.sent = to;
    return to;
  }

  #hasRoom(): boolean {
    return this.#flow.inSocket < this.#socketBytes && (this.#window === null || this.inFlight < this.#window.size);
  }

  /** A frame of `size` went to the socket: until the socket reports it and, where the peer acknowledges, until the peer has read it. */
  #wrote(owner: SenderAccount | null, size: number): void {
    const window = this.#window;
    if (window !== null && this.inFlight === 0) this.#ackedAt = this.#now();
    this.#flow.wrote(owner, size);
    if (window === null) return;
    if (!this.#acksAreWrites) {
      this.#unacked.push(size);
      this.#inFlight += size;
    }
    window.wrote(this.inFlight, this.#now);
  }
}
