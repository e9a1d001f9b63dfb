/**
 * AgentRelay: the aggregate's traffic from upstream servers to the agent.
 *
 * An upstream sends server→client requests (sampling, elicitation, roots) and notifications
 * (logging, list changes, resource updates) while it serves some agent request. The relay keeps,
 * per upstream, the agent requests it is serving right now (newest last) and sends such traffic on
 * the newest one's stream, where the agent's client expects it; with none in flight it goes on
 * the standalone stream. A request needing a client capability the agent did not declare is
 * refused upstream with "method not found", never sent; so is a URL elicitation's completion
 * notification to an agent without URL elicitation. List changes of any upstream become the
 * aggregate's own (announced once however many upstreams changed at once).
 *
 * Cancellation runs both ways: an upstream cancelling its request aborts `signal`, which cancels
 * the request to the agent; an agent cancelling its request aborts the upstream request serving
 * it (see `aggregate-server.ts`).
 *
 * @module
 */
import type { ClientCapabilities, ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { WorkerLogger } from '../log.ts';
import { STANDALONE_WAIT_MS, type AgentServer } from './agent-server.ts';
import type { IncomingNotification, IncomingRequest, RequestContext, Result } from './rpc/json-rpc-peer.ts';
import { RPC_CODES, RpcError } from './rpc/peer-errors.ts';
import { toUpstreamError } from './rpc-errors.ts';

const CAPABILITY_OF_METHOD: Record<string, keyof ClientCapabilities> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

/** Upstream list-change notifications, which the aggregate announces as its own. */
export const LIST_CHANGED: ReadonlySet<string> = new Set([
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
]);

const ELICITATION_COMPLETE = 'notifications/elicitation/complete';

export interface AgentRelayOptions {
  agentCapabilities: ClientCapabilities;
  /** Longest wait for the agent's answer (a user may be typing an elicitation answer). */
  requestTimeoutMs: number;
  log: WorkerLogger;
  /** The agent-facing server, once built. */
  server: () => AgentServer | undefined;
  /** Settles once it is built: a server that asks while the aggregate starts waits for it. */
  built?: Promise<void>;
}

export class AgentRelay {
  readonly #options: AgentRelayOptions;
  readonly #active = new Map<string, RequestContext[]>();

  constructor(options: AgentRelayOptions) {
    this.#options = options;
  }

  /** Runs `work` (a request to `upstream`) as serving the agent request behind `context`. */
  async serving<T>(upstream: string, context: RequestContext, work: () => Promise<T>): Promise<T> {
    const active = this.#active.get(upstream) ?? [];
    this.#active.set(upstream, active);
    active.push(context);
    try {
      return await work();
    } finally {
      active.splice(active.indexOf(context), 1);
    }
  }

  /** A server→client request of `upstream`, asked of the agent on the related stream. */
  async request(upstream: string, request: IncomingRequest, signal: AbortSignal): Promise<Result> {
    const capability = CAPABILITY_OF_METHOD[request.method];
    if (capability !== undefined && this.#options.agentCapabilities[capability] === undefined) {
      throw new RpcError(RPC_CODES.methodNotFound, `The agent does not support ${request.method}`, { reason: 'invalid-request' });
    }
    // A server asking as soon as it is initialized (server-filesystem's roots/list) asks while the
    // aggregate still starts: it waits for the agent-facing server, then for the agent's stream.
    if (this.#options.server() === undefined && this.#options.built !== undefined) await withinStandaloneWait(this.#options.built);
    const server = this.#options.server();
    if (server === undefined) throw new RpcError(RPC_CODES.internalError, `The agent cannot be asked ${request.method.slice(0, 64)}: its session did not start`, { reason: 'invalid-request' });
    const options = { signal, timeoutMs: this.#options.requestTimeoutMs };
    const related = this.#active.get(upstream)?.at(-1);
    try {
      return related !== undefined
        ? await related.request(request.method, request.params, options)
        : await server.request(request.method, request.params, options);
    } catch (error) {
      throw toUpstreamError(error);
    }
  }

  /** A notification of `upstream`, passed to the agent (list changes as the aggregate's own). */
  notify(upstream: string, notification: IncomingNotification): void {
    const server = this.#options.server();
    if (server === undefined) return;
    if (LIST_CHANGED.has(notification.method)) {
      server.announce(notification.method);
      return;
    }
    if (notification.method === ELICITATION_COMPLETE && !this.#options.agentCapabilities.elicitation?.url) return;
    const related = this.#active.get(upstream)?.at(-1);
    const send = related !== undefined ? related.notify(notification.method, notification.params) : server.notify(notification.method, notification.params);
    send.catch((error: unknown) => this.#options.log.debug('Notification not delivered', { server: upstream, method: notification.method, error }));
  }

  /**
   * Tells the agent its lists changed as a server went away, came back or came up: the tools
   * always (its placeholder came or went), prompts and resources when the server offers them.
   */
  announceListsChanged(capabilities: ServerCapabilities): void {
    const server = this.#options.server();
    if (server === undefined) return;
    server.announce('notifications/tools/list_changed');
    if (capabilities.prompts !== undefined) server.announce('notifications/prompts/list_changed');
    if (capabilities.resources !== undefined) server.announce('notifications/resources/list_changed');
  }
}

/** `work`, for at most `STANDALONE_WAIT_MS`. */
async function withinStandaloneWait(work: Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, STANDALONE_WAIT_MS)))]);
  clearTimeout(timer);
}
