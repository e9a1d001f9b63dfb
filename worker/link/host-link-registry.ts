/**
 * The host-link registry: entity id → the live link to that host. One of the two pieces of
 * worker state (DESIGN §8); kept behind this small interface because on an edge platform it will
 * be a Durable Object per host, addressed by entity id, and the router must not notice.
 *
 * Rules: opening a channel to a host without a live link fails at once with `host-offline` (never
 * waits for a link that may not come); a new link from the same host replaces the old one, whose
 * channels fail with `host-offline` (the old socket is usually a half-dead leftover of a network
 * change, and the sidecar dialled again because it lost it).
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import type { ChannelTransport } from '../../shared/channel-transport.ts';
import type { LinkEndpoint, LinkLogger, OpenChannelOptions } from '../../shared/link/link-endpoint.ts';
import { linkEndOf } from '../../shared/link/link-types.ts';
import { MAX_ROSTER_AGENTS, MAX_ROSTER_BYTES, MAX_ROSTER_SERVERS, rosterFits, type HostRoster } from '../../shared/link/host-roster.ts';

/** One host as shown on /healthz. */
export interface HostLinkStatus {
  'entity-id': string;
  linked: boolean;
  /** ISO time of the last change: when the link came up, or when it went down; null if never linked. */
  since: string | null;
  /** Channels open on the live link. */
  channels: number;
  /**
   * The live link's shortest round trip (ms, to 0.1), by which the link's window is sized
   * (`link-window.ts`): the handshake's and each keepalive's; on Workers, where the runtime answers
   * the keepalives, the handshake's alone (from the challenge to the sidecar's signed proof). Null
   * when not linked, or linked by a sidecar that does not pace the link. A far workstation shows
   * here why large answers come slowly.
   */
  roundTripMs: number | null;
}

/** A host's link that ended, as the audit records it (`WorkerAudit.linkEnded`). */
export interface EndedLink {
  entityId: string;
  /**
   * Why: `replaced` (a newer link from the host took its place), `config-changed` (a reload
   * removed the host or changed its key), `shutdown` (the worker stopping), `closed` (the host
   * closed it: its sidecar stopping), `lost` (the socket closed under it), `dead` (nothing from
   * the host for the dead time), or the reason the worker refused the host's frames for
   * (`invalid-request`).
   */
  ended: string;
  /** How long the host was linked, in ms. */
  linkedForMs: number;
}

/** What `attach` is told of a link beside its endpoint. */
export interface AttachOptions {
  /** What `changes` was when its link request came in (see `attach`). */
  since?: number;
  /** When the host linked, where that was before this registry saw it (a Durable Object woken from hibernation); now by default. */
  linkedAt?: Date;
  /** A link this registry's instance did not accept (a Durable Object woken from hibernation): the host was told its roster when it linked. */
  resumed?: boolean;
}

export interface HostLinkRegistry {
  /** Opens a channel to the host; `host-offline` at once when it has no live link. */
  openChannel(entityId: string, request: unknown, options?: OpenChannelOptions): Promise<ChannelTransport>;
  /**
   * Registers a live link for the host, replacing (and closing) any older one. With `since` (what
   * `changes` was when its link request came in), a link whose host's entry a config change
   * replaced or removed after that is closed instead: it proved a key the worker no longer holds.
   * Returns whether it was attached.
   */
  attach(entityId: string, endpoint: LinkEndpoint, options?: AttachOptions): boolean;
  /** Counts the config changes that replaced or removed a host's entry (`setHosts`). */
  readonly changes?: number;
  status(): HostLinkStatus[];
  /**
   * The hosts of a reloaded config: new ones are listed, gone ones forgotten, and the live links
   * of `unlink` (gone, or re-keyed) closed with `host-offline`.
   */
  setHosts?(hosts: readonly string[], unlink: readonly string[]): void;
  /** Tells every linked host its roster again (`roster`), after a reload: a host whose roster did not change is sent nothing. */
  tellRosters?(): void;
}

export interface InMemoryHostLinkRegistryOptions {
  /** Entity ids from the worker config, so hosts that never linked show on /healthz too. */
  hosts?: readonly string[];
  log?: LinkLogger;
  /** Clock, for tests. */
  now?: () => Date;
  /** Told of each attached link when it ends, however it ends. */
  onEnded?: (link: EndedLink) => void;
  /** Each host's roster under the config in force (`host-roster.ts`), told to it when it links and by `tellRosters`. */
  roster?: (entityId: string) => HostRoster;
}

interface Entry {
  endpoint: LinkEndpoint | null;
  since: Date | null;
  /** When its links were last replaced by newer ones (ms), within {@link FLAPPING_WINDOW_MS}. */
  replacedAt?: number[];
  /** When the log last said it keeps being replaced (ms). */
  warnedAt?: number;
}

/**
 * A host whose link is replaced this often within {@link FLAPPING_WINDOW_MS} has two sidecars
 * holding its key: each dials again as soon as the other's link takes its place, and every channel
 * of both fails each time. A restarted sidecar replaces its old link once.
 */
const FLAPPING_REPLACEMENTS = 3;
const FLAPPING_WINDOW_MS = 60_000;

export class InMemoryHostLinkRegistry implements HostLinkRegistry {
  readonly #entries = new Map<string, Entry>();
  /** Config changes that replaced or removed a host's entry, and the last such change of each host. */
  #changes = 0;
  readonly #changedAt = new Map<string, number>();
  readonly #log: LinkLogger | undefined;
  readonly #now: () => Date;
  readonly #onEnded: ((link: EndedLink) => void) | undefined;
  readonly #roster: ((entityId: string) => HostRoster) | undefined;
  /** Why this registry closed a link, for its end's record: the link's own close info cannot tell. */
  readonly #closedFor = new WeakMap<LinkEndpoint, 'replaced' | 'config-changed' | 'shutdown'>();

  constructor(options: InMemoryHostLinkRegistryOptions = {}) {
    for (const host of options.hosts ?? []) this.#entries.set(host, { endpoint: null, since: null });
    this.#log = options.log;
    this.#now = options.now ?? (() => new Date());
    this.#onEnded = options.onEnded;
    this.#roster = options.roster;
  }

  async openChannel(entityId: string, request: unknown, options: OpenChannelOptions = {}): Promise<ChannelTransport> {
    const endpoint = this.#entries.get(entityId)?.endpoint;
    if (endpoint == null || endpoint.closed) {
      throw new WireError('host-offline', `Host "${entityId}" is offline: its sidecar has no live link to this worker`, {
        detail: { 'entity-id': entityId },
      });
    }
    return endpoint.openChannel(request, options);
  }

  get changes(): number {
    return this.#changes;
  }

  attach(entityId: string, endpoint: LinkEndpoint, options: AttachOptions = {}): boolean {
    const { since } = options;
    if (since !== undefined && (this.#changedAt.get(entityId) ?? 0) > since) {
      this.#log?.warn('Host link refused: the worker config changed this host\'s entry while it linked', { 'entity-id': entityId });
      endpoint.close({ reason: 'host-offline', message: 'The worker config changed this host\'s entry while it linked: link again' });
      return false;
    }
    const entry = this.#entries.get(entityId) ?? { endpoint: null, since: null };
    const previous = entry.endpoint;
    entry.endpoint = endpoint;
    entry.since = this.#now();
    this.#entries.set(entityId, entry);
    this.#log?.info('Host linked', { 'entity-id': entityId, replaced: previous !== null });
    if (previous !== null) {
      this.#close(previous, 'replaced', 'Replaced by a newer link from the same host');
      this.#noteReplacement(entityId, entry);
    }
    if (options.resumed !== true) this.#tellRoster(entityId, endpoint);
    const linkedAt = options.linkedAt ?? entry.since;
    void endpoint.whenClosed.then((info) => {
      this.#onEnded?.({ entityId, ended: this.#closedFor.get(endpoint) ?? linkEndOf(info, 'closed'), linkedForMs: Math.max(0, this.#now().getTime() - linkedAt.getTime()) });
      if (entry.endpoint !== endpoint) return;
      entry.endpoint = null;
      entry.since = this.#now();
      this.#log?.info('Host unlinked', { 'entity-id': entityId, reason: info.reason ?? null, message: info.message });
    });
    return true;
  }

  setHosts(hosts: readonly string[], unlink: readonly string[]): void {
    // A handshake under way for one of these proved the old entry's key: it is not attached.
    const changed = new Set([...unlink, ...[...this.#entries.keys()].filter((id) => !hosts.includes(id))]);
    if (changed.size > 0) this.#changes++;
    for (const id of changed) this.#changedAt.set(id, this.#changes);
    for (const id of unlink) {
      const endpoint = this.#entries.get(id)?.endpoint;
      if (endpoint == null) continue;
      this.#log?.info('Host link dropped by a config change', { 'entity-id': id });
      this.#close(endpoint, 'config-changed', 'The worker config changed this host\'s entry: link again');
    }
    for (const id of [...this.#entries.keys()]) if (!hosts.includes(id)) this.#entries.delete(id);
    for (const id of hosts) if (!this.#entries.has(id)) this.#entries.set(id, { endpoint: null, since: null });
  }

  tellRosters(): void {
    for (const [entityId, { endpoint }] of this.#entries) if (endpoint !== null && !endpoint.closed) this.#tellRoster(entityId, endpoint);
  }

  #tellRoster(entityId: string, endpoint: LinkEndpoint): void {
    if (this.#roster === undefined) return;
    const roster = this.#roster(entityId);
    if (!rosterFits(roster)) {
      this.#log?.warn('Host not told its roster: the config routes more agents or servers to it than a roster holds, so it keeps idle spares for their idle time', { 'entity-id': entityId, agents: roster.length, maxAgents: MAX_ROSTER_AGENTS, maxServersPerAgent: MAX_ROSTER_SERVERS, maxBytes: MAX_ROSTER_BYTES });
      return;
    }
    endpoint.tellRoster(roster);
  }

  /** Closes every live link, the worker stopping: each host is told, and its sidecar dials again. */
  close(): void {
    for (const { endpoint } of this.#entries.values()) if (endpoint !== null) this.#close(endpoint, 'shutdown', 'The worker is stopping');
  }

  /** Says, once a window, that a host's links keep replacing each other: two sidecars with one key. */
  #noteReplacement(entityId: string, entry: Entry): void {
    const now = (entry.since ?? this.#now()).getTime();
    entry.replacedAt = [...(entry.replacedAt ?? []).filter((at) => now - at < FLAPPING_WINDOW_MS), now];
    if (entry.replacedAt.length < FLAPPING_REPLACEMENTS || (entry.warnedAt !== undefined && now - entry.warnedAt < FLAPPING_WINDOW_MS)) return;
    entry.warnedAt = now;
    this.#log?.warn('Host links keep replacing each other: two sidecars are running with this host\'s key, and each fails every channel of the other as it links; stop one, and if only one should exist, its key is in other hands: make a new one (sidecar init) and host add it', {
      'entity-id': entityId,
      replacements: entry.replacedAt.length,
      withinSeconds: FLAPPING_WINDOW_MS / 1000,
    });
  }

  #close(endpoint: LinkEndpoint, why: 'replaced' | 'config-changed' | 'shutdown', message: string): void {
    if (!endpoint.closed) this.#closedFor.set(endpoint, why);
    endpoint.close({ reason: 'host-offline', message });
  }

  status(): HostLinkStatus[] {
    return [...this.#entries].map(([entityId, entry]) => ({
      'entity-id': entityId,
      linked: entry.endpoint !== null && !entry.endpoint.closed,
      since: entry.since?.toISOString() ?? null,
      channels: entry.endpoint?.stats.channels ?? 0,
      roundTripMs: roundTripOf(entry.endpoint),
    }));
  }
}

/** A live endpoint's shortest round trip, to 0.1 ms; null when there is no live link or none was measured. */
function roundTripOf(endpoint: LinkEndpoint | null): number | null {
  const ms = endpoint === null || endpoint.closed ? null : endpoint.stats.roundTripMs;
  return ms === null ? null : Math.round(ms * 10) / 10;
}
