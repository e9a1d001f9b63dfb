/**
 * LegacyInstancePool: the host's legacy instances for modern agents, one per (agent, server name,
 * effective trust revision) (DESIGN §9).
 *
 * - Never shared between agents: the agent is part of the key, so one agent's server state
 *   (and anything the server remembers) never reaches another agent.
 * - The effective trust revision is part of the key: a changed floor or profile gets a fresh
 *   process under the new policy, and the old one idles out.
 * - Concurrent first requests share one start (the pending start is what the key holds).
 * - Idle expiry: an instance with nothing in flight for `idleMs` is closed; an instance that ended
 *   (its process exited) leaves the pool at once, so the next request starts a fresh one.
 * - `dispose` (sidecar stop) ends them all and refuses new ones (`host-offline`).
 *
 * @module
 */
import { WireError } from '../../../shared/errors.ts';
import type { Logger } from '../../log.ts';
import { LegacyInstance, type LegacyInstanceOptions } from './legacy-instance.ts';

/** Default idle time of a legacy instance: sidecar.json `"modern-instance-idle-seconds"`. */
export const DEFAULT_INSTANCE_IDLE_SECONDS = 15 * 60;

export interface InstanceKey {
  agent: string;
  server: string;
  /** The effective trust revision, or a marker of the uncontained launch. */
  revision: string;
}

export interface LegacyInstancePoolOptions {
  idleMs: number;
  log: Logger;
}

/** What the pool needs to start an instance; the pool adds its own activity and end hooks. */
export type InstanceStart = Omit<LegacyInstanceOptions, 'onActivity' | 'onEnded'>;

interface Entry {
  starting: Promise<LegacyInstance>;
  instance: LegacyInstance | null;
  idle: NodeJS.Timeout | undefined;
}

export class LegacyInstancePool {
  readonly #options: LegacyInstancePoolOptions;
  readonly #entries = new Map<string, Entry>();
  #disposed = false;

  constructor(options: LegacyInstancePoolOptions) {
    this.#options = options;
  }

  /** Live instances (started, not ended). */
  get size(): number {
    return [...this.#entries.values()].filter((entry) => entry.instance !== null).length;
  }

  /** The live instances, for status and tests. */
  instances(): LegacyInstance[] {
    return [...this.#entries.values()].flatMap((entry) => (entry.instance !== null && !entry.instance.ended ? [entry.instance] : []));
  }

  /**
   * The live instance for `key`, or a new one from `start()` (called only when none is live or
   * starting). Use it at once: an instance with nothing in flight is on its idle clock.
   */
  async acquire(key: InstanceKey, start: () => Promise<InstanceStart>): Promise<LegacyInstance> {
    if (this.#disposed) throw new WireError('host-offline', 'This host is stopping: it starts no new server processes');
    const id = JSON.stringify([key.agent, key.server, key.revision]);
    const existing = this.#entries.get(id);
    if (existing !== undefined) {
      const instance = await existing.starting;
      if (!instance.ended) {
        this.#clearIdle(existing);
        return instance;
      }
      if (this.#entries.get(id) === existing) this.#entries.delete(id);
      return this.acquire(key, start);
    }
    const entry: Entry = { starting: null!, instance: null, idle: undefined };
    entry.starting = (async () => {
      const options = await start();
      const instance = await LegacyInstance.start({
        ...options,
        onActivity: (inFlight) => (inFlight === 0 ? this.#armIdle(id, entry) : this.#clearIdle(entry)),
        onEnded: () => {
          this.#clearIdle(entry);
          if (this.#entries.get(id) === entry) this.#entries.delete(id);
        },
      });
      entry.instance = instance;
      this.#options.log.info('Legacy instance started for a modern agent', { agent: key.agent, server: key.server, pid: instance.pid ?? null });
      this.#armIdle(id, entry);
      return instance;
    })();
    this.#entries.set(id, entry);
    try {
      return await entry.starting;
    } catch (error) {
      if (this.#entries.get(id) === entry) this.#entries.delete(id);
      throw error;
    }
  }

  /** Ends every instance (sidecar stop); later `acquire` calls are refused. */
  async dispose(): Promise<void> {
    this.#disposed = true;
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(
      entries.map(async (entry) => {
        this.#clearIdle(entry);
        const instance = await entry.starting.catch(() => null);
        await instance?.close();
      }),
    );
  }

  #armIdle(id: string, entry: Entry): void {
    this.#clearIdle(entry);
    entry.idle = setTimeout(() => {
      entry.idle = undefined;
      const instance = entry.instance;
      if (instance === null || instance.inFlight > 0) return;
      if (this.#entries.get(id) === entry) this.#entries.delete(id);
      this.#options.log.info('Legacy instance idle: ended', { server: instance.server, pid: instance.pid ?? null });
      void instance.close();
    }, this.#options.idleMs);
    entry.idle.unref();
  }

  #clearIdle(entry: Entry): void {
    if (entry.idle !== undefined) clearTimeout(entry.idle);
    entry.idle = undefined;
  }
}
