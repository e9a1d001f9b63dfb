/**
 * A rogue worker: a plain `ws` server on 127.0.0.1 that a real sidecar is pointed at. It speaks
 * just enough of the link to get what a sidecar gives a worker it dialled: each dial is queued
 * with the entity id it announced, and a test sends it any challenge it likes (its own nonce, or
 * one relayed from the real worker) and reads the proof that comes back.
 *
 * @module
 */
import { WebSocketServer, type WebSocket } from 'ws';

export class RogueDial {
  readonly received: Array<Record<string, unknown>> = [];
  readonly #ws: WebSocket;

  constructor(
    ws: WebSocket,
    /** The upgrade request's headers, as the sidecar sent them. */
    readonly headers: Record<string, string | string[] | undefined>,
  ) {
    this.#ws = ws;
    ws.on('message', (data) => this.received.push(JSON.parse(data.toString()) as Record<string, unknown>));
  }

  /** The `X-Switchyard-Entity-Id` the sidecar announced. */
  get entityId(): string | undefined {
    const header = this.headers['x-switchyard-entity-id'];
    return typeof header === 'string' ? header : undefined;
  }

  send(frame: Record<string, unknown>): void {
    this.#ws.send(JSON.stringify(frame));
  }

  /** Sends `text` as one frame, as is (one nested too deep for `JSON.stringify`, say). */
  sendText(text: string): void {
    this.#ws.send(text);
  }

  /** The first frame of `type` the sidecar sends; rejects if the socket closes first. */
  next(type: string): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const frame = this.received.find((f) => f.type === type);
        if (frame === undefined) return;
        this.#ws.off('message', check);
        resolve(frame);
      };
      this.#ws.on('message', check);
      this.#ws.once('close', () => reject(new Error(`the sidecar closed before sending ${type}`)));
      check();
    });
  }

  close(): void {
    this.#ws.terminate();
  }
}

export class RogueWorker {
  readonly #server: WebSocketServer;
  readonly #dials: RogueDial[] = [];
  readonly #waiting: Array<(dial: RogueDial) => void> = [];

  private constructor(server: WebSocketServer) {
    this.#server = server;
    server.on('connection', (ws, request) => {
      const dial = new RogueDial(ws, { ...request.headers });
      const waiter = this.#waiting.shift();
      if (waiter !== undefined) waiter(dial);
      else this.#dials.push(dial);
    });
  }

  static start(): Promise<RogueWorker> {
    return new Promise((resolve, reject) => {
      const server = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/link' });
      server.once('listening', () => resolve(new RogueWorker(server)));
      server.once('error', reject);
    });
  }

  get url(): string {
    return `http://${this.origin}`;
  }

  /** `127.0.0.1:<port>`: what a sidecar dialling `url` signs as the worker's origin. */
  get origin(): string {
    return `127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  /** The next dial from a sidecar (already made, or still to come). */
  nextDial(): Promise<RogueDial> {
    const dial = this.#dials.shift();
    if (dial !== undefined) return Promise.resolve(dial);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  async stop(): Promise<void> {
    for (const client of this.#server.clients) client.terminate();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
