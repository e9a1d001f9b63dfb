/**
 * The link's frames sent in one turn of the event loop leave in one socket write. A modern
 * request's answer and its `channel-close` were two `writev` calls, and a loopback write is the
 * sidecar's single largest cost per request (about 250 µs of CPU each in the issue-17 profile,
 * the kernel delivering to the worker inside the call). `ws` has no cork of its own, so the TCP
 * socket under it (its `_socket`, there since ws 1) is corked until the next tick and uncorked
 * then: a lone frame waits only for the current turn to end. A `ws` without that socket gets each
 * frame written at once, as before.
 *
 * `written` is `ws`'s send callback: called once per frame, in order, when its bytes were handed
 * to the kernel (or the socket failed), which the link's flow control counts (`link-flow.ts`).
 *
 * @module
 */
import type WebSocket from 'ws';

interface Corkable {
  cork(): void;
  uncork(): void;
}

/** One options object for every send: given a callback, `ws` otherwise makes an empty one per frame. */
const SEND_OPTIONS = {};
/** A text frame given as its UTF-8 bytes (`FrameSocket.sendUtf8`): `ws` takes bytes for binary unless told. */
const UTF8_TEXT = { binary: false };

/** A text frame is given as its text, or as its UTF-8 bytes (`FrameSocket.sendUtf8`). */
export function coalescedSend(ws: WebSocket, written?: (error?: Error) => void): (text: string | Uint8Array) => void {
  let corked = false;
  return (text) => {
    const socket = (ws as unknown as { _socket?: Corkable | null })._socket;
    if (!corked && typeof socket?.cork === 'function') {
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    }
    ws.send(text, typeof text === 'string' ? SEND_OPTIONS : UTF8_TEXT, written);
  };
}
