/**
 * LinkClient: the sidecar dials its worker's `GET /link` (a WebSocket, with the `ws` package) and
 * runs the sidecar end of the link over it, forever: when the link drops or cannot be made it dials
 * again after a full-jitter exponential backoff, so a fleet of sidecars does not stampede a worker
 * that just restarted.
 *
 * The upgrade request names the host (`X-Switchyard-Entity-Id: <entity id>`) and proves it holds
 * the host key (`X-Switchyard-Link-Proof`, `shared/link/link-upgrade-proof.ts`: signed afresh for
 * each dial, with this host's clock, which must be within 5 minutes of the worker's); then the
 * worker challenges it and the host signs the challenge too (`shared/link/link-handshake.ts`,
 * `host-key.ts`), both bound to the worker origin this client dialled. Only an accepted handshake
 * makes a link; a refusal is logged with the worker's reason and what to do (a wrong key, an
 * unknown host, a clock off by N s), and dialling goes on with backoff. Nothing secret crosses the
 * link: a signature is good for one nonce at one worker.
 * `ws` disables Nagle itself (`socket.setNoDelay()` in `WebSocket#setSocket`), so nothing to do.
 * Its send callbacks tell the link endpoint what has been written out, for flow control
 * (`shared/link/link-flow.ts`); a socket error that ends a link is logged with the drop.
 *
 * @module
 */
import WebSocket from 'ws';
import { CallbackFrameSocket } from '../../shared/link/frame-socket.ts';
import { coalescedSend } from './coalesced-send.ts';
import { linkMask } from './frame-mask.ts';
import { LinkEndpoint, type ChannelOpenHandler, type LinkEndpointOptions } from '../../shared/link/link-endpoint.ts';
import { ENTITY_ID_HEADER, REFUSAL_CHECK_HEADER, REFUSAL_HEADER } from '../../shared/link/link-types.ts';
import { LINK_FEATURES, LINK_FEATURES_HEADER } from '../../shared/link/link-features.ts';
import { answerChallenge, HandshakeEndedByPeer } from '../../shared/link/link-handshake.ts';
import { originOfUrl } from '../../shared/link/link-identity.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER, type LinkSignable } from '../../shared/link/link-upgrade-proof.ts';
import { isFailureReason, WireError } from '../../shared/errors.ts';
import { MAX_FRAME_BYTES } from '../../shared/frames.ts';
import type { Logger } from '../log.ts';

export interface BackoffOptions {
  /** Upper bound of the first retry's delay. Default 1 s. */
  firstMs?: number;
  /** Largest delay. Default 30 s. */
  capMs?: number;
  /** A link that stayed up this long resets the backoff. Default 60 s. */
  stableMs?: number;
  /**
   * Largest delay until this sidecar has linked once, and for `stableMs` after a link drops.
   * Default 5 s: a sidecar started before its worker (as a setup is often done) notices the
   * worker within seconds of it coming up, and so does one whose worker restarted or was
   * redeployed (every config change on Cloudflare Workers is a deploy), where the redials of the
   * seconds it was down had grown the delay to 15–30 s; a worker down longer still gets a fleet's
   * redials spread over `capMs`.
   */
  capBeforeLinkMs?: number;
}

export interface LinkClientOptions {
  /** Worker base URL (`http(s)://` or `ws(s)://`); `/link` is appended to its path. */
  worker: string;
  entityId: string;
  /** Signs each dial's upgrade proof and the worker's challenge: the host key (`host-key.ts`). */
  key: { sign(fields: LinkSignable): Promise<string> };
  /** This host's clock in ms, which the upgrade proof carries; `Date.now` by default (tests skew it). */
  now?: () => number;
  /** Deadline for the link handshake. Default 10 s. */
  handshakeTimeoutMs?: number;
  /** The sidecar's channel handler (its McpTransportListener). */
  onOpen: ChannelOpenHandler;
  log: Logger;
  endpoint?: Omit<LinkEndpointOptions, 'role' | 'onOpen' | 'peer' | 'log'>;
  backoff?: BackoffOptions;
  /** Randomness for the jitter; `Math.random` by default. */
  random?: () => number;
  /** Called each time a link is up, for tests and status. */
  onLinked?: (endpoint: LinkEndpoint) => void;
  /**
   * Called each time the worker refuses a link: `reason` its stable reason (`unauthorized`,
   * `limit-reached`, a handshake's), `check` the test the worker says the request failed, if any.
   */
  onRefused?: (refusal: { reason: string; check: string | null }) => void;
}

/** The reconnect timings when nothing overrides them (the config reference prints these). */
export const DEFAULT_BACKOFF = { firstMs: 1_000, capMs: 30_000, stableMs: 60_000, capBeforeLinkMs: 5_000 } as const;

/**
 * Full jitter: a uniform delay in [0, min(cap, first · 2^attempt)). Attempt 0 is the first retry;
 * until the sidecar has linked once, and for a while after a link drops, the cap is
 * `capBeforeLinkMs` at most (`fullCap` false).
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, random: () => number = Math.random, fullCap = true): number {
  const first = options.firstMs ?? DEFAULT_BACKOFF.firstMs;
  const capAfter = options.capMs ?? DEFAULT_BACKOFF.capMs;
  const cap = fullCap ? capAfter : Math.min(capAfter, options.capBeforeLinkMs ?? DEFAULT_BACKOFF.capBeforeLinkMs);
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
  readonly #mask: ((mask: Uint8Array) => void) | undefined;
  readonly #origin: string;
  readonly #log: Logger;
  #ws: WebSocket | null = null;
  #endpoint: LinkEndpoint | null = null;
  #retryTimer: ReturnType<typeof setTimeout> | null = null;
  #attempt = 0;
  /** Whether a link was ever up: until then retries stay within `capBeforeLinkMs`. */
  #linkedOnce = false;
  /** When the last link dropped (ms since the epoch); 0 before any did. */
  #droppedAt = 0;
  #stopped = true;
  /** Bumped by `stop()`, so a proof still being signed then never dials. */
  #generation = 0;

  constructor(options: LinkClientOptions) {
    this.#options = options;
    this.#url = linkUrl(options.worker);
    this.#mask = linkMask(this.#url);
    this.#origin = originOfUrl(this.#url);
    this.#log = options.log.child({ worker: this.#url, 'entity-id': options.entityId });
  }

  /** The live link, or null between links. */
  get endpoint(): LinkEndpoint | null {
    return this.#endpoint !== null && !this.#endpoint.closed ? this.#endpoint : null;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#sign();
  }

  /** Stops dialling and closes the link, which closes every channel (and ends its server). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#generation++;
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
    const ws = this.#ws;
    if (this.#endpoint !== null) this.#endpoint.close({ message: 'Sidecar stopping' });
    else if (ws?.readyState === WebSocket.OPEN) ws.close(1001, 'Sidecar stopping'); // mid-handshake
    if (ws === null || ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    const timer = setTimeout(() => ws.terminate(), 2_000);
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    await closed;
    clearTimeout(timer);
  }

  /** Signs this dial's upgrade proof, then dials; a key that cannot sign is reported and retried like a refusal. */
  #sign(): void {
    const { entityId, key } = this.#options;
    const nowMs = (this.#options.now ?? Date.now)();
    const generation = this.#generation;
    createLinkProofHeader((fields) => key.sign(fields), { origin: this.#origin, entityId, nowMs }).then(
      (proof) => {
        if (!this.#stopped && generation === this.#generation) this.#dial(proof);
      },
      (error: unknown) => {
        if (generation !== this.#generation) return;
        this.#log.error(`This host could not sign its link request: ${error instanceof Error ? error.message : String(error)}`);
        this.#scheduleRetry();
      },
    );
  }

  #dial(proof: string): void {
    const { entityId, key } = this.#options;
    // This dial's run: a stop (and a start after it) makes everything this dial began moot.
    const generation = this.#generation;
    const current = () => !this.#stopped && generation === this.#generation;
    const maxFrame = this.#options.endpoint?.maxFrameBytes ?? MAX_FRAME_BYTES;
    const ws = new WebSocket(this.#url, {
      headers: { [ENTITY_ID_HEADER]: entityId, [LINK_PROOF_HEADER]: proof, [LINK_FEATURES_HEADER]: LINK_FEATURES.join(',') },
      perMessageDeflate: false,
      maxPayload: maxFrame + 1024,
      handshakeTimeout: 10_000,
      ...(this.#mask !== undefined ? { generateMask: this.#mask } : {}),
    });
    this.#ws = ws;
    let refusedStatus: number | null = null;
    let refusedBody: Promise<string> | null = null;
    let failure: Error | null = null;
    let linkedAt: number | null = null;
    let socket: CallbackFrameSocket | null = null;
    /** Settles with the handshake's failure, or null once linked. */
    let handshake: Promise<WireError | null> | null = null;
    ws.on('unexpected-response', (_request, response) => {
      refusedStatus = response.statusCode ?? 0;
      const header = response.headers[REFUSAL_HEADER.toLowerCase()];
      const check = response.headers[REFUSAL_CHECK_HEADER.toLowerCase()];
      // Some runtimes drop a refused upgrade's body: its headers say the same.
      refusedBody = readBounded(response).then((body) => (body === '' && typeof header === 'string' ? JSON.stringify({ error: { message: header, ...(typeof check === 'string' ? { check } : {}) } }) : body));
      void refusedBody.finally(() => ws.terminate());
    });
    ws.on('error', (error) => (failure = error));
    ws.on('open', () => {
      const sendFrame = coalescedSend(ws, () => opened.written());
      const opened: CallbackFrameSocket = new CallbackFrameSocket({
        send: sendFrame,
        sendUtf8: sendFrame,
        close: (code, reason) => ws.close(code, reason),
        abort: () => ws.terminate(),
        tracksWrites: true,
      });
      socket = opened;
      ws.on('message', (data, isBinary) => {
        if (isBinary) ws.close(1003, 'Link frames are text');
        else opened.receive(data.toString());
      });
      const origin = this.#origin;
      handshake = answerChallenge(opened, {
        prove: async (nonce) => ({ origin, signature: await key.sign({ origin, entityId, nonce }) }),
        accept: (accepted, rttMs) => {
          // Stopped mid-handshake: an acceptance already on its way serves no channel.
          if (!current()) throw new WireError('host-offline', 'The sidecar stopped during the link handshake');
          return new LinkEndpoint(opened, { ...this.#options.endpoint, role: 'sidecar', peer: 'worker', onOpen: this.#options.onOpen, log: this.#log, paced: accepted?.paced === true, ...(rttMs !== undefined ? { handshakeRttMs: rttMs } : {}) });
        },
        maxFrameBytes: maxFrame,
        ...(this.#options.handshakeTimeoutMs !== undefined ? { timeoutMs: this.#options.handshakeTimeoutMs } : {}),
      }).then(
        (endpoint) => {
          linkedAt = Date.now();
          this.#endpoint = endpoint;
          this.#log.info('Linked to the worker');
          this.#linkedOnce = true;
          this.#options.onLinked?.(endpoint);
          return null;
        },
        (error: unknown) => (error instanceof WireError ? error : new WireError('invalid-request', String(error))),
      );
    });
    ws.once('close', (code, reason) => {
      // Ends the handshake or the endpoint first, so the report below knows which it was.
      (socket as CallbackFrameSocket | null)?.ended({ code, reason: reason.toString() });
      // A dial of a run since stopped leaves the next run's link alone.
      if (this.#ws === ws) {
        this.#ws = null;
        this.#endpoint = null;
      }
      void (async () => {
        const refused = handshake === null ? null : await handshake;
        await this.#reportClose(code, linkedAt, refused, refusedStatus, refusedBody, failure);
      })().finally(() => {
        if (current()) this.#scheduleRetry();
      });
    });
  }

  async #reportClose(code: number, linkedAt: number | null, refused: WireError | null, status: number | null, body: Promise<string> | null, failure: Error | null): Promise<void> {
    const entityId = this.#options.entityId;
    if (linkedAt !== null) {
      this.#droppedAt = Date.now();
      const upMs = this.#droppedAt - linkedAt;
      if (upMs >= (this.#options.backoff?.stableMs ?? DEFAULT_BACKOFF.stableMs)) this.#attempt = 0;
      // A socket error (a failed write, a reset) is why the link dropped: the code alone is 1006.
      if (failure !== null) this.#log.warn('Link to worker dropped: its socket failed', { code, upMs, error: failure });
      else this.#log.info('Link to worker dropped', { code, upMs });
    } else if (refused?.reason === 'unauthorized' || status === 401 || status === 403) {
      // The worker's own words say what to fix (its hosts entry, this host's key, its public-url or
      // allowed-hosts); the reason alone does not tell which, so the prefix blames none of them.
      const answer = refused === null ? refusalOf(await (body ?? Promise.resolve(''))) : null;
      const message = refused?.message ?? answer?.message ?? null;
      this.#log.error(`Worker refused the link of host "${entityId}": ${message ?? 'check this host\'s entry in the worker\'s "hosts", and the worker\'s "public-url"'}`, status === null ? {} : { status });
      this.#options.onRefused?.({ reason: 'unauthorized', check: answer?.check ?? null });
    } else if (refused !== null) {
      this.#log.warn('Link handshake failed', { reason: refused.reason, message: refused.message });
      // The worker's own refusal only (its link-close): not this end's (a timeout, this sidecar
      // stopping), nor a socket that closed, nor a worker stopping during the handshake.
      if (refused instanceof HandshakeEndedByPeer && refused.reason !== 'host-offline') this.#options.onRefused?.({ reason: refused.reason, check: null });
    } else if (status !== null) {
      const answer = refusalOf(await (body ?? Promise.resolve('')));
      this.#log.warn('Worker refused the link', { status, message: answer.message });
      this.#options.onRefused?.({ reason: answer.reason ?? `http-${status}`, check: answer.check });
    } else {
      this.#log.warn('Could not reach the worker', { error: failure?.message ?? `closed with code ${code}` });
    }
  }

  #scheduleRetry(): void {
    if (this.#stopped) return;
    const droppedLately = Date.now() - this.#droppedAt < (this.#options.backoff?.stableMs ?? DEFAULT_BACKOFF.stableMs);
    const delay = backoffDelay(this.#attempt++, this.#options.backoff, this.#options.random, this.#linkedOnce && !droppedLately);
    this.#log.info('Dialling the worker again', { inMs: delay, attempt: this.#attempt });
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (!this.#stopped) this.#sign();
    }, delay);
  }
}

/** How long a refusal's body is read: one trickling a byte at a time would keep the socket from idling out, and the sidecar from dialling again. */
export const REFUSAL_BODY_MS = 5_000;

/** At most 4 KiB of a refusal's body, for at most `REFUSAL_BODY_MS`: enough for its JSON error, never a flood or a trickle from a rogue server. */
function readBounded(response: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const deadline = setTimeout(() => done(), REFUSAL_BODY_MS);
    const done = () => {
      clearTimeout(deadline);
      resolve(text);
    };
    response.on('data', (chunk: Buffer) => {
      if (text.length < 4096) text += chunk.toString('utf8').slice(0, 4096 - text.length);
      if (text.length >= 4096) done();
    });
    response.once('end', done);
    response.once('error', done);
    response.once('close', done);
  });
}

/**
 * What a worker's refusal body says (`WireError.toHttpBody`): its message, cut short, and its
 * reason and the check the request failed, each only when it is a stable word (the worker's
 * words, or a proxy's in its place, and the audit record keeps no free text).
 */
function refusalOf(body: string): { message: string | null; reason: string | null; check: string | null } {
  let error: { message?: unknown; reason?: unknown; check?: unknown } | undefined;
  try {
    error = (JSON.parse(body) as { error?: typeof error }).error;
  } catch {
    error = undefined;
  }
  const word = (value: unknown) => (typeof value === 'string' && /^[a-z][a-z-]{0,39}$/.test(value) ? value : null);
  return { message: typeof error?.message === 'string' ? error.message.slice(0, 500) : null, reason: isFailureReason(error?.reason) ? error.reason : null, check: word(error?.check) };
}
