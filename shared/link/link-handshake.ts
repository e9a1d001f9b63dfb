/**
 * The link handshake: how a link opens, before any channel. Both ends run it on the bare frame
 * socket; only when it succeeds is a `LinkEndpoint` built on that socket (by `accept`, called
 * synchronously at the moment of success, so no frame can fall between the two).
 *
 * ```
 * worker                                   sidecar
 *   link-challenge {nonce}        ──▶
 *                                 ◀──       link-proof {origin, signature}
 *   link-accepted                 ──▶                        (or link-close, reason unauthorized)
 * ```
 *
 * On a doctor's probe, `link-accepted` carries what the worker expects of the host
 * (`host-expectations.ts`), for the workstation to compare with its own files.
 *
 * Until the worker has verified the proof it accepts nothing else: any other frame, a second
 * proof or silence past the deadline ends the link with a `link-close` saying why. Frames go
 * through the same reader as every other frame (size limit, zod schema), but the worker's end
 * takes none over `PRE_AUTH_MAX_FRAME_BYTES` and waits `PROOF_TIMEOUT_MS` at most: whoever sends
 * them has proven nothing about this dial yet. What is signed and how it is checked is
 * `link-identity.ts`.
 *
 * The worker upgrades only a request that already carries the host's signed upgrade proof
 * (`link-upgrade-proof.ts`), so this handshake runs with key holders only. It stays because it
 * proves what the upgrade proof cannot alone: that this dial is live. Its nonce is the worker's,
 * fresh per socket, so a copied upgrade request gets a socket at most, never a link, with no
 * clock to trust and no memory a worker's processes would have to share.
 *
 * @module
 */
import { WireError, type FailureReason } from '../errors.ts';
import { clipFrameMessage, LINK_PROTOCOL_VERSION, MAX_FRAME_BYTES, type Frame, type FrameOf } from '../frames.ts';
import { unrefTimer } from '../unref-timer.ts';
import { readFrame } from './frame-reader.ts';
import { closeQuietly, type FrameSocket } from './frame-socket.ts';
import type { HostExpectations } from './host-expectations.ts';
import { createNonce } from './link-identity.ts';

/** Default deadline for the whole handshake on the sidecar's end, which also waits for the worker to verify. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * Default deadline on the worker's end, from the upgrade to the proof: one round trip and an
 * Ed25519 signature for an honest sidecar. 5 s still lets through a round trip of 2 s (a
 * saturated uplink's bufferbloat, a satellite or 2G link) with a lost segment resent, while a
 * stranger who sends nothing holds a pending slot (`worker/link/pending-handshakes.ts`) half as
 * long as the 10 s before; those slots, not this deadline, are what bound the cost of strangers.
 */
export const PROOF_TIMEOUT_MS = 5_000;

/**
 * Largest frame the worker's end reads before the host is verified. A host sends at most a
 * `link-proof` (140 bytes plus its origin, which the schema caps at 300: under 450) or a
 * `link-close` whose message is clipped to 2000 characters (about 6 KB of UTF-8 at worst); 8 KiB
 * takes either, and a stranger's bigger frame is refused before it is parsed.
 */
export const PRE_AUTH_MAX_FRAME_BYTES = 8 * 1024;

export interface HandshakeOptions<T> {
  /**
   * Builds what runs on the socket once the handshake succeeded (the link endpoint), given the
   * handshake's round trip (ms): the sidecar's from its proof to the worker's `link-accepted`
   * (which it is given too), the worker's from its challenge to the host's proof.
   */
  accept(accepted?: FrameOf<'link-accepted'>, rttMs?: number): T;
  timeoutMs?: number;
  maxFrameBytes?: number;
}

export type ProofVerdict = { ok: true } | { ok: false; message: string };

export interface ChallengeOptions<T> extends HandshakeOptions<T> {
  /** Checks the host's proof for `nonce`; never throws. */
  verify(proof: FrameOf<'link-proof'>, nonce: string): Promise<ProofVerdict>;
  /** The nonce to send; fresh random by default (tests pin it). */
  nonce?: string;
  /** What the worker expects of this host, sent with `link-accepted` (a doctor's probe only). */
  expects?: () => HostExpectations | undefined;
  /** Tells the host, on `link-accepted`, that this end reads `channel-part` and acknowledges frames (only to a host that announced `paced`). */
  paced?: boolean;
}

export interface AnswerOptions<T> extends HandshakeOptions<T> {
  /** Signs the worker's nonce: the proof frame's fields. */
  prove(nonce: string): Promise<{ origin: string; signature: string }>;
  /** Told what the worker expects of this host, when its `link-accepted` says (a probe's does). */
  onExpects?: (expects: HostExpectations) => void;
}

/**
 * Worker end: challenges the host and resolves with `accept()` once its proof verified. Rejects
 * with a `WireError` (`unauthorized` for a refused proof) after telling the host why and closing.
 */
export function challengeHost<T>(socket: FrameSocket, options: ChallengeOptions<T>): Promise<T> {
  const nonce = options.nonce ?? createNonce();
  const limits = { timeoutMs: options.timeoutMs ?? PROOF_TIMEOUT_MS, maxFrameBytes: options.maxFrameBytes ?? PRE_AUTH_MAX_FRAME_BYTES };
  return runHandshake(socket, { ...options, ...limits }, (step) => {
    let state: 'awaiting-proof' | 'verifying' = 'awaiting-proof';
    step.send({ v: LINK_PROTOCOL_VERSION, type: 'link-challenge', nonce });
    const challengedAt = performance.now();
    return (frame) => {
      if (frame.type === 'link-close') return step.ended(frame);
      if (frame.type !== 'link-proof' || state !== 'awaiting-proof') {
        return step.refuse('invalid-request', `Expected one link-proof, got ${frame.type}: nothing else is accepted before the host is verified`);
      }
      state = 'verifying';
      const rttMs = performance.now() - challengedAt;
      options.verify(frame, nonce).then(
        (verdict) => {
          if (!verdict.ok) return step.refuse('unauthorized', verdict.message);
          const expects = options.expects?.();
          step.send({ v: LINK_PROTOCOL_VERSION, type: 'link-accepted', ...(expects !== undefined ? { expects } : {}), ...(options.paced === true ? { paced: true as const } : {}) });
          step.succeed(undefined, rttMs);
        },
        () => step.refuse('unauthorized', 'The host\'s link proof could not be checked'),
      );
    };
  });
}

/**
 * Sidecar end: answers the worker's challenge and resolves with `accept()` once the worker
 * accepted. Rejects with the worker's own reason and message when it refused (`link-close`).
 */
export function answerChallenge<T>(socket: FrameSocket, options: AnswerOptions<T>): Promise<T> {
  return runHandshake(socket, options, (step) => {
    let state: 'awaiting-challenge' | 'proving' | 'awaiting-verdict' = 'awaiting-challenge';
    let provedAt = 0;
    return (frame) => {
      if (frame.type === 'link-close') return step.ended(frame);
      if (frame.type === 'link-challenge' && state === 'awaiting-challenge') {
        state = 'proving';
        options.prove(frame.nonce).then(
          (proof) => {
            state = 'awaiting-verdict';
            provedAt = performance.now();
            step.send({ v: LINK_PROTOCOL_VERSION, type: 'link-proof', ...proof });
          },
          (error: unknown) => step.refuse('invalid-request', `This host could not sign the challenge: ${error instanceof Error ? error.message : String(error)}`),
        );
        return;
      }
      if (frame.type === 'link-accepted' && state === 'awaiting-verdict') {
        if (frame.expects !== undefined) options.onExpects?.(frame.expects);
        return step.succeed(frame, performance.now() - provedAt);
      }
      step.refuse('invalid-request', `Expected ${state === 'awaiting-challenge' ? 'link-challenge' : 'link-accepted'}, got ${frame.type}: a link opens with the handshake`);
    };
  });
}

/**
 * A handshake the other end ended (its link-close, or its socket closing), not one this end
 * refused: the worker's audit records only its own refusals, and the peer writes this reason.
 */
export class HandshakeEndedByPeer extends WireError {}

interface Step {
  send(frame: Frame): void;
  succeed(accepted?: FrameOf<'link-accepted'>, rttMs?: number): void;
  /** Tells the peer why (link-close) and closes, with `code` or the one `reason` implies. */
  refuse(reason: FailureReason, message: string, code?: number): void;
  /** The peer ended the handshake with a link-close. */
  ended(frame: FrameOf<'link-close'>): void;
}

function runHandshake<T>(socket: FrameSocket, options: HandshakeOptions<T>, start: (step: Step) => (frame: Frame) => void): Promise<T> {
  const timeoutMs = options.timeoutMs ?? HANDSHAKE_TIMEOUT_MS;
  const max = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const settle = (error: WireError | null): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      if (error !== null) reject(error);
      return true;
    };
    const send = (frame: Frame) => {
      try {
        socket.send(JSON.stringify(frame));
      } catch {
        // A closed socket ends the handshake through onclose.
      }
    };
    const step: Step = {
      send: (frame) => {
        if (!settled) send(frame);
      },
      succeed: (accepted, rttMs) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        try {
          resolve(options.accept(accepted, rttMs));
        } catch (error) {
          reject(error);
        }
      },
      refuse: (reason, message, code) => {
        if (!settle(new WireError(reason, message))) return;
        send({ v: LINK_PROTOCOL_VERSION, type: 'link-close', reason, message: clipFrameMessage(message) });
        closeQuietly(socket, code ?? (reason === 'unauthorized' ? 1008 : 1002), message);
      },
      ended: (frame) => {
        if (!settle(new HandshakeEndedByPeer(frame.reason ?? 'host-offline', frame.message))) return;
        closeQuietly(socket, 1000, frame.message);
      },
    };
    const timer = setTimeout(() => step.refuse('request-timeout', `The link handshake did not complete within ${timeoutMs} ms`), timeoutMs);
    unrefTimer(timer);
    socket.onclose = (info) => {
      settle(new HandshakeEndedByPeer('host-offline', `The link closed during the handshake${info.code === undefined ? '' : ` (code ${info.code})`}`));
    };
    let onFrame: ((frame: Frame) => void) | undefined;
    socket.onmessage = (text) => {
      if (settled) return;
      const read = readFrame(text, max);
      switch (read.kind) {
        case 'frame':
          return onFrame?.(read.frame);
        case 'message':
        case 'part':
          return step.refuse('invalid-request', `Expected the handshake, got ${read.kind === 'part' ? 'channel-part' : 'channel-message'}: nothing else is accepted before the link handshake completes`);
        case 'too-large':
          // 1009 as on a live link: the peer learns it was the size, even if the link-close is lost.
          return step.refuse('invalid-request', `Incoming link frame exceeds the ${max} byte limit${max < MAX_FRAME_BYTES ? ' before the host is verified' : ''}`, 1009);
        case 'wrong-version':
          return step.refuse('invalid-request', `Unsupported link protocol version ${read.version}: this end speaks version ${LINK_PROTOCOL_VERSION}`);
        case 'malformed':
          return step.refuse('invalid-request', `Malformed handshake frame: ${read.problem}`);
      }
    };
    onFrame = start(step);
  });
}
