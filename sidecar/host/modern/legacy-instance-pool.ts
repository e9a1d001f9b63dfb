/**
 * LegacyInstancePool: the host's legacy instances for modern agents, one per (agent, server name,
 * effective trust revision) (DESIGN §9).
 *
 * - Never shared between agents: the agent is part of the key, so one agent's server state
 *   (and anything the server remembers) never reaches another agent.
 * - The effective trust revision is part of the key: a changed floor or profile gets a fresh
 *   process under the new policy, and the old one idles out; so is the server's config.
 * - Concurrent first requests share one start (the pending start is what the key holds).
 * - Idle expiry: an instance with nothing in flight for `idleMs` since its last call or acquire is
 *   closed; an instance that ended (its process exited) leaves the pool at once, so the next
 *   request starts a fresh one.
 * - `dispose` (sidecar stop) ends them all and refuses new ones (`host-offline`).
 * - Each instance is of its server's era (`server-instance.ts`): the stdio probe, or the verdict
 *   cached per server config, picks a legacy instance or a modern one.
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import type { RosterCheck } from '../../../shared/link/host-roster.ts';
import type { Logger } from '../../log.ts';
import { ModernServerInstance } from './modern-server-instance.ts';
import { DEFAULT_PROBE_TIMEOUT_MS, ServerEraCache } from '../../../shared/era-bridge/discover-verdict.ts';
import { startServerInstance, type InstanceStart, type ServerInstance } from './server-instance.ts';

/** Default idle time of a legacy instance: sidecar.json `"modern-instance-idle-seconds"`. */
export const DEFAULT_INSTANCE_IDLE_SECONDS = 15 * 60;

export interface InstanceKey {
  agent: string;
  server: string;
  /** The effective trust revision, or a marker of the uncontained launch. */
  revision: string;
  /**
   * The server's config it launches with (JSON): an entry edited in mcp.json is another
   * instance, whether or not a reload ran (single-machine mode watches no files), as a warm key is.
   */
  config?: string;
}

export interface LegacyInstancePoolOptions {
  idleMs: number;
  log: Logger;
  /** The era verdicts per server config (`server-era.ts`); a private cache otherwise. */
  eras?: ServerEraCache;
  /** How long the era probe waits for `server/discover` (2 s by default). */
  probeTimeoutMs?: number;
  /** How long a legacy server has to answer the host's `initialize` (`HOST_INITIALIZE_TIMEOUT_MS` by default). */
  initializeTimeoutMs?: number;
}

/** What the pool needs to start an instance (with `eraKey`, of the era its server speaks); the pool adds its own activity and end hooks. */
export type { InstanceStart, ServerInstance };

interface Entry {
  key: InstanceKey;
  starting: Promise<ServerInstance>;
  instance: ServerInstance | null;
  idle: NodeJS.Timeout | undefined;
  /** Out of the pool for good (`keepOnly`): ends as soon as it has nothing in flight. */
  retired?: true;
  /** A retired instance's close has begun. */
  closing?: true;
}

export class LegacyInstancePool {
  readonly #options: LegacyInstancePoolOptions;
  readonly #entries = new Map<string, Entry>();
  /** Instances out of the pool (`keepOnly`) that still run: each serves what it was given and ends. */
  readonly #retired = new Set<Entry>();
  /** The pairs the worker's last roster removed: an instance for one serves its request and is not kept. */
  #removed: RosterCheck | undefined = undefined;
  #disposed = false;
  /** Aborted by `dispose`: a start still waiting for its server's `initialize` ends it at once. */
  readonly #stopping = new AbortController();
  /** The era verdicts of this host's server configs. */
  readonly eras: ServerEraCache;

  constructor(options: LegacyInstancePoolOptions) {
    this.#options = options;
    this.eras = options.eras ?? new ServerEraCache();
  }

  /** Live instances (started, not ended), retired ones still serving included. */
  get size(): number {
    return this.instances().length;
  }

  /** The live instances, retired ones still serving included, for status and tests. */
  instances(): ServerInstance[] {
    return [...this.#entries.values(), ...this.#retired].flatMap((entry) => (entry.instance !== null && !entry.instance.ended ? [entry.instance] : []));
  }

  /**
   * The live instance for `key`, or a new one from `start()` (called only when none is live or
   * starting). Use it at once: an instance with nothing in flight is on its idle clock.
   */
  async acquire(key: InstanceKey, start: () => Promise<InstanceStart>): Promise<ServerInstance> {
    if (this.#disposed) throw new WireError('host-offline', 'This host is stopping: it starts no new server processes');
    const id = JSON.stringify([key.agent, key.server, key.revision, key.config ?? null]);
    const existing = this.#entries.get(id);
    if (existing !== undefined) {
      const instance = await existing.starting;
      if (!instance.ended) {
        // The clock starts again, not stops: the caller may start no call (its agent left while it
        // waited, or its answer needs none, as a legacy server/discover), and then nothing else
        // would ever arm it. A call that starts stops it (`onActivity`).
        if (instance.inFlight === 0) this.#armIdle(id, existing);
        return instance;
      }
      if (this.#entries.get(id) === existing) this.#entries.delete(id);
      return this.acquire(key, start);
    }
    // A pair the worker's last roster removed (a request that overtook it): served, and not kept
    // for the next; requests at once share its start. Only removed ones: a pair the worker just
    // added may come before the roster that names it.
    const kept = this.#removed?.(key.agent, key.server) !== true;
    const entry: Entry = { key, starting: null!, instance: null, idle: undefined, ...(kept ? {} : { retired: true as const }) };
    entry.starting = (async () => {
      const hooks = {
        // A call starting leaves the clock running: it finds the call in flight if it runs out, and
        // the last call's end starts it again (a refresh, not a new timer per request: issue 17).
        onActivity: (inFlight: number) => {
          if (inFlight === 0) this.#armIdle(id, entry);
        },
        // Only the entry's own instance ending ends the entry: a start that failed (a cached
        // verdict proved wrong) ends its process while a retry is started for this same entry,
        // whose failure, if any, acquire's catch takes care of (review s23).
        onEnded: () => {
          if (entry.instance?.ended !== true) return;
          this.#clearIdle(entry);
          this.#retired.delete(entry);
          if (this.#entries.get(id) === entry) this.#entries.delete(id);
        },
        signal: this.#stopping.signal,
        ...(this.#options.initializeTimeoutMs !== undefined ? { initializeTimeoutMs: this.#options.initializeTimeoutMs } : {}),
      };
      const instance = await startServerInstance(start, hooks, { cache: this.eras, probeTimeoutMs: this.#options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS, log: this.#options.log });
      entry.instance = instance;
      // Ended during its start, before `onEnded` could know it as the entry's: out now.
      if (instance.ended) {
        this.#retired.delete(entry);
        if (this.#entries.get(id) === entry) this.#entries.delete(id);
      }
      const era = instance instanceof ModernServerInstance ? 'modern' : 'legacy';
      this.#options.log.info('Server instance started for a modern agent', { agent: key.agent, server: key.server, era, pid: instance.pid ?? null });
      this.#armIdle(id, entry);
      return instance;
    })();
    this.#entries.set(id, entry);
    try {
      return await entry.starting;
    } catch (error) {
      if (this.#entries.get(id) === entry) this.#entries.delete(id);
      this.#retired.delete(entry);
      throw error;
    }
  }

  /**
   * Ends the instances of every agent and server `keeps` refuses (the worker's roster no longer
   * routes them here) once they have nothing in flight: at once where they are idle, else as the
   * last call in flight ends; one still starting serves the request it was started for first.
   * Until the next roster or `forgetRoster`, an instance for a pair of `removed` (the previous
   * roster's, not this one's) serves its request and is not kept. Returns how many were ended or will be.
   */
  keepOnly(keeps: RosterCheck, removed?: RosterCheck): number {
    this.#removed = removed;
    let ended = 0;
    for (const [id, entry] of [...this.#entries]) {
      if (entry.retired === true || keeps(entry.key.agent, entry.key.server)) continue;
      this.#entries.delete(id);
      this.#retired.add(entry);
      entry.retired = true;
      ended++;
      const instance = entry.instance;
      // Still starting: its start arms the idle clock, which ends it once its request is served.
      if (instance !== null && instance.inFlight === 0) this.#armIdle(id, entry);
    }
    return ended;
  }

  /** Keeps instances of every pair again, as before any roster: the link that told it has ended. */
  forgetRoster(): void {
    this.#removed = undefined;
  }

  /** Ends every instance (sidecar stop); later `acquire` calls are refused. */
  async dispose(): Promise<void> {
    this.#disposed = true;
    this.#stopping.abort();
    const entries = [...this.#entries.values(), ...this.#retired];
    this.#entries.clear();
    this.#retired.clear();
    await Promise.all(
      entries.map(async (entry) => {
        this.#clearIdle(entry);
        const instance = await entry.starting.catch(() => null);
        await instance?.close();
      }),
    );
  }

  #armIdle(id: string, entry: Entry): void {
    if (entry.retired === true) {
      this.#clearIdle(entry);
      // At the next turn, not now: whoever just acquired it (its start's request, or one that
      // waited on that start) starts its call first, and is answered before it ends.
      setImmediate(() => {
        const instance = entry.instance;
        if (instance === null || instance.ended || instance.inFlight > 0 || entry.closing === true) return;
        entry.closing = true;
        this.#options.log.info('Server instance ended: the worker no longer routes its agent and server here', { agent: entry.key.agent, server: instance.server, pid: instance.pid ?? null });
        void instance.close();
      });
      return;
    }
    if (entry.idle !== undefined) {
      entry.idle.refresh(); // restarts it, fired already or not
      return;
    }
    entry.idle = setTimeout(() => {
      const instance = entry.instance;
      if (instance === null || instance.inFlight > 0) return;
      if (this.#entries.get(id) === entry) this.#entries.delete(id);
      this.#options.log.info('Server instance idle: ended', { server: instance.server, pid: instance.pid ?? null });
      void instance.close();
    }, this.#options.idleMs);
    entry.idle.unref();
  }

  #clearIdle(entry: Entry): void {
    if (entry.idle !== undefined) clearTimeout(entry.idle);
    entry.idle = undefined;
  }
}
