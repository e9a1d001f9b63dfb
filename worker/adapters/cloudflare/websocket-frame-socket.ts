/**
 * A link `FrameSocket` over a Workers WebSocket that this isolate listens to itself (`accept()`
 * and event listeners): the relay sockets between an agent's side and a host's Durable Object.
 * The host's own link socket is hibernatable and fed by the object's handlers instead
 * (`hibernating-upgrade.ts`).
 *
 * @module
 */
import { CallbackFrameSocket } from '../../../shared/link/frame-socket.ts';
import type { WorkersWebSocket } from './workers-runtime.ts';

export function acceptedFrameSocket(ws: WorkersWebSocket): CallbackFrameSocket {
  const socket = frameSocketOver(ws);
  ws.accept();
  ws.addEventListener('message', (event) => {
    // Link frames are text; a binary frame is a protocol violation, as on any link.
    if (typeof event.data === 'string') socket.receive(event.data);
    else ws.close(1003, 'Link frames are text');
  });
  ws.addEventListener('close', (event) => socket.ended({ code: event.code, reason: event.reason }));
  ws.addEventListener('error', () => socket.ended({ code: 1006, reason: 'WebSocket error' }));
  return socket;
}

/** Sends and closes through `ws`; the caller feeds it inbound frames and the end. */
export function frameSocketOver(ws: WorkersWebSocket): CallbackFrameSocket {
  return new CallbackFrameSocket({
    send: (text) => ws.send(text),
    close: (code, reason) => {
      try {
        ws.close(code, reason);
      } catch {
        // Already closed.
      }
    },
  });
}
