/**
 * Change notifications from a modern server to a legacy agent (the other half of
 * `listen-stream.ts`): a modern server sends `list_changed` and `resources/updated` only on a
 * `subscriptions/listen` stream, and a legacy agent has no such request, only its session. So the
 * host opens one listen on the agent's behalf as soon as the session is modern, asking for every
 * kind the server's `server/discover` announces, and passes what it carries to the agent as plain
 * legacy notifications (the subscription id taken out).
 *
 * The agent's `resources/subscribe` and `resources/unsubscribe` (removed in 2026-07-28) become the
 * listen's `resourceSubscriptions`: the host answers them itself and re-opens the listen with the
 * new set (the old one cancelled), so the server is asked exactly what the agent watches. The set
 * is bounded as the modern filter is, and a burst of changes re-opens once.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SUBSCRIPTION_ID_KEY } from './subscription-filter.ts';
import { isRecord } from '../records.ts';
import { unrefTimer } from '../unref-timer.ts';
import { answerBrokeOff } from '../modern-http-transport.ts';

/** How many withdrawn listens' ids are still taken for the host's. */
const WITHDRAWN_KEPT = 8;
/** The URIs one session may watch, and their length: the modern filter's own bounds (`subscription-filter.ts`). */
export const MAX_WATCHED_URIS = 256;
export const MAX_WATCHED_URI_LENGTH = 2048;
/**
 * At most one re-open in this time: each carries the whole set, so a burst of subscribes re-opened
 * one by one cost the server (and the host's pipe) the square of the burst (review s23: 3,000
 * subscribes of 1 KB URIs made 4.6 GB of listen requests).
 */
export const REOPEN_EVERY_MS = 100;
/** The longest wait before opening again a listen the server keeps tearing down (doubling from `REOPEN_EVERY_MS`). */
export const TORN_DOWN_BACKOFF_CAP_MS = 30_000;

export interface LegacyAgentListenOptions {
  toServer(message: JSONRPCMessage): void;
  toAgent(message: JSONRPCMessage): void;
  /** The modern `_meta` the session's requests carry. */
  meta(): Record<string, unknown>;
  /** The server's capabilities, from its `server/discover`. */
  capabilities: Record<string, unknown>;
}

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
/** The ids of the listens the host opens for a legacy session: `switchyard-listen-<n>`. */
const HOST_LISTEN_ID = /^switchyard-listen-\d+$/;

/**
 * Whether `message` is a listen the host opened for a legacy session (not an agent's own): a
 * standing watch the session's process keeps, which the process budget counts as no work.
 */
export function isHostOpenedListen(message: { method?: unknown; id?: unknown }): boolean {
  return message.method === 'subscriptions/listen' && typeof message.id === 'string' && HOST_LISTEN_ID.test(message.id);
}

export class LegacyAgentListen {
  readonly #options: LegacyAgentListenOptions;
  readonly #uris = new Set<string>();
  /** Every listen id the host opened on this session; only `#current` is passed on. */
  readonly #ids = new Set<string>();
  /** The ids of the listens withdrawn last, oldest first (`WITHDRAWN_KEPT`). */
  readonly #withdrawn: string[] = [];
  #current: string | null = null;
  #next = 0;
  /** A re-open waiting out `REOPEN_EVERY_MS`; every change before it fires rides on it. */
  #reopen: ReturnType<typeof setTimeout> | undefined;
  #openedAt = -Infinity;
  #closed = false;
  /** Listens ended soon in a row (none lived `TORN_DOWN_BACKOFF_CAP_MS`): each doubles the wait. */
  #tornDown = 0;

  constructor(options: LegacyAgentListenOptions) {
    this.#options = options;
  }

  /** Whether the server announces `resources.subscribe` (else the agent's subscribe is refused). */
  get subscribable(): boolean {
    return this.#announces('resources', 'subscribe');
  }

  /** Opens (or re-opens) the listen for what the server announces and the agent watches. */
  open(): void {
    if (this.#closed) return;
    this.#openedAt = performance.now();
    const filter: Record<string, unknown> = {};
    if (this.#announces('tools', 'listChanged')) filter.toolsListChanged = true;
    if (this.#announces('prompts', 'listChanged')) filter.promptsListChanged = true;
    if (this.#announces('resources', 'listChanged')) filter.resourcesListChanged = true;
    if (this.subscribable && this.#uris.size > 0) filter.resourceSubscriptions = [...this.#uris];
    const previous = this.#current;
    this.#current = null;
    // The ids still taken for the host's: the last few listens withdrawn (their late notifications
    // and closing answers, in a burst of subscribes) and the next. Older ones go, or a session
    // toggling its subscriptions would grow the set for good.
    if (previous !== null) {
      this.#withdraw(previous);
      this.#options.toServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: previous, reason: 'The listen is re-opened with another filter' } } as JSONRPCMessage);
    }
    if (Object.keys(filter).length === 0) return;
    const id = `switchyard-listen-${++this.#next}`;
    this.#ids.add(id);
    this.#current = id;
    this.#options.toServer({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: this.#options.meta(), notifications: filter } } as JSONRPCMessage);
  }

  /**
   * The agent's `resources/subscribe` or `resources/unsubscribe`: the listen follows the set, soon
   * (at most one re-open per `REOPEN_EVERY_MS`). A subscribe past the bounds is refused: the
   * problem, or null.
   */
  watch(uri: string, watched: boolean): string | null {
    const had = this.#uris.has(uri);
    if (watched && !had) {
      if (uri.length > MAX_WATCHED_URI_LENGTH) return `the URI is longer than ${MAX_WATCHED_URI_LENGTH} characters`;
      if (this.#uris.size >= MAX_WATCHED_URIS) return `the session watches ${MAX_WATCHED_URIS} URIs already, the most it may: unsubscribe from one first`;
    }
    if (watched) this.#uris.add(uri);
    else this.#uris.delete(uri);
    if (had !== watched) this.#reopenSoon();
    return null;
  }

  /** The session ended: no re-open is sent after it. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#reopen);
    this.#reopen = undefined;
  }

  /** Keeps a listen's id taken for a while (its late messages), forgetting the oldest past `WITHDRAWN_KEPT`. */
  #withdraw(id: string): void {
    this.#withdrawn.push(id);
    if (this.#withdrawn.length > WITHDRAWN_KEPT) this.#ids.delete(this.#withdrawn.shift()!);
  }

  #reopenSoon(atLeastMs = 0): void {
    if (this.#reopen !== undefined || this.#closed) return;
    this.#reopen = setTimeout(() => {
      this.#reopen = undefined;
      this.open();
    }, Math.max(atLeastMs, this.#openedAt + REOPEN_EVERY_MS - performance.now()));
    unrefTimer(this.#reopen);
  }

  /** Takes a server message of one of the host's listens; false for anything else. */
  fromServer(message: JSONRPCMessage): boolean {
    if ('id' in message && !('method' in message)) {
      // A listen's closing answer: nothing for the agent. The one in force answered is over: the
      // server ended it, or its HTTP stream broke (a proxy's idle timeout) and the transport
      // answered it `server-exited`; opened again, so the watch goes on. A server that refused
      // it with an error of its own is not asked again.
      const id = String(message.id);
      if (!this.#ids.has(id)) return false;
      if (id === this.#current && ('result' in message || answerBrokeOff((message as { error?: unknown }).error))) this.#tornDownNow(id);
      return true;
    }
    if (!('method' in message) || 'id' in message) return false;
    const params = message.params as Record<string, unknown> | undefined;
    // The server tore one of the host's listens down (cancellation.mdx): the agent knows nothing
    // of it, and the one in force is opened again, so its watch goes on (review s23).
    if (message.method === 'notifications/cancelled' && typeof params?.requestId === 'string' && this.#ids.has(params.requestId)) {
      if (params.requestId === this.#current) this.#tornDownNow(params.requestId);
      return true;
    }
    const meta = isRecord(params?._meta) ? params._meta : undefined;
    const subscription = meta?.[SUBSCRIPTION_ID_KEY];
    if (typeof subscription !== 'string' || !this.#ids.has(subscription)) return false;
    if (subscription !== this.#current || message.method === ACKNOWLEDGED) return true;
    const { [SUBSCRIPTION_ID_KEY]: _id, ...rest } = meta!;
    const { _meta: _m, ...body } = params!;
    const passed = { ...body, ...(Object.keys(rest).length > 0 ? { _meta: rest } : {}) };
    this.#options.toAgent({ jsonrpc: '2.0', method: message.method, ...(Object.keys(passed).length > 0 ? { params: passed } : {}) } as JSONRPCMessage);
    return true;
  }

  /**
   * The listen in force is gone: opened again after a wait that doubles while listens keep going
   * soon (a server that tears every listen down at once, or ends each after one notification, is
   * not asked ten times a second, review of s23), and is short again after one that lived
   * `TORN_DOWN_BACKOFF_CAP_MS` (a proxy that cuts long streams on a schedule is no flapping).
   */
  #tornDownNow(id: string): void {
    if (performance.now() - this.#openedAt >= TORN_DOWN_BACKOFF_CAP_MS) this.#tornDown = 0;
    this.#current = null;
    this.#withdraw(id);
    this.#reopenSoon(Math.min(REOPEN_EVERY_MS * 2 ** this.#tornDown++, TORN_DOWN_BACKOFF_CAP_MS));
  }

  #announces(feature: string, flag: string): boolean {
    const own = this.#options.capabilities[feature];
    return isRecord(own) && own[flag] === true;
  }
}
