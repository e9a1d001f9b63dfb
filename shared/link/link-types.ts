/**
 * The vocabulary of a link endpoint: its roles, options, close info and counters. Apart from
 * `link-endpoint.ts` so that the route, the registry and the link client can name them cheaply.
 *
 * @module
 */
import type { FailureReason } from '../errors.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelTransport } from '../channel-transport.ts';
import type { HostRoster } from './host-roster.ts';
import type { LinkFeature } from './link-features.ts';
import type { FlowLimits } from './link-flow.ts';
import type { LinkWindowOptions } from './link-window.ts';

export type LinkRole = 'worker' | 'sidecar';

/**
 * The upgrade request header naming the dialling host, so the worker knows whose public key to
 * check before it upgrades: sent by the sidecar's link client, read by the worker's link route.
 */
export const ENTITY_ID_HEADER = 'X-Switchyard-Entity-Id';

/**
 * Set to `1` by `switchyard doctor`: prove the host's key, then close. The worker verifies the
 * proof as for any link but registers nothing, so a doctor run never replaces the live link of a
 * sidecar that is running on the same host.
 */
export const LINK_PROBE_HEADER = 'X-Switchyard-Link-Probe';

/** On a link refused before the upgrade: the refusal's message (some runtimes drop that body). */
export const REFUSAL_HEADER = 'X-Switchyard-Refusal';
/** Beside it: the check the request failed (`link-upgrade-gate.ts`), for the host's audit record. */
export const REFUSAL_CHECK_HEADER = 'X-Switchyard-Refusal-Check';

/** The two log levels the endpoint uses; the sidecar's `Logger` and a console wrapper both fit. */
export interface LinkLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * Sidecar side: opens what the request asks for on `channel` (not yet started: the handler wires
 * it and calls `start()`); resolving acks the open, a thrown `WireError` is sent back instead.
 */
export type ChannelOpenHandler = (request: unknown, channel: ChannelTransport) => Promise<void>;

export interface LinkEndpointOptions {
  role: LinkRole;
  /** Required on the sidecar end; the worker end refuses channel opens. */
  onOpen?: ChannelOpenHandler;
  /** Who is at the other end, for logs and messages (an entity id or the worker URL). */
  peer?: string;
  /** How often a keepalive is sent. Default 10 s. */
  keepaliveIntervalMs?: number;
  /** Silence after which the link is declared dead. Default 20 s, so death is noticed within 25 s. */
  deadAfterMs?: number;
  /**
   * `false`: this end neither sends keepalives nor watches for a silent peer. For a Durable
   * Object, which cannot hibernate while it holds a timer: it answers keepalives with the
   * runtime's auto-response and checks the peer's last one itself when it next needs the link.
   */
  liveness?: boolean;
  /** How long `openChannel` waits for an ack when its caller gives no deadline. Default 30 s. */
  openTimeoutMs?: number;
  /** Largest frame sent or accepted, in UTF-8 bytes. Default `MAX_FRAME_BYTES`. */
  maxFrameBytes?: number;
  /** Worker end: what the host announced it reads (`link-features.ts`); none when absent. */
  peerFeatures?: ReadonlySet<LinkFeature>;
  /**
   * Flow control's budgets (`link-flow.ts`), each `DEFAULT_FLOW_LIMITS`' where left out (tests
   * make them small); `false` turns it off. Only a socket that reports its writes has any.
   */
  flow?: Partial<FlowLimits> | false;
  /**
   * Both ends agreed to pace what they send (`paced`, `link-features.ts`): each sends a large frame
   * in pieces and at most a window of frames the other has not acknowledged, in turns
   * (`link-sender.ts`), reads the other's pieces (refused elsewhere) and acknowledges the frames
   * it read (`link-ack`).
   */
  paced?: boolean;
  /** The sending end's turns, pieces and window (`link-sender.ts`), its defaults where left out (tests make them small). */
  sender?: { socketBytes?: number; partChars?: number; partedFrames?: number; largeFrameChars?: number; window?: LinkWindowOptions };
  /**
   * The handshake's round trip (ms), the window's first (`link-window.ts`): the sidecar's from its
   * proof to the worker's `link-accepted`, the worker's from its challenge to the host's proof.
   */
  handshakeRttMs?: number;
  /** A paced link: acknowledges once it read this much of the other end's frames, or within `delayMs`. */
  acks?: { everyChars?: number; delayMs?: number };
  /**
   * Told when this end's flow lets its channels go (the link is back under its budget) and when
   * the link ends: what waits for the link to have room (the host's large stdout lines,
   * `sidecar/process/large-line-gate.ts`) looks again.
   */
  onRoom?: () => void;
  /**
   * Sidecar end: told each roster the worker sends (`host-roster.ts`, feature `roster`): the agents
   * it routes here and the servers each may open; what the host keeps ready for anyone else can go.
   */
  onRoster?: (roster: HostRoster) => void;
  log?: LinkLogger;
}

/**
 * What ended a link: the peer's link-close (`peer`), this end (`this-end`: its `close()`, or a
 * frame it would not read), the socket closing under it with no link-close (`socket`), or the
 * peer's silence past the dead time (`silence`).
 */
export type LinkEndedBy = 'peer' | 'this-end' | 'socket' | 'silence';

export interface LinkCloseInfo {
  /** Absent on an orderly close by either end. */
  reason?: FailureReason;
  message: string;
  by: LinkEndedBy;
}

/**
 * A link's end as the audit record names it (`ended`): `closed` by the peer, `lost` (the socket
 * dropped), `dead` (silence), or, ended by this end, the reason it refused the peer's frames for,
 * else `ownClose` (what this end's own close means: the worker's `closed`, the sidecar's `shutdown`).
 */
export function linkEndOf(info: LinkCloseInfo, ownClose: string): string {
  switch (info.by) {
    case 'peer':
      return 'closed';
    case 'socket':
      return 'lost';
    case 'silence':
      return 'dead';
    case 'this-end':
      return info.reason ?? ownClose;
  }
}

export interface LinkStats {
  channels: number;
  framesIn: number;
  unknownChannelFrames: number;
  malformedFrames: number;
  /** Flow control (`link-flow.ts`; 0 without it): frames sent and not yet written out, the most there were, and channels holding their server. */
  queuedBytes: number;
  peakQueuedBytes: number;
  heldChannels: number;
  /** A paced link's host end (`link-sender.ts`; 0 elsewhere): bytes sent the worker has not acknowledged, and frames waiting their turn. */
  unackedBytes: number;
  waitingFrames: number;
  /** A paced link: what may be on its way unacknowledged now (`link-window.ts`; 0 elsewhere). */
  windowBytes: number;
  /** A paced link: the shortest round trip seen, from the handshake and keepalives (ms); null before any, and elsewhere. */
  roundTripMs: number | null;
}

export interface OpenChannelOptions {
  /**
   * The caller's deadline: when it aborts, the open is given up with the signal's reason when
   * that is a `WireError` (else `request-timeout`). Replaces the endpoint's own open timer.
   */
  signal?: AbortSignal;
  /**
   * A message sent with the channel-open (in its frame to a host that reads `open-first`, else
   * right behind it), before the ack (a modern request: one round trip instead of two). The
   * host's endpoint queues it on the channel it made for the open, and
   * only its handler starting the channel, once it accepted, delivers it; a refused open drops it
   * unread, and the open still rejects with the host's reason. The channel that comes back says
   * it went ahead (`sentAhead`), so the caller does not send it again.
   */
  first?: JSONRPCMessage;
}
