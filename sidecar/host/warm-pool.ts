/**
 * WarmPool: server instances spawned and initialized before an agent asks for them, so a legacy
 * session's `initialize` is answered at once instead of after a process start (issue 17: about
 * 950 ms for `/mcp` with the three demo servers, every session spawning every server).
 *
 * - Keyed by (agent, server, effective trust revision, server config): an instance is launched exactly as that
 *   agent's session would launch it (same config, same compiled policy), is handed to one session
 *   of that agent only and is never returned to the pool, so nothing is ever shared between agents
 *   or sessions. A new revision or config for an (agent, server) ends the instances of the old one.
 * - The pool learns what to initialize with from the agent itself: after a cold session of that
 *   agent was initialized, its `initialize` params (protocol version, capabilities, clientInfo)
 *   are what the pool's instances are initialized with, and a session takes a warm instance only
 *   when its own `initialize` asks the same (`warm-start-transport.ts`); so the server sees what
 *   a cold start would have shown it. The first session of an agent is therefore always cold.
 * - Sized by config: `size` instances per key (0 disables the pool), at most `maxInstances` in all
 *   (the pool's share of the host's memory; when it is full, the key used longest ago gives up an
 *   instance to a key used more recently); refilled in the background after each take, once no session handed an instance is still opening
 *   and sessions have paused (`REFILL_QUIET_MS`: a burst is served from what is ready, not slowed by
 *   spawns beside it), at most
 *   `MAX_CONCURRENT_STARTS` instances starting at once so that refills never crowd out sessions; a key
 *   unused for `idleMs` is emptied; an instance that ends while pooled is dropped, not replaced at
 *   once (a crashing server would otherwise respawn in a loop), and a key whose instances fail to
 *   initialize `MAX_FAILURES` times in a row is no longer filled.
 * - Every pooled instance holds one reservation of the `budget` while it is pooled: the seam for
 *   host-wide limits (per-agent process limits, the host process budget). Without one the pool
 *   counts only against `maxInstances`.
 * - `clear()` ends every pooled instance and forgets every key, at each reload of the host's
 *   config: a key's launcher holds the config it was learnt under. `keepOnly()` ends those of the
 *   agents and servers the worker's roster no longer routes here (`shared/link/host-roster.ts`).
 * - `dispose()` ends every pooled instance and stops filling; the composition calls it on stop.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../log.ts';
import type { RosterCheck } from '../../shared/link/host-roster.ts';

export interface WarmKey {
  agent: string;
  server: string;
  /** The effective trust revision (`uncontained` when the server runs without a profile). */
  revision: string;
  /** The server's config as its sessions launch it (JSON): an edit of it, reload or not, is another key. */
  config?: string;
}

/**
 * Host-wide limits the pool's instances count against. The pool asks before each spawn and gives
 * the reservation back when the instance ends or a session takes it (from then on the process is
 * that session's, counted wherever sessions' processes are counted).
 */
export interface WarmPoolBudget {
  tryReserve(agent: string): boolean;
  release(agent: string): void;
}

/** A spare's transport; `adopt` tells the host's budget a session took it (`take`). */
export type SpareTransport = Transport & { adopt?: () => void };

/** The `params` of an agent's `initialize` that a warm instance must match. */
export type InitializeParams = Record<string, unknown>;

/** A started server that has answered the pool's `initialize` and been sent `notifications/initialized`. */
export interface WarmInstance {
  readonly transport: Transport;
  readonly params: InitializeParams;
  /** The server's `initialize` result, answered to the session's own `initialize`. */
  readonly result: Record<string, unknown>;
  /** What the server sent while pooled (a request for roots, a log line), for the session that takes it. */
  readonly pending: JSONRPCMessage[];
}

export interface WarmPoolOptions {
  /** Instances kept ready per key; 0 disables the pool. */
  size: number;
  /** Instances pooled at most, all keys together. */
  maxInstances: number;
  /** A key untouched this long is emptied. */
  idleMs: number;
  log: Logger;
  budget?: WarmPoolBudget;
  /** Bound on a pooled instance's start and `initialize`. */
  initTimeoutMs?: number;
  /** Refills wait until no session is opening and none arrived for this long (`REFILL_QUIET_MS`; 0: refill at once). */
  refillQuietMs?: number;
}

/** The defaults the config reference prints. */
export const DEFAULT_WARM_POOL = { size: 1, maxInstances: 16, idleSeconds: 600 } as const;

const MAX_FAILURES = 3;
/**
 * Instances starting at once, all keys together: a refill is background work, and a burst of
 * sessions taking instances must not turn into a burst of spawns competing with those sessions.
 */
const MAX_CONCURRENT_STARTS = 2;
/**
 * Refills wait for a pause in the sessions: a burst of sessions taking instances is served by the
 * instances ready, and a server start (hundreds of ms of CPU for a node server) during the burst
 * takes a core from the sessions being opened. A steady stream of sessions still gets its refills
 * after `REFILL_MAX_DEFER_MS`, long enough for a burst of 64 on a loaded two-core machine (9 s).
 */
const REFILL_QUIET_MS = 250;
export const REFILL_MAX_DEFER_MS = 30_000;
const MAX_PENDING_MESSAGES = 64;
const INIT_ID = 'switchyard-warm-pool-initialize';

interface KeyState {
  key: WarmKey;
  params: InitializeParams;
  launch: () => Promise<Transport>;
  ready: WarmInstance[];
  starting: number;
  failures: number;
  idle: ReturnType<typeof setTimeout> | undefined;
  /** When a session last took from or taught this key (for making room: the stalest key gives way). */
  touched: number;
}

export class WarmPool {
  readonly #options: WarmPoolOptions;
  readonly #keys = new Map<string, KeyState>();
  #disposed = false;
  /** Counts `clear()`s: what a session learnt under an earlier one is not taken (`learn`). */
  #generation = 0;
  /** The pairs the worker's last roster removed (`keepOnly`): not learnt again until the next. */
  #removed: RosterCheck | undefined = undefined;
  /** Orders touches (a counter, not a clock: two in one millisecond still differ). */
  #clock = 0;
  /** When a session last took, taught or finished opening, and since when refills have waited. */
  #lastActivity = -Infinity;
  /**
   * When each session handed an instance, whose opening has not finished (`opened`), took it; in
   * order. One older than `REFILL_MAX_DEFER_MS` no longer holds refills (a session that never
   * reported cannot stop them).
   */
  #opening: number[] = [];
  #deferredSince: number | null = null;
  #refillTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: WarmPoolOptions) {
    this.#options = options;
  }

  /** Read before a session reads its config, and handed back to `learn` with what it learnt. */
  get generation(): number {
    return this.#generation;
  }

  get enabled(): boolean {
    return this.#options.size > 0 && this.#options.maxInstances > 0 && !this.#disposed;
  }

  /** Instances ready or starting, all keys together. */
  get size(): number {
    let n = 0;
    for (const state of this.#keys.values()) n += state.ready.length + state.starting;
    return n;
  }

  /** A ready instance for `key`, removed from the pool (refilled in the background), or undefined. */
  take(key: WarmKey): WarmInstance | undefined {
    const state = this.#keys.get(idOf(key));
    if (state === undefined) return undefined;
    this.#touch(state);
    const instance = state.ready.shift();
    if (instance !== undefined) {
      (instance.transport as SpareTransport).adopt?.();
      this.#opening.push(Date.now());
      this.#options.budget?.release(key.agent);
      this.#options.log.debug('Warm instance taken', { agent: key.agent, server: key.server });
    }
    this.#sessionArrived();
    this.#fill(state);
    return instance;
  }

  /**
   * A session handed an instance by `take` has finished opening (its `initialize` answered and
   * acknowledged), gone cold instead, or closed: once no session is opening, refills may start.
   * Called once per instance taken.
   */
  opened(): void {
    this.#opening.shift();
    this.#sessionArrived();
  }

  /**
   * What a cold session of `key` was initialized with and how to launch another like it: the pool
   * keeps `size` such instances from now on. Instances learnt with other params are ended.
   * `generation`: the pool's `generation` when the session read the config `launch` holds.
   */
  learn(key: WarmKey, params: InitializeParams, launch: () => Promise<Transport>, generation = this.#generation): void {
    // A session that read its config before the last `clear()` would teach the pool the old one.
    if (!this.enabled || generation !== this.#generation) return;
    // A session of a pair the worker's last roster removed, that overtook it; not one just added,
    // which may come before the roster that names it.
    if (this.#removed?.(key.agent, key.server) === true) return;
    for (const [id, other] of this.#keys) {
      if (other.key.agent === key.agent && other.key.server === key.server && (other.key.revision !== key.revision || other.key.config !== key.config)) this.#drop(id, other);
    }
    const id = idOf(key);
    let state = this.#keys.get(id);
    if (state !== undefined && sameInitialize(state.params, params)) {
      state.launch = launch;
    } else {
      if (state !== undefined) this.#drop(id, state);
      state = { key, params, launch, ready: [], starting: 0, failures: 0, idle: undefined, touched: 0 };
      this.#keys.set(id, state);
    }
    this.#touch(state);
    this.#sessionArrived();
    this.#fill(state);
  }

  /**
   * Ends every pooled instance and forgets every key: each instance was launched as the config
   * read then said, and each key's launcher holds that config (command, args, env, policy), which
   * a reload may have changed or removed. The pool learns again from each agent's next cold session.
   */
  async clear(): Promise<void> {
    this.#generation++;
    const closing: Array<Promise<void>> = [];
    for (const [id, state] of this.#keys) closing.push(...this.#drop(id, state));
    await Promise.all(closing);
  }

  /**
   * Ends the instances of every agent and server `keeps` refuses, and forgets their keys (the
   * worker's roster no longer routes them here); a spare still starting is not kept once up. Until
   * the next roster or `forgetRoster`, a pair of `removed` (the previous roster's, not this one's)
   * is not learnt again. Returns how many instances were ended.
   */
  keepOnly(keeps: RosterCheck, removed?: RosterCheck): number {
    // Kept, so that a session of a pair it removed that overtook it teaches the pool nothing.
    this.#removed = removed;
    let ended = 0;
    for (const [id, state] of [...this.#keys]) {
      if (keeps(state.key.agent, state.key.server)) continue;
      ended += state.ready.length;
      if (state.ready.length > 0) this.#options.log.info('Warm instances ended: the worker no longer routes their agent and server here', { agent: state.key.agent, server: state.key.server, count: state.ready.length });
      void Promise.all(this.#drop(id, state));
    }
    return ended;
  }

  /** Learns of every pair again, as before any roster: the link that told it has ended. */
  forgetRoster(): void {
    this.#removed = undefined;
  }

  /** Ends every pooled instance; nothing is filled afterwards. */
  async dispose(): Promise<void> {
    this.#disposed = true;
    clearTimeout(this.#refillTimer);
    const closing: Array<Promise<void>> = [];
    for (const [id, state] of this.#keys) closing.push(...this.#drop(id, state));
    await Promise.all(closing);
  }

  #fill(state: KeyState): void {
    const { size, maxInstances, budget, log } = this.#options;
    while (this.enabled && this.#keys.get(idOf(state.key)) === state && state.failures < MAX_FAILURES) {
      if (state.ready.length + state.starting >= size || this.#startingCount() >= MAX_CONCURRENT_STARTS) return;
      if (this.#refillDeferred()) return;
      if (this.size >= maxInstances && !this.#makeRoomFor(state)) return;
      if (budget !== undefined && !budget.tryReserve(state.key.agent)) {
        log.debug('Warm pool not refilled: the host budget is spent', { agent: state.key.agent, server: state.key.server });
        return;
      }
      state.starting++;
      // `starting` (all keys) lets an operator, and the bench, see when refills are done.
      log.info('Warm instance starting', { agent: state.key.agent, server: state.key.server, starting: this.#startingCount() });
      void this.#start(state).then(
        (instance) => {
          state.starting--;
          state.failures = 0;
          if (this.#disposed || this.#keys.get(idOf(state.key)) !== state) {
            budget?.release(state.key.agent);
            void instance.transport.close().catch(() => {});
            const why = this.#disposed ? 'the pool is closing' : "the pool forgot its key: the agent's sessions now initialize differently, the host's config changed, or the worker no longer routes this agent and server here";
            log.info('Warm instance not kept', { agent: state.key.agent, server: state.key.server, why, starting: this.#startingCount() });
            return;
          }
          state.ready.push(instance);
          log.info('Warm instance ready', { agent: state.key.agent, server: state.key.server, starting: this.#startingCount() });
          this.#fillAll();
        },
        (error: unknown) => {
          state.starting--;
          state.failures++;
          budget?.release(state.key.agent);
          // One failed spare costs nothing (the session starts cold) and is expected while the
          // sidecar stops (a terminal's Ctrl-C reaches the starting server too): only giving up
          // on a key is the operator's concern.
          const fields = { agent: state.key.agent, server: state.key.server, failures: state.failures, starting: this.#startingCount(), error };
          if (this.#disposed) log.debug('Warm instance did not start', fields);
          else if (state.failures >= MAX_FAILURES) log.warn('Warm pool gave up on a server: its instances keep failing to start, so its sessions start cold', fields);
          else log.info('Warm instance did not start', fields);
          this.#fillAll();
        },
      );
    }
  }

  /** Ends one ready instance of the key used longest ago before `state`'s, if there is one. */
  #makeRoomFor(state: KeyState): boolean {
    let stalest: KeyState | undefined;
    for (const other of this.#keys.values()) {
      if (other !== state && other.ready.length > 0 && other.touched < state.touched && (stalest === undefined || other.touched < stalest.touched)) stalest = other;
    }
    if (stalest === undefined) return false;
    this.#end(stalest, stalest.ready[0]!, 'room was made for a key used more recently');
    return true;
  }

  #sessionArrived(): void {
    this.#lastActivity = Date.now();
  }

  /**
   * Whether refills wait for the sessions opening now (`opened`) and then a pause
   * (`REFILL_QUIET_MS`); when they do, a timer looks again once the pause could have come, and
   * refills go ahead anyway once they have waited `REFILL_MAX_DEFER_MS`.
   */
  #refillDeferred(): boolean {
    const quietMs = this.#options.refillQuietMs ?? REFILL_QUIET_MS;
    if (quietMs === 0) return false;
    const now = Date.now();
    const quietFor = now - this.#lastActivity;
    this.#deferredSince ??= now;
    while (this.#opening.length > 0 && now - this.#opening[0]! >= REFILL_MAX_DEFER_MS) this.#opening.shift();
    if ((this.#opening.length === 0 && quietFor >= quietMs) || now - this.#deferredSince >= REFILL_MAX_DEFER_MS) {
      this.#deferredSince = null;
      return false;
    }
    if (this.#refillTimer === undefined) {
      const waitMs = Math.min(Math.max(1, quietMs - quietFor), REFILL_MAX_DEFER_MS - (now - this.#deferredSince));
      this.#refillTimer = setTimeout(() => {
        this.#refillTimer = undefined;
        this.#fillAll();
      }, waitMs);
      (this.#refillTimer as { unref?: () => void }).unref?.();
    }
    return true;
  }

  #startingCount(): number {
    let n = 0;
    for (const state of this.#keys.values()) n += state.starting;
    return n;
  }

  /** After a start settled: the next key still short of instances gets its turn. */
  #fillAll(): void {
    for (const state of [...this.#keys.values()]) this.#fill(state);
  }

  /** Launches and initializes one instance; rejects (and ends it) when it fails or takes too long. */
  async #start(state: KeyState): Promise<WarmInstance> {
    const transport = await state.launch();
    const pending: JSONRPCMessage[] = [];
    let settle!: { resolve(result: Record<string, unknown>): void; reject(error: Error): void };
    const answered = new Promise<Record<string, unknown>>((resolve, reject) => (settle = { resolve, reject }));
    // The server may end before the initialize is awaited (start or send failed, or a Ctrl-C): that rejection is the catch's below, not an unhandled one.
    answered.catch(() => {});
    let instance: WarmInstance | undefined;
    transport.onmessage = (message) => {
      if ('id' in message && message.id === INIT_ID && !('method' in message)) {
        if ('result' in message) settle.resolve(message.result as Record<string, unknown>);
        else settle.reject(new Error('The server refused the warm pool\'s initialize'));
        return;
      }
      if (pending.length < MAX_PENDING_MESSAGES) pending.push(message);
      else if (instance !== undefined) this.#end(state, instance, 'it sent too much while pooled');
    };
    transport.onclose = () => {
      settle.reject(new Error('The server ended while being initialized'));
      if (instance !== undefined) this.#end(state, instance, 'it ended while pooled');
    };
    transport.onerror = () => {};
    const timer = setTimeout(() => settle.reject(new Error('The server did not answer the warm pool\'s initialize in time')), this.#options.initTimeoutMs ?? 30_000);
    try {
      await transport.start();
      await transport.send({ jsonrpc: '2.0', id: INIT_ID, method: 'initialize', params: state.params } as JSONRPCMessage);
      const result = await answered;
      await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
      instance = { transport, params: state.params, result, pending };
      return instance;
    } catch (error) {
      await transport.close().catch(() => {});
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops an instance that can no longer be handed out. */
  #end(state: KeyState, instance: WarmInstance, why: string): void {
    const at = state.ready.indexOf(instance);
    if (at === -1) return;
    state.ready.splice(at, 1);
    this.#options.budget?.release(state.key.agent);
    this.#options.log.info('Warm instance dropped', { agent: state.key.agent, server: state.key.server, why });
    void instance.transport.close().catch(() => {});
  }

  #touch(state: KeyState): void {
    state.touched = ++this.#clock;
    if (state.idle !== undefined) clearTimeout(state.idle);
    state.idle = setTimeout(() => void Promise.all(this.#drop(idOf(state.key), state)), this.#options.idleMs);
    (state.idle as { unref?: () => void }).unref?.();
  }

  #drop(id: string, state: KeyState): Array<Promise<void>> {
    if (this.#keys.get(id) === state) this.#keys.delete(id);
    if (state.idle !== undefined) clearTimeout(state.idle);
    const instances = state.ready.splice(0);
    for (let i = 0; i < instances.length; i++) this.#options.budget?.release(state.key.agent);
    return instances.map((instance) => instance.transport.close().catch(() => {}));
  }
}

function idOf(key: WarmKey): string {
  return JSON.stringify([key.agent, key.server, key.revision, key.config ?? null]);
}

/** Whether two `initialize` params ask the same of a server (their `_meta` aside). */
export function sameInitialize(a: InitializeParams, b: InitializeParams): boolean {
  const { _meta: _a, ...restA } = a;
  const { _meta: _b, ...restB } = b;
  return canonical(restA) === canonical(restB);
}

/** JSON with object keys sorted, so key order does not count. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
