/**
 * The server side of one legacy agent session when the host has a warm pool (`warm-pool.ts`).
 *
 * - With a warm instance of the session's (agent, server, revision) at hand, the agent's own
 *   `initialize` is answered from that instance's `initialize` result (with the agent's id) when it
 *   asks the same as the pool did, its `notifications/initialized` is not sent twice, and whatever
 *   the server said while pooled is delivered then, in order, as a cold server would have said it
 *   right after being initialized. From then on messages pass through untouched.
 * - An `initialize` that asks something else (another client, version or capabilities), or a first
 *   message that is not `initialize`, ends the warm instance unused and launches a cold one.
 * - Cold (no warm instance): passes everything through, and once the server has answered the
 *   agent's `initialize`, tells the pool what it was initialized with, so that the agent's next
 *   session finds an instance ready.
 *
 * `warmOrColdTransport` launches the cold instance before the session starts, as the host always
 * did, so a failure to launch is still the channel-open's error.
 *
 * @module
 */
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { sameInitialize, type InitializeParams, type WarmInstance, type WarmKey, type WarmPool } from './warm-pool.ts';
import { holdReadingOf } from '../../shared/link/link-flow.ts';
import { WireError } from '../../shared/errors.ts';

export interface WarmStartOptions {
  pool: WarmPool | undefined;
  /** Null when the session cannot be pooled (no agent named). */
  key: WarmKey | null;
  /** This session's instance, launched as the host launches one (not started). */
  cold(): Promise<Transport>;
  /** Another like it for the pool, launched without this session's id (not started). */
  spare(): Promise<Transport>;
  /** The pool's `generation` when the session read the config `cold` and `spare` launch with. */
  generation?: number;
}

/** The transport for a session: the cold one as before when there is no pool, else a `WarmStartTransport`. */
export async function warmOrColdTransport(options: WarmStartOptions): Promise<Transport> {
  const { pool, key } = options;
  if (pool === undefined || !pool.enabled || key === null) return options.cold();
  const warm = pool.take(key);
  return new WarmStartTransport(pool, key, warm ?? (await options.cold()), options);
}

type Phase = 'before-initialize' | 'warm-initializing' | 'open';

export class WarmStartTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;

  readonly #pool: WarmPool;
  readonly #key: WarmKey;
  readonly #options: WarmStartOptions;
  #warm: WarmInstance | null;
  #inner: Transport;
  #phase: Phase = 'before-initialize';
  /** The agent's `initialize` on a cold instance, until the server answers it. */
  #coldInitialize: { id: string | number; params: InitializeParams } | null = null;
  /** Whether the pool was told this session's opening is over (once, for a warm instance taken). */
  #opened: boolean;
  /** Holds on reading the server's output (`holdReading`), and the one taken on the instance for them. */
  #holds = 0;
  #innerRelease: (() => void) | undefined;
  #closed = false;
  /** `#goCold` under way: `close` waits for it. */
  #goingCold: Promise<void> | undefined;

  constructor(pool: WarmPool, key: WarmKey, instance: WarmInstance | Transport, options: WarmStartOptions) {
    this.#pool = pool;
    this.#key = key;
    this.#options = options;
    this.#warm = 'transport' in instance && 'result' in instance ? instance : null;
    this.#inner = this.#warm?.transport ?? (instance as Transport);
    this.#opened = this.#warm === null;
  }

  /** Whether this session was handed a pooled instance (and still uses it). */
  get warm(): boolean {
    return this.#warm !== null;
  }

  get pid(): number | undefined {
    return (this.#inner as { pid?: number }).pid;
  }

  /** Holds back the server's output (`shared/link/link-flow.ts`), the cold one's too if the warm one gives way to it. */
  holdReading(): () => void {
    if (this.#holds++ === 0) this.#innerRelease = holdReadingOf(this.#inner);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds > 0) return;
      const release = this.#innerRelease;
      this.#innerRelease = undefined;
      release?.();
    };
  }

  async start(): Promise<void> {
    this.#wire(this.#inner);
    // A pooled instance is already running.
    if (this.#warm === null) await this.#inner.start();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#openingOver();
    await this.#inner.close();
    // A cold instance still launching is closed by `#goCold` once it exists: wait for that, so
    // nothing of this session is left running when its close resolves.
    await this.#goingCold?.catch(() => {});
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.#phase === 'open') return this.#inner.send(message, options);
    const initialize = 'method' in message && message.method === 'initialize' && 'id' in message ? message : null;
    if (this.#phase === 'before-initialize') {
      const warm = this.#warm;
      const params = (initialize?.params ?? {}) as InitializeParams;
      if (warm !== null && initialize !== null && sameInitialize(warm.params, params)) {
        this.#phase = 'warm-initializing';
        const answer = { jsonrpc: '2.0', id: initialize.id, result: warm.result } as JSONRPCMessage;
        queueMicrotask(() => this.onmessage?.(answer));
        return;
      }
      if (warm !== null) await (this.#goingCold = this.#goCold());
      this.#phase = 'open';
      if (initialize !== null) this.#coldInitialize = { id: initialize.id, params };
      return this.#inner.send(message, options);
    }
    // Warm, initialize answered: the pool already sent the server `notifications/initialized`.
    this.#phase = 'open';
    this.#openingOver();
    const pending = this.#warm?.pending.splice(0) ?? [];
    const isInitialized = 'method' in message && message.method === 'notifications/initialized' && !('id' in message);
    if (!isInitialized) await this.#inner.send(message, options);
    for (const held of pending) this.onmessage?.(held);
  }

  #wire(transport: Transport): void {
    transport.onmessage = (message) => this.#fromServer(message);
    transport.onerror = (error) => this.onerror?.(error);
    transport.onclose = () => {
      this.#openingOver();
      this.onclose?.();
    };
  }

  /** Tells the pool this session, handed a warm instance, is no longer opening (its refills wait for that). */
  #openingOver(): void {
    if (this.#opened) return;
    this.#opened = true;
    this.#pool.opened();
  }

  #fromServer(message: JSONRPCMessage): void {
    if (this.#warm !== null && this.#phase !== 'open') {
      this.#warm.pending.push(message);
      return;
    }
    const asked = this.#coldInitialize;
    if (asked !== null && 'id' in message && message.id === asked.id && !('method' in message)) {
      this.#coldInitialize = null;
      if ('result' in message) this.#pool.learn(this.#key, asked.params, () => this.#options.spare(), this.#options.generation);
    }
    this.onmessage?.(message);
  }

  /** The agent asked something the warm instance was not initialized for: end it, launch a cold one. */
  async #goCold(): Promise<void> {
    this.#openingOver();
    const unused = this.#inner;
    unused.onclose = undefined;
    unused.onmessage = undefined;
    this.#warm = null;
    void unused.close().catch(() => {});
    let cold: Transport;
    try {
      cold = await this.#options.cold();
    } catch (error) {
      // The warm one no longer tells the bridge it closed: this does, with why (a limit, a launch that failed).
      if (!this.#closed) {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        this.onclose?.();
      }
      throw error;
    }
    if (this.#closed) {
      // The session closed while its cold instance was launching: that instance is no one's.
      await cold.close().catch(() => {});
      throw new WireError('server-exited', `Server "${this.#key.server}" was not started: its session closed while it was launching`);
    }
    this.#inner = cold;
    if (this.#holds > 0) {
      // The warm one's hold ends with it; the cold one serves now, and is held instead.
      this.#innerRelease?.();
      this.#innerRelease = holdReadingOf(this.#inner);
    }
    this.#wire(this.#inner);
    await this.#inner.start();
  }
}
