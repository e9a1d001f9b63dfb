/**
 * AgentRelay: the aggregate's traffic from upstream servers to the agent.
 *
 * An upstream sends server→client requests (sampling, elicitation, roots) and notifications
 * (logging, list changes, resource updates) while it serves some agent request. The relay keeps,
 * per upstream, the agent requests it is serving right now (newest last) and sends such traffic on
 * the newest one's stream, where the agent's client expects it; with none in flight it goes on
 * the standalone stream. A request needing a client capability the agent did not declare is
 * refused upstream with "method not found", never sent. List changes of any upstream become the
 * aggregate's own (debounced by the SDK server).
 *
 * @module
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, McpError, ResultSchema, type ClientCapabilities, type JSONRPCRequest, type Notification, type Result } from '@modelcontextprotocol/sdk/types.js';
import type { WorkerLogger } from '../log.ts';
import { ForwardedRpcError, originalMessage } from './rpc-errors.ts';

/** What a request handler's `extra` offers that relaying needs. */
export interface HandlerExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number; [key: string]: unknown };
  sendNotification(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
  sendRequest(request: { method: string; params?: Record<string, unknown> }, schema: typeof ResultSchema, options?: { signal?: AbortSignal; timeout?: number }): Promise<Result>;
}

const CAPABILITY_OF_METHOD: Record<string, keyof ClientCapabilities> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

/** Upstream list-change notifications and the aggregate server's method announcing the same. */
export const LIST_CHANGED: Record<string, 'sendToolListChanged' | 'sendPromptListChanged' | 'sendResourceListChanged'> = {
  'notifications/tools/list_changed': 'sendToolListChanged',
  'notifications/prompts/list_changed': 'sendPromptListChanged',
  'notifications/resources/list_changed': 'sendResourceListChanged',
};

export interface AgentRelayOptions {
  agentCapabilities: ClientCapabilities;
  /** Longest wait for the agent's answer (a user may be typing an elicitation answer). */
  requestTimeoutMs: number;
  log: WorkerLogger;
  /** The agent-facing server, once built. */
  server: () => Server | undefined;
}

export class AgentRelay {
  readonly #options: AgentRelayOptions;
  readonly #active = new Map<string, HandlerExtra[]>();

  constructor(options: AgentRelayOptions) {
    this.#options = options;
  }

  /** Runs `work` (a request to `upstream`) as serving the agent request behind `extra`. */
  async serving<T>(upstream: string, extra: HandlerExtra, work: () => Promise<T>): Promise<T> {
    const active = this.#active.get(upstream) ?? [];
    this.#active.set(upstream, active);
    active.push(extra);
    try {
      return await work();
    } finally {
      active.splice(active.indexOf(extra), 1);
    }
  }

  /** A server→client request of `upstream`, asked of the agent on the related stream. */
  async request(upstream: string, request: JSONRPCRequest, signal: AbortSignal): Promise<Result> {
    const capability = CAPABILITY_OF_METHOD[request.method];
    const server = this.#options.server();
    if (server === undefined || (capability !== undefined && this.#options.agentCapabilities[capability] === undefined)) {
      throw new ForwardedRpcError(ErrorCode.MethodNotFound, `The agent does not support ${request.method}`);
    }
    const outgoing = { method: request.method, ...(request.params !== undefined ? { params: request.params } : {}) };
    const options = { signal, timeout: this.#options.requestTimeoutMs };
    const related = this.#active.get(upstream)?.at(-1);
    try {
      return related !== undefined
        ? await related.sendRequest(outgoing, ResultSchema, options)
        : await server.request(outgoing, ResultSchema, options);
    } catch (error) {
      if (error instanceof McpError) throw new ForwardedRpcError(error.code, originalMessage(error), error.data);
      throw error;
    }
  }

  /** A notification of `upstream`, passed to the agent (list changes as the aggregate's own). */
  notify(upstream: string, notification: Notification): void {
    const server = this.#options.server();
    if (server === undefined) return;
    const listChanged = LIST_CHANGED[notification.method];
    if (listChanged !== undefined) {
      void server[listChanged]().catch(() => {});
      return;
    }
    const related = this.#active.get(upstream)?.at(-1);
    const send = related !== undefined
      ? related.sendNotification(notification as { method: string; params?: Record<string, unknown> })
      : server.notification(notification);
    send.catch((error: unknown) => this.#options.log.debug('Notification not delivered', { server: upstream, method: notification.method, error }));
  }

  /** Tells the agent every list may have changed (a server went away or came back). */
  announceListsChanged(): void {
    const server = this.#options.server();
    if (server === undefined) return;
    for (const method of Object.values(LIST_CHANGED)) void server[method]().catch(() => {});
  }
}
