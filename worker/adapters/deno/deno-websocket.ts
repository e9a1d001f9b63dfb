/**
 * hono's `upgradeWebSocket` for Deno, on `Deno.upgradeWebSocket`.
 *
 * A copy of the helper in `hono/deno` (deprecated there, moving to `@hono/deno`, which is not a
 * dependency), for two reasons: importing `hono/deno` pulls in its static-file server and with it
 * `node:path`, which the neutral worker bundle must not contain; and the `Upgrade` header is
 * compared case-insensitively, as RFC 9110 says it must be.
 *
 * @module
 */
import { defineWebSocketHelper, WSContext, type UpgradeWebSocket } from 'hono/ws';
import { WireError } from '../../../shared/errors.ts';

interface DenoWebSocketApi {
  upgradeWebSocket(request: Request, options?: { protocol?: string; idleTimeout?: number }): { response: Response; socket: WebSocket };
}

export const upgradeWebSocket: UpgradeWebSocket<WebSocket, { protocol?: string }> = defineWebSocketHelper(async (c, events, options) => {
  if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') return;
  const deno = (globalThis as unknown as { Deno: DenoWebSocketApi }).Deno;
  const subprotocol = c.req.header('sec-websocket-protocol')?.split(',')[0]?.trim();
  // `idleTimeout: 0`: Deno's own idle ping re-arms a timer on every inbound message (~10-30 µs of
  // each call's CPU, issue 17), and the link has its own liveness on both ends, which declares a
  // silent peer dead after 25 s, well before Deno's 120 s would.
  // No message size limit can be passed: Deno (2.9) reads `protocol`, `idleTimeout`, `socket` and
  // `head` only (denoland/deno#15809), and buffers any message up to its own 64 MiB before the
  // link sees it. So the link's limits (8 KiB before the proof, 16 MiB after) apply to frames
  // already read, and what keeps a stranger from making Deno buffer 64 MiB is that the link route
  // calls this only for a request signed by a configured host's key
  // (`worker/link/link-upgrade-gate.ts`); the pending-handshake cap bounds those key holders.
  let upgraded: ReturnType<DenoWebSocketApi['upgradeWebSocket']>;
  try {
    upgraded = deno.upgradeWebSocket(c.req.raw, { idleTimeout: 0, ...(subprotocol ? { protocol: subprotocol } : {}), ...options });
  } catch (error) {
    // A request Deno cannot upgrade (no Sec-WebSocket-Key, no Connection: upgrade) is the
    // caller's fault: a 400 saying why, not an unhandled 500.
    const why = error instanceof Error ? error.message : String(error);
    return Response.json(new WireError('invalid-request', `Not a WebSocket upgrade Deno can take: ${why.slice(0, 200)}`).toHttpBody(), { status: 400 });
  }
  const { response, socket } = upgraded;
  const ws = new WSContext<WebSocket>({
    close: (code, reason) => socket.close(code, reason),
    get protocol() {
      return socket.protocol;
    },
    raw: socket,
    get readyState() {
      return socket.readyState as 0 | 1 | 2 | 3;
    },
    url: socket.url ? new URL(socket.url) : null,
    send: (source) => socket.send(source),
  });
  socket.onopen = (event) => events.onOpen?.(event, ws);
  socket.onmessage = (event) => events.onMessage?.(event, ws);
  socket.onclose = (event) => events.onClose?.(event, ws);
  socket.onerror = (event) => events.onError?.(event, ws);
  return response;
});
