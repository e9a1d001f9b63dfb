/**
 * hono's `upgradeWebSocket` for a Durable Object, on the WebSocket Hibernation API: the socket is
 * accepted with `state.acceptWebSocket(ws, tags)`, so the runtime may take the object out of
 * memory while the socket stays open, and its frames arrive through the object's
 * `webSocketMessage` / `webSocketClose` / `webSocketError` methods, which call `message`,
 * `closed` and `failed` here. So `worker/link/link-route.ts` runs unchanged inside the object,
 * as it does on Deno and Node.
 *
 * The events hono hands over live in memory only. After hibernation the object is constructed
 * anew and a socket arrives here unknown: `message` then answers false, and the object rebuilds
 * what it needs from the socket's attachment and `adopt`s it (`host-link-object.ts`).
 *
 * @module
 */
import { defineWebSocketHelper, WSContext, type UpgradeWebSocket, type WSEvents } from 'hono/ws';
import { newWebSocketPair, upgradeResponse, type DurableObjectState, type WorkersWebSocket } from './workers-runtime.ts';

interface Listening {
  events: WSEvents<unknown>;
  context: WSContext<WorkersWebSocket>;
}

export class HibernatingSockets {
  readonly upgradeWebSocket: UpgradeWebSocket<unknown, never>;
  readonly #listening = new Map<WorkersWebSocket, Listening>();

  constructor(state: DurableObjectState, tags: readonly string[]) {
    this.upgradeWebSocket = defineWebSocketHelper<unknown, never>((c, events) => {
      if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') return;
      const { client, server } = newWebSocketPair();
      state.acceptWebSocket(server, [...tags]);
      const context = this.adopt(server, events);
      // Sent now, the challenge waits in the socket until the 101 has reached the peer.
      events.onOpen?.(new Event('open'), context);
      return upgradeResponse(client);
    }) as UpgradeWebSocket<unknown, never>;
  }

  /** Listens to `ws` with `events` (a fresh socket, or one woken from hibernation). */
  adopt(ws: WorkersWebSocket, events: WSEvents<unknown>): WSContext<WorkersWebSocket> {
    const context = new WSContext<WorkersWebSocket>({
      send: (data) => ws.send(data as string | ArrayBuffer),
      close: (code, reason) => {
        try {
          ws.close(code, reason);
        } catch {
          // Already closed.
        }
      },
      raw: ws,
      get readyState() {
        return ws.readyState as 0 | 1 | 2 | 3;
      },
    });
    this.#listening.set(ws, { events, context });
    return context;
  }

  /** One inbound frame; false when `ws` is not known in this instance (it woke from hibernation). */
  message(ws: WorkersWebSocket, data: string | ArrayBuffer): boolean {
    const listening = this.#listening.get(ws);
    if (listening === undefined) return false;
    listening.events.onMessage?.({ data } as MessageEvent, listening.context);
    return true;
  }

  closed(ws: WorkersWebSocket, code: number, reason: string): void {
    const listening = this.#listening.get(ws);
    this.#listening.delete(ws);
    listening?.events.onClose?.({ code, reason } as CloseEvent, listening.context);
  }

  failed(ws: WorkersWebSocket): void {
    this.closed(ws, 1006, 'WebSocket error');
  }
}
