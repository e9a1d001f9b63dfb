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
 * new set (the old one cancelled), so the server is asked exactly what the agent watches.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SUBSCRIPTION_ID_KEY } from './subscription-filter.ts';
import { isRecord } from '../../../shared/records.ts';

/** How many withdrawn listens' ids are still taken for the host's. */
const WITHDRAWN_KEPT = 8;

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

  constructor(options: LegacyAgentListenOptions) {
    this.#options = options;
  }

  /** Whether the server announces `resources.subscribe` (else the agent's subscribe is refused). */
  get subscribable(): boolean {
    return this.#announces('resources', 'subscribe');
  }

  /** Opens (or re-opens) the listen for what the server announces and the agent watches. */
  open(): void {
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
      this.#withdrawn.push(previous);
      if (this.#withdrawn.length > WITHDRAWN_KEPT) this.#ids.delete(this.#withdrawn.shift()!);
      this.#options.toServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: previous, reason: 'The listen is re-opened with another filter' } } as JSONRPCMessage);
    }
    if (Object.keys(filter).length === 0) return;
    const id = `switchyard-listen-${++this.#next}`;
    this.#ids.add(id);
    this.#current = id;
    this.#options.toServer({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: this.#options.meta(), notifications: filter } } as JSONRPCMessage);
  }

  /** The agent's `resources/subscribe` or `resources/unsubscribe`: the listen follows the set. */
  watch(uri: string, watched: boolean): void {
    const had = this.#uris.has(uri);
    if (watched) this.#uris.add(uri);
    else this.#uris.delete(uri);
    if (had !== watched) this.open();
  }

  /** Takes a server message of one of the host's listens; false for anything else. */
  fromServer(message: JSONRPCMessage): boolean {
    if ('id' in message && !('method' in message)) return this.#ids.has(String(message.id)); // a listen's closing answer: nothing for the agent
    if (!('method' in message) || 'id' in message) return false;
    const params = message.params as Record<string, unknown> | undefined;
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

  #announces(feature: string, flag: string): boolean {
    const own = this.#options.capabilities[feature];
    return isRecord(own) && own[flag] === true;
  }
}
