/**
 * The server lookups of one host, kept while the mcp.json layers they were read from are
 * unchanged (`config/file-stamp.ts`): a modern agent opens a channel per request, and reading and
 * parsing every layer each time was about 650 µs of the sidecar's CPU per request (issue 17).
 * A lookup that fails (no such server, an invalid file) is not kept, so it is tried afresh.
 *
 * @module
 */
import { filesStamp } from '../config/file-stamp.ts';
import { resolveServerConfig, serverConfigFiles, type ResolvedServerConfig } from './server-config.ts';

/**
 * How long a modern request relies on the last check of the layers' stamps: a modern agent opens a
 * channel per request, and a stat of every layer was about 50 µs of the sidecar's CPU each time
 * under perf (issue 17). It is the config watcher's own settle time (`config-watcher.ts`), so a
 * live sidecar's reload, which makes an edit take effect for everything, comes no sooner.
 */
export const MODERN_STAMP_AGE_MS = 50;

export interface ServerConfigCacheOptions {
  configDir: string;
  entityId: string;
  user: string;
  /** Reads a layer's text: the disk by default, a live sidecar's accepted snapshot otherwise (`clear` when that switches). */
  read?: (path: string) => Promise<string>;
  /** The time a file's stamp is judged against (tests move it on). */
  now?: () => number;
}

export class ServerConfigCache {
  readonly #options: ServerConfigCacheOptions;
  readonly #files: string[];
  readonly #entries = new Map<string, { stamp: string; resolved: ResolvedServerConfig }>();
  /** The layers' stamps when last checked, and when (never kept for a layer too recently changed to stamp). */
  #checked: { stamp: string; at: number } | undefined;

  constructor(options: ServerConfigCacheOptions) {
    this.#options = options;
    this.#files = serverConfigFiles(options.configDir, options.entityId, options.user).map((layer) => layer.file);
  }

  /**
   * As `resolveServerConfig`, from the last read while no layer has changed since.
   *
   * @param stampAgeMs How old a check of the layers' stamps may be and still be relied on (0: stat
   *   them now). A modern agent's requests pass `MODERN_STAMP_AGE_MS`; an edit is then seen at the
   *   first request after the next check, and once seen, the old config is never served again.
   */
  async resolve(name: string, stampAgeMs = 0): Promise<ResolvedServerConfig> {
    const { configDir, entityId, user } = this.#options;
    const now = this.#options.now?.() ?? Date.now();
    const last = this.#checked;
    // Stamped before reading: a change during the read leaves a stamp that no longer matches.
    // A clock stepped back (age below 0) proves nothing recent: the layers are statted again.
    const age = last === undefined ? -1 : now - last.at;
    const recent = last !== undefined && age >= 0 && age < stampAgeMs;
    const stamp = recent ? last.stamp : filesStamp(this.#files, now);
    if (!recent) this.#checked = stamp === null ? undefined : { stamp, at: now };
    const kept = this.#entries.get(name);
    if (stamp !== null && kept?.stamp === stamp) return kept.resolved;
    const resolved = await resolveServerConfig(configDir, { entityId, user }, name, this.#options.read);
    if (stamp === null) this.#entries.delete(name);
    else this.#entries.set(name, { stamp, resolved });
    return resolved;
  }

  /**
   * Forgets every lookup: the sidecar dir was reloaded, or its files on disk were refused and
   * `read` now gives the last accepted snapshot, whose texts the disk's stamps do not describe.
   */
  clear(): void {
    this.#entries.clear();
    this.#checked = undefined;
  }
}
