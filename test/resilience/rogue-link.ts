/**
 * A rogue sidecar: a raw `ws` client that links to the worker's `/link` as a configured host (it
 * answers the challenge with that host's private key) and then sends whatever a test wants, frame
 * by frame, instead of speaking the protocol. `dial` stops before the handshake, for tests that
 * answer the challenge themselves (replays, relays, wrong keys); given a key, it signs the upgrade
 * proof with it, as a sidecar does, without which the worker upgrades nobody.
 *
 * `probe()` tells what became of the link after an input: a keepalive is sent and the answer
 * awaited. Either the link is still up (`keepalive-reply` with the same id), or it was closed, in
 * which case the worker's `link-close` frame (its reason and message) and the WebSocket close
 * code and reason are reported. That is how a test checks "a clear error with a reason, and no
 * crash" for each bad frame.
 *
 * @module
 */
import WebSocket from 'ws';
import { originOfUrl } from '../../shared/link/link-identity.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER } from '../../shared/link/link-upgrade-proof.ts';
import { hostSigner, type HostCredential } from '../support/configs.ts';

/** Why the worker refused a link: its HTTP answer before the upgrade, or its link-close after. */
export interface LinkRefusal extends Error {
  status?: number;
  body?: string;
  linkClose?: Record<string, unknown>;
}

export type LinkOutcome =
  | { kind: 'alive' }
  | { kind: 'closed'; code: number; reason: string; linkClose: Record<string, unknown> | undefined };

export class RogueLink {
  /** Every frame the worker sent, parsed (text that is not JSON is kept as `{ text }`). */
  readonly received: Array<Record<string, unknown>> = [];
  readonly #ws: WebSocket;
  readonly #closed: Promise<{ code: number; reason: string }>;
  #probeId = 1_000_000;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    this.#closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    ws.on('message', (data) => {
      const text = data.toString();
      try {
        this.received.push(JSON.parse(text) as Record<string, unknown>);
      } catch {
        this.received.push({ text });
      }
    });
  }

  /**
   * Links as `entityId`, signing the challenge with `host`'s private key for the worker's own
   * origin; resolves once the worker accepted. Rejects with a `LinkRefusal` when it refuses.
   */
  static async connect(workerUrl: string, entityId: string, host: HostCredential): Promise<RogueLink> {
    const sign = await hostSigner(host);
    const rogue = await RogueLink.dial(workerUrl, entityId, { key: host });
    const challenge = await rogue.next('link-challenge');
    const origin = originOfUrl(workerUrl);
    rogue.send(JSON.stringify({ v: 1, type: 'link-proof', origin, signature: await sign({ origin, entityId, nonce: String(challenge.nonce) }) }));
    await rogue.next('link-accepted');
    // What came before is the handshake; a test reads what the worker sends on the link.
    rogue.received.splice(0);
    return rogue;
  }

  /**
   * Opens `/link` as `entityId` and stops there (the challenge is the first frame received). With
   * `key`, the upgrade request carries that key's proof for the worker's origin (a key holder);
   * without, none (a stranger, or a sidecar older than the worker).
   */
  static async dial(workerUrl: string, entityId: string, options: { key?: HostCredential; headers?: Record<string, string> } = {}): Promise<RogueLink> {
    const url = `${workerUrl.replace(/^http/, 'ws')}/link`;
    const proof = options.key === undefined ? {} : { [LINK_PROOF_HEADER]: await createLinkProofHeader(await hostSigner(options.key), { origin: originOfUrl(workerUrl), entityId }) };
    const ws = new WebSocket(url, { headers: { 'x-switchyard-entity-id': entityId, ...proof, ...options.headers }, perMessageDeflate: false });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new RogueLink(ws)));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => reject(Object.assign(new Error(`refused with HTTP ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
      });
      ws.once('error', reject);
    });
  }

  /**
   * The first frame of `type` (already received or still to come). Rejects with a `LinkRefusal`
   * carrying the worker's link-close when the link closes first.
   */
  next(type: string): Promise<Record<string, unknown>> {
    const found = () => this.received.find((f) => f.type === type);
    return new Promise((resolve, reject) => {
      const check = () => {
        const frame = found();
        if (frame !== undefined) {
          this.#ws.off('message', check);
          resolve(frame);
        }
      };
      this.#ws.on('message', check);
      check();
      void this.#closed.then(({ code, reason }) => {
        this.#ws.off('message', check);
        if (found() !== undefined) return resolve(found()!);
        const linkClose = this.received.find((f) => f.type === 'link-close');
        reject(Object.assign(new Error(`link closed (${code} ${reason}) before ${type}: ${JSON.stringify(linkClose ?? null)}`), linkClose === undefined ? {} : { linkClose }));
      });
    });
  }

  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  send(data: string | Buffer): void {
    this.#ws.send(data, { binary: typeof data !== 'string' });
  }

  /** Sends a keepalive and reports whether the link survived what was sent before it. */
  async probe(timeoutMs = 5_000): Promise<LinkOutcome> {
    const id = this.#probeId++;
    if (this.open) this.#ws.send(JSON.stringify({ v: 1, type: 'keepalive', id }));
    const reply = new Promise<LinkOutcome>((resolve) => {
      const check = () => {
        if (this.received.some((f) => f.type === 'keepalive-reply' && f.id === id)) {
          this.#ws.off('message', check);
          resolve({ kind: 'alive' });
        }
      };
      this.#ws.on('message', check);
      check();
    });
    const closed = this.#closed.then(({ code, reason }): LinkOutcome => ({ kind: 'closed', code, reason, linkClose: this.received.find((f) => f.type === 'link-close') }));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the worker neither answered keepalive ${id} nor closed the link`)), timeoutMs)));
    try {
      return await Promise.race([reply, closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** How the worker closed the link, once it has. */
  closedWith(): Promise<{ code: number; reason: string }> {
    return this.#closed;
  }

  /** Frames received that are not keepalive traffic. */
  traffic(): Array<Record<string, unknown>> {
    return this.received.filter((f) => f.type !== 'keepalive' && f.type !== 'keepalive-reply');
  }

  async close(): Promise<void> {
    if (this.#ws.readyState === WebSocket.CLOSED) return;
    this.#ws.terminate();
    await this.#closed;
  }
}
