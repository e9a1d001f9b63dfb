/**
 * FrameSocket: the smallest thing a link endpoint needs from a connection, so one endpoint runs
 * over a WebSocket under Deno, Node (`ws`), hono's `WSContext`, a Durable Object, or an in-memory
 * pair in the all-in-one mode and in tests. Text frames only; one `send` is one frame.
 *
 * Why a WebSocket carries the link:
 * - Full duplex on one TCP connection that the sidecar dials out, so a host behind NAT needs no
 *   open port, and server→client traffic (progress, sampling, elicitation) needs no polling.
 * - It runs everywhere the worker runs: `Deno.upgradeWebSocket`, `ws` under Node, and Cloudflare
 *   Durable Objects, whose hibernating WebSockets keep an idle link open at no cost (DESIGN §8).
 * - One connection for every channel: no per-session handshake, and one place for liveness.
 * - Nagle is off on both ends (`ws` calls `setNoDelay()` on every socket; Deno and Workers do too),
 *   so small JSON-RPC frames are not held back waiting for an ACK.
 *
 * @module
 */

export interface FrameSocketCloseInfo {
  /** WebSocket close code when there was one (1000 normal, 1006 abnormal, 1009 too big, …). */
  code?: number;
  reason?: string;
}

export interface FrameSocket {
  /** Sends one text frame. May throw when the socket is already closed. */
  send(text: string): void;
  /**
   * Sends one text frame given as its UTF-8 bytes, where the socket can (`ws`): a large frame's
   * pieces are cut from its bytes, encoded once (`link-sender.ts`), where cutting the text and
   * encoding each piece copied it twice more. May throw as `send` does.
   */
  readonly sendUtf8?: ((bytes: Uint8Array) => void) | undefined;
  /** Starts an orderly close; `onclose` follows once the socket is gone. */
  close(code?: number, reason?: string): void;
  /**
   * Drops the connection at once without a close handshake. Used when the peer is dead: an
   * orderly close would wait for an answer that never comes. Falls back to `close` when absent.
   */
  abort?(): void;
  /** One inbound text frame. Binary frames are the adapter's business (they are refused). */
  onmessage?: (text: string) => void;
  /** The socket is gone, for whatever cause; fires at most once. */
  onclose?: (info: FrameSocketCloseInfo) => void;
  /**
   * True where `onwritten` is called once per frame sent, in the order sent, when its bytes have
   * left for the network (a `ws` send callback): what the link's flow control counts on
   * (`link-flow.ts`). Absent: the socket says nothing of what it holds, and there is none.
   */
  readonly tracksWrites?: boolean;
  onwritten?: () => void;
}

/** Starts an orderly close, if the socket is not already gone, with `message` cut to what a close frame holds. */
export function closeQuietly(socket: FrameSocket, code: number, message: string): void {
  try {
    // A WebSocket close reason is at most 123 bytes: keep it short and ASCII.
    socket.close(code, message.replace(/[^\x20-\x7e]/g, '?').slice(0, 120));
  } catch {
    // Already closed.
  }
}

/** A `FrameSocket` whose callbacks an adapter fires; `closed` keeps `onclose` to one call. */
export class CallbackFrameSocket implements FrameSocket {
  onmessage?: (text: string) => void;
  onclose?: (info: FrameSocketCloseInfo) => void;
  onwritten?: () => void;
  readonly tracksWrites: boolean;
  readonly sendUtf8: ((bytes: Uint8Array) => void) | undefined;
  #closed = false;
  /**
   * Frames sent while no one listened for their writes (the handshake's, before the endpoint):
   * their reports come first, and are not passed on, so the listener's stay in step with its frames.
   */
  #unclaimed = 0;
  readonly #send: (text: string) => void;
  readonly #close: (code?: number, reason?: string) => void;
  readonly #abort: (() => void) | undefined;

  /** `tracksWrites`: the adapter calls `written()` for each frame sent, in order. */
  constructor(io: { send(text: string): void; sendUtf8?(bytes: Uint8Array): void; close(code?: number, reason?: string): void; abort?(): void; tracksWrites?: boolean }) {
    this.#send = io.send;
    this.#close = io.close;
    this.#abort = io.abort;
    this.tracksWrites = io.tracksWrites === true;
    const sendUtf8 = io.sendUtf8;
    this.sendUtf8 =
      sendUtf8 === undefined
        ? undefined
        : (bytes) => {
            sendUtf8(bytes);
            this.#sentOne();
          };
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(text: string): void {
    this.#send(text);
    this.#sentOne();
  }

  #sentOne(): void {
    if (this.tracksWrites && this.onwritten === undefined) this.#unclaimed++;
  }

  close(code?: number, reason?: string): void {
    this.#close(code, reason);
  }

  abort(): void {
    if (this.#abort !== undefined) this.#abort();
    else this.#close(1001, 'Link aborted');
  }

  /** Adapter side: one inbound text frame. */
  receive(text: string): void {
    if (!this.#closed) this.onmessage?.(text);
  }

  /** Adapter side: the oldest frame sent and not yet reported has left for the network. */
  written(): void {
    if (this.#unclaimed > 0) this.#unclaimed--;
    else this.onwritten?.();
  }

  /** Adapter side: the underlying socket is gone. */
  ended(info: FrameSocketCloseInfo): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.(info);
  }
}

/**
 * Two connected sockets in one process (the all-in-one mode, and tests): what one sends, the
 * other receives on a later microtask (never inside `send`), in order, so reentrancy bugs surface.
 */
export function createFrameSocketPair(): [CallbackFrameSocket, CallbackFrameSocket] {
  let a!: CallbackFrameSocket;
  let b!: CallbackFrameSocket;
  const endBoth = (info: FrameSocketCloseInfo) => {
    queueMicrotask(() => {
      a.ended(info);
      b.ended(info);
    });
  };
  const make = (peer: () => CallbackFrameSocket) =>
    new CallbackFrameSocket({
      send(text) {
        if (peer().closed) throw new Error('Frame socket is closed');
        queueMicrotask(() => peer().receive(text));
      },
      close(code = 1000, reason = '') {
        endBoth({ code, reason });
      },
      abort() {
        endBoth({ code: 1006, reason: 'Link aborted' });
      },
    });
  a = make(() => b);
  b = make(() => a);
  return [a, b];
}
