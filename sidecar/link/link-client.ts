/**
 * LinkClient: the sidecar dials its worker's `GET /link` (a WebSocket, with the `ws` package) and
 * runs the sidecar end of the link over it, forever: when the link drops or cannot be made it dials
 * again after a full-jitter exponential backoff, so a fleet of sidecars does not stampede a worker
 * that just restarted.
 *
 * The host credential goes in two headers, `Authorization: Bearer <secret>` and
 * `X-Switchyard-Entity-Id: <entity id>` (see `worker/link/host-auth.ts`); it is never logged.
 * `ws` disables Nagle itself (`socket.setNoDelay()` in `WebSocket#setSocket`), so nothing to do.
 *
 * @module
 */
import WebSocket from 'ws';
import { CallbackFrameSocket } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint, type ChannelOpenHandler, type LinkEndpointOptions } from '../../shared/link/link-endpoint.ts';
import { ENTITY_ID_HEADER } from '../../shared/link/link-types.ts';
import { MAX_FRAME_BYTES } from '../../shared/frames.ts';
import type { Logger } from '../log.ts';

export interface BackoffOptions {
  /** Upper bound of the first retry's delay. Default 1 s. */
  firstMs?: number;
  /** Largest delay. Default 30 s. */
  capMs?: number;
  /** A link that stayed up this long resets the backoff. Default 60 s. */
  stableMs?: number;
}

export interface LinkClientOptions {
  /** Worker base URL (`http(s)://` or `ws(s)://`); `/link` is appended to its path. */
  worker: string;
  entityId: string;
  secret: string;
  /** The sidecar's channel handler (its McpTransportListener). */
  onOpen: ChannelOpenHandler;
  log: Logger;
  endpoint?: Omit<LinkEndpointOptions, 'role' | 'onOpen' | 'peer' | 'log'>;
  backoff?: BackoffOptions;
  /** Randomness for the jitter; `Math.random` by default. */
  random?: () => number;
  /** Called each time a link is up, for tests and status. */
  onLinked?: (endpoint: LinkEndpoint) => void;
}

/** Full jitter: a uniform delay in [0, min(cap, first · 2^attempt)). Attempt 0 is the first retry. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const first = options.firstMs ?? 1_000;
  const cap = options.capMs ?? 30_000;
  const ceiling = Math.min(cap, first * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/** `http://h:8787/base` → `ws://h:8787/base/link`. */
export function linkUrl(worker: string): string {
  const url = new URL(worker);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/link`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

export class LinkClient {
  readonly #options: LinkClientOptions;
  readonly #url: string;
  readonly #log: Logger;
  #ws: WebSocket | null = null;
  #endpoint: LinkEndpoint | null = null;
  #retryTimer: ReturnType<typeof setTimeout> | null = null;
  #attempt = 0;
  #stopped = true;

  constructor(options: LinkClientOptions) {
    this.#options = options;
    this.#url = linkUrl(options.worker);
    this.#log = options.log.child({ worker: this.#url, 'entity-id': options.entityId });
  }

  /** The live link, or null between links. */
  get endpoint(): LinkEndpoint | null {
    return this.#endpoint !== null && !this.#endpoint.closed ? this.#endpoint : null;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#dial();
  }

  /** Stops dialling and closes the link, which closes every channel (and ends its server). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
    const ws = this.#ws;
    this.#endpoint?.close({ message: 'Sidecar stopping' });
    if (ws === null || ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    const timer = setTimeout(() => ws.terminate(), 2_000);
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    await closed;
    clearTimeout(timer);
  }

  #dial(): void {
    const { entityId, secret } = this.#options;
    const maxFrame = this.#options.endpoint?.maxFrameBytes ?? MAX_FRAME_BYTES;
    const ws = new WebSocket(this.#url, {
      headers: { Authorization: `Bearer ${secret}`, [ENTITY_ID_HEADER]: entityId },
      perMessageDeflate: false,
      maxPayload: maxFrame + 1024,
      handshakeTimeout: 10_000,
    });
    this.#ws = ws;
    let refusedStatus: number | null = null;
    let failure: Error | null = null;
    let linkedAt: number | null = null;
    ws.on('unexpected-response', (_request, response) => {
      refusedStatus = response.statusCode ?? 0;
      response.resume();
      ws.terminate();
    });
    ws.on('error', (error) => (failure = error));
    ws.on('open', () => {
      linkedAt = Date.now();
      const socket = new CallbackFrameSocket({
        send: (text) => ws.send(text),
        close: (code, reason) => ws.close(code, reason),
        abort: () => ws.terminate(),
      });
      ws.on('message', (data, isBinary) => {
        if (isBinary) ws.close(1003, 'Link frames are text');
        else socket.receive(data.toString());
      });
      ws.once('close', (code, reason) => socket.ended({ code, reason: reason.toString() }));
      const endpoint = new LinkEndpoint(socket, { ...this.#options.endpoint, role: 'sidecar', peer: 'worker', onOpen: this.#options.onOpen, log: this.#log });
      this.#endpoint = endpoint;
      this.#log.info('Linked to the worker');
      this.#options.onLinked?.(endpoint);
    });
    ws.once('close', (code) => {
      this.#ws = null;
      this.#endpoint = null;
      if (linkedAt !== null) {
        const upMs = Date.now() - linkedAt;
        if (upMs >= (this.#options.backoff?.stableMs ?? 60_000)) this.#attempt = 0;
        this.#log.info('Link to worker dropped', { code, upMs });
      } else if (refusedStatus === 401 || refusedStatus === 403) {
        this.#log.error(`Worker refused the host credential for entity "${entityId}": check the secret file and the worker's "hosts" entry`, { status: refusedStatus });
      } else if (refusedStatus !== null) {
        this.#log.warn('Worker refused the link', { status: refusedStatus });
      } else {
        this.#log.warn('Could not reach the worker', { error: (failure as Error | null)?.message ?? `closed with code ${code}` });
      }
      this.#scheduleRetry();
    });
  }

  #scheduleRetry(): void {
    if (this.#stopped) return;
    const delay = backoffDelay(this.#attempt++, this.#options.backoff, this.#options.random);
    this.#log.info('Dialling the worker again', { inMs: delay, attempt: this.#attempt });
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (!this.#stopped) this.#dial();
    }, delay);
  }
}
