/**
 * LinkEndpoint: many message channels multiplexed over one frame socket, used by both ends of a
 * host link. The worker end opens channels (one per agent session per server); the sidecar end
 * answers them through an `onOpen` handler.
 *
 * Why a WebSocket carries the link: see `frame-socket.ts`.
 *
 * What this file adds over a raw socket: channel ids allocated by the opener, open/ack/open-error
 * with a timeout (and a first message that may go with or right behind the open, before the ack,
 * and a last message that may go with the close, and the ack, in one `channel-reply`), keepalive both ways with a deadline (a silent peer is declared dead within
 * `deadAfterMs` plus a quarter of it), a frame size limit in both directions (an oversized send
 * fails that send; an oversized inbound frame closes the link), and link loss failing every channel
 * at once with reason `host-offline`. Frames for unknown channels are counted and ignored, except
 * those on a channel this end closed a moment ago, which the peer sent before it heard (`recent-closes.ts`).
 * And who wrote an answer, where the host announced `host-answers`: the worker asks on each open,
 * the host sets `own: true` on the frame of an answer it marked as its own, and the worker marks
 * the message it reads from such a frame (`audit/host-answers.ts`), for its audit.
 * And flow control, on a socket that reports its writes (the sidecar's): a channel whose frames
 * wait in the socket past its budget, or every channel while the whole link holds too much,
 * holds back the server that feeds it (`link-flow.ts`); its channels' frames leave in turns, a
 * large one in pieces where the worker reads them (`link-sender.ts`), which the worker joins
 * (`#piece`).
 *
 * Every inbound frame gets one `JSON.parse` and the zod frame schema; nothing is logged per
 * message. Measured (npm run bench, 2 shared cores): 2 frames and ~305 bytes of payload per echo
 * call; 5.8 µs CPU per round trip for link plus sidecar bridge; a killed sidecar is reported as
 * `host-offline` to the agent in 31-92 ms, and a restarted worker is relinked in 48-330 ms.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, LocalError, WireError, type FailureReason } from '../errors.ts';
import { MAX_JSON_DEPTH } from '../json-depth.ts';
import { isLogWorthy } from '../log.ts';
import { rawTextOf } from '../raw-message-text.ts';
import { channelPartHeader, clipFrameMessage as clip, LINK_PROTOCOL_VERSION, MAX_FRAME_BYTES, type Frame, type FrameOf } from '../frames.ts';
import { hostAnswer } from '../audit/host-answers.ts';
import { DeferredAcks } from './deferred-acks.ts';
import { closeQuietly, type FrameSocket } from './frame-socket.ts';
import { exceeds, readFrame, type ReadFrame } from './frame-reader.ts';
import { McpChannelClientTransport, type ChannelIo } from './mcp-channel-client-transport.ts';
import { PendingOpens, type PendingOpen } from './pending-opens.ts';
import { RecentCloses } from './recent-closes.ts';
import { KEEPALIVE_FRAME, LinkLiveness } from './link-liveness.ts';
import { LinkFlow } from './link-flow.ts';
import { ACK_STALL_MS, LinkSender, PARTED_FRAMES, partedHeldLimit } from './link-sender.ts';

import { unrefTimer } from '../unref-timer.ts';
import type { ChannelOpenHandler, LinkCloseInfo, LinkEndpointOptions, LinkLogger, LinkRole, LinkStats, OpenChannelOptions } from './link-types.ts';
import type { HostRoster } from './host-roster.ts';

/** What one piece of a frame counts against `partedHeldLimit` at least: a sender's pieces are `PART_CHARS` long, but the last. */
const PIECE_FLOOR_CHARS = 1024;

export { exceeds } from './frame-reader.ts';
export { REMEMBERED_CLOSES } from './recent-closes.ts';
export type { ChannelOpenHandler, LinkCloseInfo, LinkEndpointOptions, LinkLogger, LinkRole, LinkStats, OpenChannelOptions } from './link-types.ts';

const SILENT: LinkLogger = { info() {}, warn() {} };

/**
 * A frame of `type` carrying `message`, a large result forwarded unchanged as the text it came in
 * (`raw-message-text.ts`); `own`: marked as the host's own answer (`host-answers`).
 */
function carrying(type: 'channel-message' | 'channel-reply', channel: number, message: JSONRPCMessage, own: boolean): Frame | string {
  const raw = rawTextOf(message);
  if (raw !== undefined) return `{"v":${LINK_PROTOCOL_VERSION},"type":"${type}","channel":${channel},${own ? '"own":true,' : ''}"message":${raw}}`;
  return own ? { v: LINK_PROTOCOL_VERSION, type, channel, message, own } : { v: LINK_PROTOCOL_VERSION, type, channel, message };
}
const MAX_CHANNEL_ID = 2 ** 31;
/** The link's own frames, as against its channels': a paced link neither counts nor acknowledges them. */
const LINK_LEVEL: ReadonlySet<string> = new Set(['keepalive', 'keepalive-reply', 'link-ack', 'link-close']);

/**
 * The agent a channel's open names (`connection.agent`), '' when none: the sender's turns go by
 * it (`link-sender.ts`), and the worker's end bounds what it keeps waiting for it
 * (`#agentRefusal`). The worker wrote it; the sidecar reads it before the open's handler checks
 * the request, for the order of turns alone: a request that names none, or is refused, costs
 * nobody else a turn.
 */
function agentOf(request: unknown): string {
  const connection = typeof request === 'object' && request !== null ? (request as { connection?: unknown }).connection : undefined;
  const agent = typeof connection === 'object' && connection !== null ? (connection as { agent?: unknown }).agent : undefined;
  return typeof agent === 'string' ? agent : '';
}
/** Each end of a paced link acknowledges the other's frames once it read this much of them (a sixteenth of the least window)… */
export const ACK_EVERY_CHARS = 64 * 1024;
/** …or this long after the first it has not acknowledged. */
export const ACK_DELAY_MS = 1000;

export class LinkEndpoint {
  /** Settles once, when the link has ended for any cause. */
  readonly whenClosed: Promise<LinkCloseInfo>;
  /**
   * Measurement tap (`npm run bench` counts frames and bytes per call with it): sees the text of
   * every frame sent (`out`) or received (`in`). Unset in production, where it costs one check.
   */
  onFrame: ((direction: 'in' | 'out', text: string) => void) | undefined = undefined;
  readonly role: LinkRole;
  readonly peer: string;
  readonly #socket: FrameSocket;
  readonly #onOpen: ChannelOpenHandler | undefined;
  readonly #log: LinkLogger;
  readonly #max: number;
  readonly #openTimeoutMs: number;
  /** What the peer announced it reads (`link-features.ts`); open-first is the one the worker uses. */
  readonly peerFeatures: NonNullable<LinkEndpointOptions['peerFeatures']>;
  readonly #opensWithFirst: boolean;
  /** Worker end: the host may answer an open that carries `first` with one `channel-reply` (`open-reply`). */
  readonly #asksReply: boolean;
  /** Worker end: every open asks the host to mark its own answers, and only then is a mark believed (`host-answers`). */
  readonly #asksOwn: boolean;
  readonly #channels = new Map<number, McpChannelClientTransport>();
  readonly #pending = new PendingOpens();
  /** Host end: accepted pipelined opens whose ack waits for the channel's first frame out. */
  readonly #acks = new DeferredAcks((id) => this.#trySend({ v: LINK_PROTOCOL_VERSION, type: 'channel-open-ack', channel: id }));
  /** Channels this end closed lately, whose late frames from the peer are expected (`recent-closes.ts`). */
  readonly #closedHere = new RecentCloses();
  readonly #io: ChannelIo;
  readonly #liveness: LinkLiveness | null;
  /** Null where the socket does not report its writes, or flow control is off. */
  readonly #flow: LinkFlow | null;
  readonly #onRoom: (() => void) | undefined;
  readonly #onRoster: LinkEndpointOptions['onRoster'];
  /** Worker end: the roster last sent (JSON), so a reload that changed nothing of this host's sends none. */
  #rosterSent: string | undefined = undefined;
  /** Takes every frame where there is flow control: channels in turns, large frames in pieces. */
  readonly #sender: LinkSender | null;
  /** Both ends agreed on pacing (`paced`): each sends pieces within a window, reads the other's pieces and acknowledges them. */
  readonly #paced: boolean;
  /** A paced link: the peer's frames read and not yet acknowledged, their size, and the timer that acknowledges them at the latest. */
  #unackedFrames = 0;
  #unackedChars = 0;
  #ackTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  readonly #ackEveryChars: number;
  readonly #ackDelayMs: number;
  /**
   * This end's keepalives awaiting their reply, and when the one timed went (ms,
   * `performance.now()`; 0: none): its reply's round trip is the window's (`link-window.ts`).
   * Replies are all alike, so only a keepalive sent with none unanswered is timed: the next reply
   * is its own.
   */
  #pingsOut = 0;
  #pingAt = 0;
  /** Pieces of a frame received so far, by channel, and their size in all (`#piece`). */
  readonly #pieces = new Map<number, { texts: string[]; chars: number; counted: number }>();
  #pieceChars = 0;
  /** Times the whole link was full, so the log tells of the 1st, 10th, 100th, … */
  #fullTimes = 0;
  #framesIn = 0;
  #resolveClosed!: (info: LinkCloseInfo) => void;
  #closed = false;
  #nextId = 1;
  #unknown = 0;
  #malformed = 0;

  constructor(socket: FrameSocket, options: LinkEndpointOptions) {
    this.role = options.role;
    this.peer = options.peer ?? (options.role === 'worker' ? 'host' : 'worker');
    this.#socket = socket;
    this.#onOpen = options.onOpen;
    this.#log = options.log ?? SILENT;
    this.#max = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    this.#openTimeoutMs = options.openTimeoutMs ?? 30_000;
    this.#opensWithFirst = (this.peerFeatures = options.peerFeatures ?? new Set()).has('open-first');
    this.#asksReply = this.#opensWithFirst && this.peerFeatures.has('open-reply');
    this.#asksOwn = this.peerFeatures.has('host-answers');
    this.whenClosed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#io = {
      send: (channel, message, own) => this.#sendMessage(channel, message, own),
      close: (channel, info) => this.#closeChannel(channel, info),
      reply: (channel, message, own) => this.#replyChannel(channel, message, own),
      refusal: (channel) => this.#agentRefusal(channel.group),
    };
    socket.onmessage = (text) => this.#onText(text);
    this.#paced = options.paced === true;
    // A socket that reports its writes (the sidecar's) counts them; on a paced link the peer's
    // acks count what it read, which a socket that reports nothing (the worker's) goes by alone.
    const tracksWrites = socket.tracksWrites === true;
    this.#onRoom = options.onRoom;
    this.#onRoster = options.onRoster;
    const flow = options.flow === false || !(tracksWrites || this.#paced) ? null : new LinkFlow(options.flow, () => this.#channels.values(), {
      held: (queued) => {
        if (!isLogWorthy(++this.#fullTimes)) return;
        const fields = { peer: this.peer, queuedBytes: queued, limitBytes: this.#flow?.limits.linkBytes ?? null, times: this.#fullTimes };
        if (this.role === 'sidecar') this.#log.info('Link is full: its busy channels hold their server\'s output until it drains', fields);
        else this.#log.info('Link is full: agents\' messages to this host wait in the worker until it drains', fields);
      },
      released: () => this.#onRoom?.(),
    });
    this.#flow = flow;
    this.#ackEveryChars = options.acks?.everyChars ?? ACK_EVERY_CHARS;
    this.#ackDelayMs = options.acks?.delayMs ?? ACK_DELAY_MS;
    if (flow === null) this.#sender = null;
    else {
      const sender = new LinkSender(flow, {
        ...options.sender,
        write: (text) => {
          socket.send(text);
          this.onFrame?.('out', text);
        },
        writeUtf8: socket.sendUtf8 === undefined ? undefined : (bytes) => {
          socket.sendUtf8!(bytes);
          if (this.onFrame !== undefined) this.onFrame('out', new TextDecoder().decode(bytes));
        },
        part: this.#paced ? channelPartHeader : null,
        window: this.#paced ? (options.sender?.window ?? {}) : null,
        ...(tracksWrites ? {} : { acksAreWrites: true, socketBytes: Infinity }),
      });
      if (options.handshakeRttMs !== undefined) sender.rtt(options.handshakeRttMs);
      this.#sender = sender;
      if (tracksWrites) socket.onwritten = () => sender.written();
    }
    socket.onclose = (info) =>
      this.#teardown({ reason: 'host-offline', message: `Link socket closed${info.code === undefined ? '' : ` (code ${info.code})`}`, by: 'socket' }, 'none');
    const deadAfterMs = options.deadAfterMs ?? 20_000;
    this.#liveness = options.liveness === false ? null : new LinkLiveness({
      keepaliveMs: options.keepaliveIntervalMs ?? 10_000,
      deadAfterMs,
      ping: () => {
        if (this.#pingsOut++ === 0) this.#pingAt = performance.now();
        this.#sendLinkFrame(KEEPALIVE_FRAME);
        this.#sender?.idle();
        this.#checkAcks();
      },
      dead: (silentMs) => {
        this.#log.warn('Link is dead', { peer: this.peer, silentMs });
        this.closeAsDead(deadAfterMs);
      },
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Worker end: tells the host its roster (`host-roster.ts`), where it announced `roster` and the
   * roster differs from the one it was last told. False when nothing went.
   */
  tellRoster(roster: HostRoster): boolean {
    if (this.role !== 'worker' || this.#closed || !this.peerFeatures.has('roster')) return false;
    const text = JSON.stringify(roster);
    if (text === this.#rosterSent) return false;
    if (!this.#trySend({ v: LINK_PROTOCOL_VERSION, type: 'link-roster', agents: roster })) return false;
    this.#rosterSent = text;
    return true;
  }

  /** This end's flow is past the link's budget (`link-flow.ts`): what waits for room waits on (`onRoom`). */
  get full(): boolean {
    return !this.#closed && (this.#flow?.over ?? false);
  }

  /**
   * Whether more of `agent`'s output may come onto the link now: it is not full, or that agent has
   * no more than a quiet channel's share waiting for its turns on it (`quietBytes`, as its busy
   * channels are held and its quiet ones go on).
   */
  hasRoomFor(agent: string): boolean {
    if (!this.full) return true;
    return (this.#sender?.waitingOf(agent) ?? 0) <= this.#flow!.limits.quietBytes;
  }

  get stats(): LinkStats {
    const flow = this.#flow;
    return {
      channels: this.#channels.size,
      framesIn: this.#framesIn,
      unknownChannelFrames: this.#unknown,
      malformedFrames: this.#malformed,
      queuedBytes: flow?.queued ?? 0,
      peakQueuedBytes: flow?.peak ?? 0,
      heldChannels: flow?.heldCount ?? 0,
      unackedBytes: this.#sender?.inFlight ?? 0,
      waitingFrames: this.#sender?.waitingFrames ?? 0,
      windowBytes: this.#paced ? (this.#sender?.windowBytes ?? 0) : 0,
      roundTripMs: this.#paced ? (this.#sender?.roundTripMs ?? null) : null,
    };
  }

  /**
   * Worker end: opens a channel to the host with `request` (an McpConnectionRequest). Resolves on
   * the ack with the channel, not yet started; rejects with the host's `WireError` on open-error,
   * `request-timeout` when no answer comes in time (the caller's `signal`, else `openTimeoutMs`),
   * and `host-offline` when the link is (or goes) down.
   */
  openChannel(request: unknown, options: OpenChannelOptions = {}): Promise<McpChannelClientTransport> {
    if (this.role !== 'worker') throw new LocalError('wrong-link-role', 'Only the worker end of a link opens channels');
    if (this.#closed) return Promise.reject(this.#offline());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(this.#givenUp(signal));
    const group = agentOf(request);
    const refused = this.#agentRefusal(group);
    if (refused !== null) return Promise.reject(refused);
    const id = this.#allocateId();
    const channel = new McpChannelClientTransport(id, this.#io);
    channel.refusesRequestsWhenHeld = this.#paced;
    channel.group = group;
    return new Promise<McpChannelClientTransport>((resolve, reject) => {
      const giveUp = (error: WireError) => {
        if (this.#pending.get(id)?.channel !== channel) return;
        this.#pending.take(id);
        void channel.close({ reason: error.reason, message: error.message });
        reject(error);
      };
      let stopWaiting: () => void;
      if (signal !== undefined) {
        const onAbort = () => giveUp(this.#givenUp(signal));
        signal.addEventListener('abort', onAbort); // no `{ once: true }`: Deno converts options per call (issue 17)
        stopWaiting = () => signal.removeEventListener('abort', onAbort);
      } else {
        const timeoutMs = this.#openTimeoutMs;
        const timer = setTimeout(() => giveUp(new WireError('request-timeout', `Host "${this.peer}" did not answer the channel open within ${timeoutMs} ms`)), timeoutMs);
        stopWaiting = () => clearTimeout(timer);
      }
      this.#pending.add(id, { channel, resolve, reject, stopWaiting });
      this.#channels.set(id, channel);
      const { first } = options;
      // To a host that reads `open-first`, one frame and one socket write for both (`link-features.ts`);
      // if they are too large together, or the link is down, the two frames below go or fail as ever.
      // To one that reads `open-reply` too, the open asks for the answer and the close in one frame.
      // To one that reads `host-answers`, every open asks for the host's own answers marked.
      let opening: FrameOf<'channel-open'> | undefined;
      if (first !== undefined && this.#opensWithFirst) {
        opening = this.#asksReply
          ? { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel: id, request, first, reply: true }
          : { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel: id, request, first };
        if (this.#asksOwn) opening.own = true;
      }
      // The channel's own frames, its open first: in its turn on a paced link, in pieces if large.
      if (opening !== undefined && this.#trySend(opening, channel)) {
        channel.sentAhead = first;
        return;
      }
      try {
        this.#sendFrame(this.#asksOwn ? { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel: id, request, own: true } : { v: LINK_PROTOCOL_VERSION, type: 'channel-open', channel: id, request }, channel);
      } catch (error) {
        this.#pending.take(id);
        this.#channels.delete(id);
        reject(error);
        return;
      }
      if (first === undefined) return;
      try {
        this.#sendMessage(channel, first, false);
        channel.sentAhead = first;
      } catch {
        // Too large for a frame: left for the caller to send after the ack, where it fails as any send does.
      }
    });
  }

  /** Ends the link: tells the peer with link-close, closes the socket, fails every channel. */
  close(info: { reason?: FailureReason; message?: string } = {}): void {
    if (this.#closed) return;
    this.#teardown({ ...(info.reason ? { reason: info.reason } : {}), message: clip(info.message ?? 'Link closed'), by: 'this-end' }, 'tell-and-close');
  }

  /**
   * Ends a link whose peer sent nothing for `silentForMs`, found by this end's own keepalive or by
   * a runtime that answers the keepalives itself (Workers): the socket is dropped, no link-close.
   */
  closeAsDead(silentForMs: number): void {
    this.#teardown({ reason: 'host-offline', message: `No frame from ${this.peer} for ${silentForMs} ms: the link is dead`, by: 'silence' }, 'abort');
  }

  #allocateId(): number {
    for (;;) {
      const id = this.#nextId;
      this.#nextId = id >= MAX_CHANNEL_ID ? 1 : id + 1;
      if (!this.#channels.has(id) && !this.#closedHere.has(id)) return id;
    }
  }

  #onText(text: string): void {
    // After this end closed the link, what the peer sent meanwhile (its own shutdown crossing
    // ours) has no channel to go to and is nothing to warn about.
    if (this.#closed) return;
    this.onFrame?.('in', text);
    this.#framesIn++;
    this.#liveness?.heard();
    const read = readFrame(text, this.#max);
    this.#take(read, text);
    // The link's own frames are never counted: acks of acks would never end, and a Durable
    // Object's keepalive replies come from its runtime, which counts nothing.
    if (this.#paced && !this.#closed && (read.kind !== 'frame' || !LINK_LEVEL.has(read.frame.type))) this.#read(text.length);
  }

  /**
   * A paced link: one more of the peer's frames read. Acknowledged once this much is read (after
   * it was handled, so that an end busy with a large message slows its peer), and within
   * `ackDelayMs` in any case: a window never waits long on the last few frames, and a Durable
   * Object acknowledges all it read before it may sleep and lose its count.
   */
  #read(chars: number): void {
    this.#unackedFrames++;
    if ((this.#unackedChars += chars) >= this.#ackEveryChars) this.#acknowledge();
    else if (this.#ackTimer === undefined) {
      this.#ackTimer = setTimeout(() => this.#acknowledge(), this.#ackDelayMs);
      unrefTimer(this.#ackTimer);
    }
  }

  /**
   * Worker end of a paced link: refuses agent `group`'s new request (a channel's open, a session's
   * request) while its messages to the host wait here past its budget (`AGENT_QUEUE_BYTES`), until
   * they drain; null where it may go. An agent that sends faster than the link carries is told so,
   * rather than queue without bound in the worker.
   */
  #agentRefusal(group: string): WireError | null {
    const sender = this.#sender;
    if (sender === null || !this.#paced || this.role !== 'worker') return null;
    const waiting = sender.waitingOf(group);
    if (waiting <= this.#flow!.limits.agentBytes) return null;
    return new WireError('limit-reached', `This agent's earlier messages to the host wait in the worker, more than the link takes at once: wait for their answers before sending more`, { detail: { waitingBytes: waiting } });
  }

  /** A paced link whose peer acknowledged nothing for `ACK_STALL_MS` while frames were on their way: it lost count, and the window starts afresh. */
  #checkAcks(): void {
    const sender = this.#sender;
    if (sender === null || !this.#paced || !sender.stalled()) return;
    this.#log.warn(`The other end of the link acknowledged nothing for ${ACK_STALL_MS / 1000} s: its window starts afresh`, { peer: this.peer, unackedBytes: sender.inFlight });
    sender.restartWindow();
  }

  #acknowledge(): void {
    if (this.#ackTimer !== undefined) clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    const frames = this.#unackedFrames;
    if (frames === 0 || this.#closed) return;
    this.#unackedFrames = 0;
    this.#unackedChars = 0;
    this.#sendLinkFrame({ v: LINK_PROTOCOL_VERSION, type: 'link-ack', frames });
  }

  #take(read: ReadFrame, text: string): void {
    switch (read.kind) {
      case 'message':
      case 'reply':
        return this.#arrived(read);
      case 'too-deep':
        return this.#tooDeep(read);
      case 'frame':
        return this.#dispatch(read.frame);
      case 'part':
        return this.#piece(read);
      case 'malformed':
        return this.#badFrame(read.problem);
      case 'too-large':
        return this.#tooLarge(text.length);
      case 'wrong-version':
        return this.#teardown(
          { reason: 'invalid-request', message: `Unsupported link protocol version ${read.version}: this end speaks version ${LINK_PROTOCOL_VERSION}`, by: 'this-end' },
          'tell-and-close',
          1002,
        );
    }
  }

  #arrived(read: Extract<ReadFrame, { kind: 'message' | 'reply' }>): void {
    // A host's mark is believed where this end asked for marks, and there only (`host-answers`).
    if (read.own === true && this.#asksOwn) hostAnswer(read.message);
    if (read.kind === 'reply') return this.#replied(read.channel, read.message);
    const channel = this.#channels.get(read.channel);
    if (channel === undefined) this.#unknownChannel(read.channel, false);
    else this.#deliver(read.channel, channel, read.message);
  }

  #tooLarge(chars: number, heldChars?: number): void {
    this.#log.warn('Link frame too large', { peer: this.peer, chars, limit: this.#max, ...(heldChars !== undefined ? { heldChars } : {}) });
    this.#teardown({ reason: 'invalid-request', message: `Incoming link frame exceeds the ${this.#max} byte limit`, by: 'this-end' }, 'tell-and-close', 1009);
  }

  /**
   * A paced link: a piece of a large frame (`link-sender.ts`). A channel's pieces are held until
   * its last, then read as the frame they make, which must be that channel's `channel-open` (with
   * a large first message), `channel-message` or `channel-reply`. What is held counts against the
   * frame limit per frame, and against `partedHeldLimit` in all (what a peer that follows the
   * rules makes it hold at most): a peer past either has its link ended, as for an oversized frame.
   */
  #piece(frame: Extract<ReadFrame, { kind: 'part' }>): void {
    if (!this.#paced) return this.#badFrame('channel-part where this end did not say it reads them');
    const id = frame.channel;
    // A sender cuts no empty piece but a frame's last: empty ones would be held at no cost.
    if (frame.text.length === 0 && !frame.last) return this.#badFrame('an empty channel-part that is not its frame\'s last');
    let held = this.#pieces.get(id);
    if (held === undefined) {
      // A sender has at most PARTED_FRAMES frames in pieces at once, each finished before its channel's next frame.
      if (this.#pieces.size >= PARTED_FRAMES) {
        this.#log.warn('Link peer has too many frames in pieces', { peer: this.peer, limit: PARTED_FRAMES });
        return this.#teardown({ reason: 'invalid-request', message: `Incoming link frames in pieces exceed ${PARTED_FRAMES} at once`, by: 'this-end' }, 'tell-and-close', 1008);
      }
      this.#pieces.set(id, (held = { texts: [], chars: 0, counted: 0 }));
    }
    held.texts.push(frame.text);
    held.chars += frame.text.length;
    // Each piece counts at least PIECE_FLOOR_CHARS in all, so that many tiny pieces cannot hold more memory than their characters say.
    const counted = Math.max(frame.text.length, PIECE_FLOOR_CHARS);
    held.counted += counted;
    this.#pieceChars += counted;
    if (held.chars > this.#max || this.#pieceChars > partedHeldLimit(this.#max)) return this.#tooLarge(held.chars, this.#pieceChars);
    if (!frame.last) return;
    this.#pieces.delete(id);
    this.#pieceChars -= held.counted;
    const read = readFrame(held.texts.join(''), this.#max);
    if ((read.kind === 'message' || read.kind === 'reply') && read.channel === id) return this.#arrived(read);
    if (read.kind === 'frame' && read.frame.type === 'channel-open' && read.frame.channel === id) return this.#dispatch(read.frame);
    if (read.kind === 'too-deep' && read.channel === id) return this.#tooDeep(read);
    if (read.kind === 'too-large') return this.#tooLarge(held.chars);
    this.#badFrame(`the pieces of a channel-part on channel ${id} make no channel-open, channel-message or channel-reply of that channel`);
  }

  /**
   * Hands one message to its channel. The channel's consumer runs synchronously from the socket's
   * message handler, so an exception there would reach the event loop and end the process with
   * every other channel: it is logged, and a request is answered instead.
   */
  #deliver(id: number, channel: McpChannelClientTransport, message: JSONRPCMessage): void {
    try {
      channel.receive(message);
    } catch (error) {
      this.#log.warn('A channel failed to handle a message', { peer: this.peer, channel: id, error: error instanceof Error ? error.name : typeof error });
      const requestId = 'method' in message && 'id' in message ? message.id : undefined;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
      const failure = new WireError('invalid-request', `The message could not be handled on the ${this.role === 'sidecar' ? 'host' : 'worker'}: see its log`);
      this.#trySend(this.#ownAnswer(channel, jsonRpcErrorBody(requestId, failure) as JSONRPCMessage), channel);
    }
  }

  /**
   * A frame nested deeper than a JSON-RPC message may be: refused, and never dropped silently
   * where someone waits on it. A request is answered to the peer that sent it, an answer becomes
   * an error for the local side that asked, a channel-open is refused.
   */
  #tooDeep(read: { type: string; channel: number | null; id: string | number | null; request: boolean }): void {
    this.#malformed++;
    if (isLogWorthy(this.#malformed)) this.#log.warn('Refused a link frame nested too deep', { peer: this.peer, type: read.type, count: this.#malformed });
    const id = read.channel;
    if (id === null) return;
    if (read.type === 'channel-open') {
      if (this.role === 'sidecar' && !this.#channels.has(id)) {
        this.#refuseOpen(id, `Connection request nested deeper than ${MAX_JSON_DEPTH} levels`);
      }
      return;
    }
    const refusal = (what: string) => jsonRpcErrorBody(read.id, new WireError('invalid-request', `${what} nested deeper than ${MAX_JSON_DEPTH} levels`)) as JSONRPCMessage;
    // A reply ends its channel whatever it carried: the caller gets the refusal of an answer, or the close.
    if (read.type === 'channel-reply') return this.#replied(id, read.id === null || read.request ? null : refusal('Response'));
    if (read.type !== 'channel-message' || read.id === null) return;
    const channel = this.#channels.get(id);
    if (channel === undefined) return this.#unknownChannel(id, false);
    if (read.request) this.#trySend(this.#ownAnswer(channel, refusal('Request')), channel);
    else this.#deliver(id, channel, refusal('Response'));
  }

  /** A `channel-message` with an answer this end wrote itself: on the host, marked as its own where the worker asked. */
  #ownAnswer(channel: McpChannelClientTransport, message: JSONRPCMessage): Frame {
    return channel.marksOwn
      ? { v: LINK_PROTOCOL_VERSION, type: 'channel-message', channel: channel.id, message: hostAnswer(message), own: true }
      : { v: LINK_PROTOCOL_VERSION, type: 'channel-message', channel: channel.id, message };
  }

  #dispatch(frame: Frame): void {
    switch (frame.type) {
      case 'channel-open':
        return this.#acceptOpen(frame.channel, frame.request, frame.first, frame.reply === true, frame.own === true);
      case 'channel-open-ack': {
        const pending = this.#pending.take(frame.channel);
        if (pending === undefined) return this.#unknownChannel(frame.channel, false);
        pending.resolve(pending.channel);
        return;
      }
      case 'channel-open-error': {
        const pending = this.#pending.take(frame.channel);
        if (pending === undefined) return this.#unknownChannel(frame.channel, true);
        this.#settleRefused(frame.channel, pending, frame.reason, frame.message);
        return;
      }
      case 'channel-close': {
        const channel = this.#channels.get(frame.channel);
        if (channel === undefined) return this.#unknownChannel(frame.channel, true);
        const pending = this.#pending.take(frame.channel);
        if (pending !== undefined) {
          this.#settleRefused(frame.channel, pending, frame.reason ?? 'server-exited', frame.message ?? 'The host closed the channel before it opened');
          return;
        }
        this.#channels.delete(frame.channel);
        this.#acks.drop(frame.channel);
        channel.remoteClosed({ ...(frame.reason ? { reason: frame.reason } : {}), ...(frame.message ? { message: frame.message } : {}) });
        return;
      }
      case 'link-ack':
        if (!this.#paced || this.#sender === null) return this.#badFrame('link-ack where this end does not pace what it sends');
        return this.#sender.acked(frame.frames);
      case 'keepalive':
        this.#sendLinkFrame({ v: LINK_PROTOCOL_VERSION, type: 'keepalive-reply', id: frame.id });
        return;
      case 'keepalive-reply':
        if (this.#pingsOut === 0) return;
        this.#pingsOut--;
        if (this.#pingAt !== 0) this.#sender?.rtt(performance.now() - this.#pingAt);
        this.#pingAt = 0;
        return;
      case 'link-close':
        this.#teardown({ ...(frame.reason ? { reason: frame.reason } : {}), message: frame.message, by: 'peer' }, 'close');
        return;
      case 'link-roster':
        if (this.role !== 'sidecar') return this.#badFrame('link-roster from a host: only the worker sends a roster');
        // Never out of the dispatch: a throw there would leave the frame unacknowledged and, under
        // `ws`, the socket reading nothing more. Only idle processes go unended.
        try {
          this.#onRoster?.(frame.agents);
        } catch (error) {
          this.#log.warn('Roster from the worker not applied', { peer: this.peer, error: error instanceof Error ? error.message : String(error) });
        }
        return;
      case 'link-challenge':
      case 'link-proof':
      case 'link-accepted':
        // The handshake ran before this endpoint existed (link-handshake.ts); a late one means nothing.
        return this.#badFrame(`${frame.type} after the link handshake`);
    }
  }

  /** Settles an open taken from `#pending` as refused by the host. */
  #settleRefused(id: number, pending: PendingOpen, reason: FailureReason, message: string): void {
    this.#channels.delete(id);
    pending.channel.remoteClosed({ reason, message });
    pending.reject(new WireError(reason, message));
  }

  /** `owner`: the channel refused after it was registered, whose frames queued meanwhile go first. */
  #refuseOpen(id: number, message: string, reason: FailureReason = 'invalid-request', owner: McpChannelClientTransport | null = null): void {
    this.#trySend({ v: LINK_PROTOCOL_VERSION, type: 'channel-open-error', channel: id, reason, message }, owner);
  }

  #acceptOpen(id: number, request: unknown, first: JSONRPCMessage | undefined, readsReply: boolean, marksOwn: boolean): void {
    const onOpen = this.#onOpen;
    if (this.role !== 'sidecar' || onOpen === undefined) return this.#refuseOpen(id, 'This end of the link does not accept channels');
    if (this.#channels.has(id)) return this.#refuseOpen(id, `Channel ${id} is already open`);
    // Registered before the handler decides, so what came with or right behind the open (a modern
    // request, `OpenChannelOptions.first`) waits in the channel's queue: only the handler starting
    // it delivers that, and a refused or abandoned open is never started.
    const channel = new McpChannelClientTransport(id, this.#io);
    channel.group = agentOf(request);
    channel.readsReply = readsReply;
    channel.marksOwn = marksOwn;
    this.#channels.set(id, channel);
    this.#closedHere.forget(id);
    this.#flow?.opened(channel);
    if (first !== undefined) channel.receive(first);
    onOpen(request, channel).then(
      () => {
        if (this.#channels.get(id) !== channel || channel.closed) return;
        // A pipelined open (its first message came right behind it): the ack goes with the
        // channel's first frame out (`deferred-acks.ts`).
        if (channel.heard) this.#acks.defer(id);
        else this.#trySend({ v: LINK_PROTOCOL_VERSION, type: 'channel-open-ack', channel: id });
      },
      (error: unknown) => {
        const wire = error instanceof WireError ? error : null;
        if (wire === null) this.#log.warn('Channel open failed', { peer: this.peer, channel: id, error });
        const reason = wire?.reason ?? 'launch-failed';
        const message = clip(wire?.message ?? 'The host failed to open the channel');
        if (this.#channels.get(id) === channel) {
          this.#channels.delete(id);
          this.#closedHere.remember(id);
          this.#refuseOpen(id, message, reason, channel);
        }
        channel.remoteClosed({ reason, message });
      },
    );
  }

  #sendMessage(channel: McpChannelClientTransport, message: JSONRPCMessage, own: boolean): void {
    if (this.#closed) throw this.#offline();
    const id = channel.id;
    this.#acks.flush(id);
    this.#sendFrame(carrying('channel-message', id, message, own), channel);
  }

  #closeChannel(channel: McpChannelClientTransport, info: { reason?: FailureReason; message?: string }): void {
    if (this.#channels.get(channel.id) !== channel) return;
    // Accepted, then closed: the worker hears the ack first, so the close is not taken for a refusal.
    this.#acks.flush(channel.id);
    this.#channels.delete(channel.id);
    this.#pending.take(channel.id);
    if (this.#closed) return;
    this.#closedHere.remember(channel.id);
    // The channel's own: it leaves behind what the channel sent before.
    this.#trySend({
      v: LINK_PROTOCOL_VERSION,
      type: 'channel-close',
      channel: channel.id,
      ...(info.reason ? { reason: info.reason } : {}),
      ...(info.message ? { message: clip(info.message) } : {}),
    }, channel);
  }

  /**
   * Host end: `message` and the channel's close in one `channel-reply`, which also stands for an
   * ack still held. Only where the worker asked for it on the open; false, with nothing sent, where
   * it did not or the frame cannot go (too large, the link down), for the caller to send and close
   * as ever, which then fails or succeeds as it always did.
   */
  #replyChannel(channel: McpChannelClientTransport, message: JSONRPCMessage, own: boolean): boolean {
    const id = channel.id;
    if (!channel.readsReply || this.#closed || this.#channels.get(id) !== channel) return false;
    try {
      this.#sendFrame(carrying('channel-reply', id, message, own), channel);
    } catch {
      return false;
    }
    this.#acks.drop(id);
    this.#channels.delete(id);
    this.#closedHere.remember(id);
    return true;
  }

  /**
   * Worker end: a `channel-reply`: the open resolves if it still waits, the message (none when it
   * was refused unread) is delivered, and the channel closes in order behind it. The channel's
   * consumer gets the message before the close even when it starts later (`ChannelTransport`).
   */
  #replied(id: number, message: JSONRPCMessage | null): void {
    const channel = this.#channels.get(id);
    if (channel === undefined) return this.#unknownChannel(id, true);
    this.#channels.delete(id);
    this.#acks.drop(id);
    this.#pending.take(id)?.resolve(channel);
    if (message !== null) this.#deliver(id, channel, message);
    channel.remoteClosed({});
  }

  /**
   * Sends one frame, counted against `owner`'s budget where there is flow control; throws
   * `WireError` when it is too large (never truncated) or the link is down.
   */
  #sendFrame(frame: Frame | string, owner: McpChannelClientTransport | null = null): void {
    const text = typeof frame === 'string' ? frame : JSON.stringify(frame);
    if (exceeds(text, this.#max)) {
      throw new WireError('invalid-request', `Message too large for the link: more than the ${this.#max} byte frame limit`);
    }
    try {
      // The sender counts a frame only once the socket took it: a frame it refused is never reported written.
      if (this.#sender !== null) return this.#sender.send(owner, text);
      this.#socket.send(text);
    } catch (cause) {
      throw new WireError('host-offline', `Link to ${this.peer} is closed`, { cause });
    }
    this.onFrame?.('out', text);
  }

  /**
   * One of the link's own frames (`LINK_LEVEL`), at once and outside any window: best effort, as
   * `#trySend`; false when it did not go.
   */
  #sendLinkFrame(frame: Frame): boolean {
    const text = JSON.stringify(frame);
    try {
      if (this.#sender !== null) this.#sender.sendUncounted(text);
      else this.#socket.send(text);
    } catch {
      return false;
    }
    if (this.#sender === null) this.onFrame?.('out', text);
    return true;
  }

  /**
   * False when the frame did not go. Control frames are best effort: a closed socket tears the
   * link down through onclose. `owner`: the channel whose order the frame keeps.
   */
  #trySend(frame: Frame, owner: McpChannelClientTransport | null = null): boolean {
    try {
      this.#sendFrame(frame, owner);
      return true;
    } catch {
      return false;
    }
  }

  #badFrame(what: string): void {
    this.#malformed++;
    if (isLogWorthy(this.#malformed)) this.#log.warn('Ignored a malformed link frame', { peer: this.peer, problem: what, count: this.#malformed });
  }

  /** A frame for no open channel; `last`: the peer's final frame on it (channel-close, channel-open-error). */
  #unknownChannel(id: number, last: boolean): void {
    if (this.#closedHere.has(id)) {
      if (last) this.#closedHere.forget(id);
      return;
    }
    this.#unknown++;
    if (isLogWorthy(this.#unknown)) this.#log.warn('Ignored a frame for an unknown channel', { peer: this.peer, channel: id, count: this.#unknown });
  }

  #givenUp(signal: AbortSignal): WireError {
    const reason: unknown = signal.reason;
    return reason instanceof WireError ? reason : new WireError('request-timeout', `Host "${this.peer}" did not answer the channel open in time`);
  }

  #offline(): WireError {
    return new WireError('host-offline', this.role === 'worker' ? `Host "${this.peer}" is offline` : 'The link to the worker is closed');
  }

  /**
   * Ends the link locally. `socketAction`: the socket is already gone (`none`), close it after
   * the peer's link-close (`close`), tell the peer why and close (`tell-and-close`), or drop it
   * without a handshake because the peer is dead (`abort`).
   */
  #teardown(info: LinkCloseInfo, socketAction: 'none' | 'close' | 'tell-and-close' | 'abort', code = 1000): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#liveness?.stop();
    // What the channels sent before the end leaves before it, as when every frame went to the socket at once.
    if (socketAction === 'close' || socketAction === 'tell-and-close') this.#sender?.flush();
    if (socketAction === 'tell-and-close') {
      this.#sendLinkFrame({ v: LINK_PROTOCOL_VERSION, type: 'link-close', ...(info.reason ? { reason: info.reason } : {}), message: clip(info.message) });
    }
    if (socketAction === 'close' || socketAction === 'tell-and-close') closeQuietly(this.#socket, code, info.message);
    else if (socketAction === 'abort') {
      if (this.#socket.abort) this.#socket.abort();
      else this.#socket.close(1001, 'Link is dead');
    }
    const failure = this.role === 'worker' ? `Host "${this.peer}" went offline: ${info.message}` : `The link to the worker closed: ${info.message}`;
    const failed = new WireError('host-offline', clip(failure));
    this.#pending.failAll(failed);
    this.#acks.clear();
    if (this.#sender !== null) this.#sender.reset();
    if (this.#ackTimer !== undefined) clearTimeout(this.#ackTimer);
    this.#pieces.clear();
    this.#pieceChars = 0;
    this.#closedHere.clear();
    const channels = [...this.#channels.values()];
    this.#channels.clear();
    for (const channel of channels) channel.remoteClosed({ reason: 'host-offline', message: failed.message });
    this.#log.info('Link closed', { peer: this.peer, by: info.by, reason: info.reason ?? null, message: info.message, channels: channels.length });
    this.#onRoom?.();
    this.#resolveClosed(info);
  }
}
