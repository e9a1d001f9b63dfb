/**
 * AggregateServer: the MCP server an agent sees on `/mcp`, one per agent session. An
 * `AgentServer` whose handlers fan out to the session's `UpstreamSet`:
 *
 * - tools and prompts are listed from every available server under `<server>__<name>` (see
 *   `naming.ts`) and calls are routed back by that name; an unavailable server shows as
 *   `<server>__unavailable` (see `availability.ts`);
 * - resources keep their URIs; reads, subscriptions and completions are routed by URI. A URI no
 *   connected server is known to serve, while some server is still starting or failed for a
 *   reason that may have gone away, waits for those (as a call naming a server does, at most the
 *   open deadline, given back if the agent cancels), and the servers that came up are asked for
 *   their resources, before it is answered "Resource not found";
 * - results pass through unchanged, `isError` tool results included (a gateway does not validate a
 *   tool's output against its schema: the agent's client does that); upstream JSON-RPC errors
 *   keep their code, message and `data` (see `rpc-errors.ts`);
 * - progress is relayed under the agent's own token; cancellation follows the agent's;
 * - server→client requests (sampling, elicitation, roots) go to the agent, on the stream of the
 *   agent request that the upstream is serving, if the agent declared that capability;
 * - list changes of any upstream, and servers going away or coming back, are announced as the
 *   aggregate's own list changes;
 * - the agent's log level (`logging/setLevel`) goes to every server offering logging, and stays
 *   the session's: a server that connects later (still starting then, back after a failure, given
 *   by a config change) is told it as it connects, before any request of the agent reaches it;
 * - `initialize`, and each list, waits for the servers' opens only `startWaitMs`: a server not up
 *   by then is listed as `<server>__unavailable` with reason `starting` while its open goes on,
 *   and the agent is told when it ends (a list change); a call naming it waits for that open;
 * - a worker config change to the agent's servers is followed (`reconfigure`): a server taken
 *   away leaves the lists (a call naming it is answered as one naming a server the agent may not
 *   use), one given or bound elsewhere is opened as at initialize.
 *
 * @module
 */
import type { ClientCapabilities, ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { WorkerLogger } from '../log.ts';
import { AgentRelay } from './agent-relay.ts';
import { AgentServer, type AgentRequestHandler } from './agent-server.ts';
import { aggregateInstructions, startingInSession, unavailableResult, unavailableTool, type Unavailable } from './availability.ts';
import { NameTable, UNAVAILABLE_TOOL } from './naming.ts';
import { objectParam, stringParam } from './request-params.ts';
import { ResourceRoutes } from './resource-routes.ts';
import { fromWireError, toAgentError } from './rpc-errors.ts';
import type { Params, RequestContext, Result } from './rpc/json-rpc-peer.ts';
import { RequestCancelledError, RPC_CODES, RpcError } from './rpc/peer-errors.ts';
import type { UpstreamClient } from './upstream-client.ts';
import { UpstreamSet, type UpstreamChange, type UpstreamSetOptions } from './upstream-set.ts';
import type { CallLedger } from '../../shared/audit/call-ledger.ts';
import { traceContextOf } from '../audit/worker-audit.ts';
import { sameAuthor } from '../../shared/audit/host-answers.ts';
import { WireError } from '../../shared/errors.ts';

export interface AggregateServerOptions extends Omit<UpstreamSetOptions, 'hooks' | 'capabilities' | 'timeoutMs'> {
  /** What the agent declared at initialize; upstreams see the same sampling/elicitation/roots. */
  agentCapabilities: ClientCapabilities;
  /** Longest wait for an upstream's initialize answer. */
  openTimeoutMs: number;
  /**
   * Longest wait for the servers' opens before `initialize` or a list is answered without those
   * still opening (`aggregate-start-wait-seconds`); at most `openTimeoutMs`.
   */
  startWaitMs: number;
  /** Longest wait for one forwarded request (progress resets it). */
  requestTimeoutMs: number;
  log: WorkerLogger;
  /** The audit ledger of one upstream server's calls in this session; `null`: of calls that name none of the agent's servers. */
  ledger?: (server: string | null) => CallLedger;
}

type AuditedRequest = { id: number; method: string; params: Params };

export class AggregateServer {
  readonly upstreams: UpstreamSet;
  readonly #options: AggregateServerOptions;
  readonly #tools = new NameTable();
  readonly #prompts = new NameTable();
  readonly #resources = new ResourceRoutes();
  readonly #relay: AgentRelay;
  /** Each request being handled and when it arrived, oldest first. */
  readonly #arrivals = new Map<object, number>();
  #server: AgentServer | undefined;
  readonly #ledgers = new Map<string | null, CallLedger>();
  /** Makes the ledger of one server's calls: the config in force's audit (`reconfigure` replaces it). */
  #ledgerOf: ((server: string | null) => CallLedger) | undefined;
  #auditIds = 0;
  /** The agent's last `logging/setLevel`, for servers that connect after it. */
  #logLevel: string | undefined;
  /** The agent's resource subscriptions, per server, made again when a server connects anew. */
  readonly #subscriptions = new Subscriptions();
  /** Settles the relay's wait for the agent-facing server (`AgentRelay`'s `built`). */
  #built: () => void = () => {};

  /**
   * Opens every upstream in parallel, waits for them at most `startWaitMs`, then builds the
   * agent-facing server, whose `initialize` instructions list who is available, who is still
   * starting and who is not.
   */
  static async create(options: AggregateServerOptions): Promise<AggregateServer> {
    const aggregate = new AggregateServer(options);
    await aggregate.upstreams.connectAll(aggregate.#startWaitMs);
    aggregate.#server = aggregate.#build();
    aggregate.#built();
    return aggregate;
  }

  private constructor(options: AggregateServerOptions) {
    this.#options = options;
    this.#ledgerOf = options.ledger;
    const relay = new AgentRelay({ ...options, server: () => this.#server, built: new Promise<void>((resolve) => (this.#built = resolve)) });
    this.#relay = relay;
    this.upstreams = new UpstreamSet({
      ...options,
      timeoutMs: options.openTimeoutMs,
      capabilities: mirroredCapabilities(options.agentCapabilities),
      hooks: {
        onRequest: (server, request, signal) => relay.request(server, request, signal),
        onNotification: (server, notification) => relay.notify(server, notification),
        onAvailabilityChanged: (_server, capabilities) => relay.announceListsChanged(capabilities),
        onConnected: (server, client) => {
          this.#sendLevel(server, client);
          this.#subscribeAgain(server, client);
        },
      },
    });
  }

  /** The agent-facing server; connect it to the agent's transport. */
  get server(): AgentServer {
    if (this.#server === undefined) throw new Error('AggregateServer is not built yet: use AggregateServer.create');
    return this.#server;
  }

  /** Agent requests currently being answered. */
  get inFlight(): number {
    return this.#arrivals.size;
  }

  /** When the oldest request being handled arrived (`Date.now()`); undefined with none. */
  get oldestInFlightAt(): number | undefined {
    return this.#arrivals.values().next().value;
  }

  get #startWaitMs(): number {
    return Math.min(this.#options.startWaitMs, this.#options.openTimeoutMs);
  }

  /** The placeholders' reasons, in config order: servers failed, and servers still starting. */
  #unavailable(): Array<[string, Unavailable]> {
    return this.upstreams.servers.flatMap((server): Array<[string, Unavailable]> => {
      const failure = this.upstreams.failure(server);
      if (failure !== undefined) return [[server, failure]];
      return this.upstreams.isStarting(server) ? [[server, startingInSession()]] : [];
    });
  }

  #build(): AgentServer {
    const instructions = aggregateInstructions({
      connected: this.upstreams.connected().map(([server, client]) => ({ server, instructions: client.instructions })),
      failed: this.#unavailable(),
    });
    const capabilities: ServerCapabilities = {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true, subscribe: true },
      logging: {},
      completions: {},
    };
    return new AgentServer({
      serverInfo: { name: 'switchyard', version: '0.1.0' },
      capabilities,
      instructions,
      requests: this.#requestHandlers(),
      notifications: {
        'notifications/roots/list_changed': () => void Promise.allSettled(this.upstreams.connected().map(([, client]) => client.sendRootsListChanged())),
      },
    });
  }

  /**
   * Follows a worker config change (`UpstreamSet.reconfigure`): a server taken away leaves the
   * name tables and resource routes; servers taken, given or bound elsewhere get ledgers afresh
   * from `ledger` (the config in force's audit knows their hosts).
   */
  async reconfigure(change: UpstreamChange & { ledger?: (server: string | null) => CallLedger }): Promise<{ removed: string[]; added: string[]; rebound: string[] }> {
    if (change.ledger !== undefined) this.#ledgerOf = change.ledger;
    const outcome = await this.upstreams.reconfigure(change);
    for (const server of outcome.removed) {
      this.#tools.clearServer(server);
      this.#prompts.clearServer(server);
      this.#resources.clearResources(server);
      this.#resources.clearTemplates(server);
    }
    for (const server of [...outcome.removed, ...outcome.added, ...outcome.rebound]) this.#ledgers.delete(server);
    return outcome;
  }

  async close(): Promise<void> {
    await this.upstreams.close();
    await this.#server?.close().catch(() => {});
  }

  #requestHandlers(): Record<string, AgentRequestHandler> {
    const counted = (handler: AgentRequestHandler): AgentRequestHandler => (params, context) => this.#handle(() => handler(params, context));
    const resourceRequest = (method: string): AgentRequestHandler => counted(async (params, context) =>
      this.#forward(await this.#resourceServer(method, params, context), method, params, context));
    return {
      'tools/list': counted(async (_params, context) => {
        const tools = await this.#listNamed('tools', this.#tools, context);
        return { tools: [...tools, ...this.#unavailable().map(([s, f]) => unavailableTool(s, f))] };
      }),
      'tools/call': counted(async (params, context) => {
        const target = this.#resolve(this.#tools, 'tools/call', params, context);
        const client = this.upstreams.client(target.server);
        // The placeholder answers at once, a starting server's too: only a call of one of its own tools waits for it.
        const failure = this.upstreams.failure(target.server) ?? (this.upstreams.isStarting(target.server) ? startingInSession() : undefined);
        if (client === undefined && target.name === UNAVAILABLE_TOOL && failure !== undefined) {
          this.#ledger(target.server)?.refuse({ id: 0, method: 'tools/call', params: { name: target.name } }, 'refused', failure.reason, traceOf(context));
          return unavailableResult(target.server, failure) as Result;
        }
        return this.#forward(target.server, 'tools/call', { ...params, name: target.name }, context);
      }),
      'prompts/list': counted(async (_params, context) => ({ prompts: await this.#listNamed('prompts', this.#prompts, context) })),
      'prompts/get': counted(async (params, context) => {
        const target = this.#resolve(this.#prompts, 'prompts/get', params, context);
        return this.#forward(target.server, 'prompts/get', { ...params, name: target.name }, context);
      }),
      'resources/list': counted(async (_params, context) => {
        const resources = await this.#listEach('resources', 'resources/list', 'resources', context, (s, items) => this.#routeResources(s, items));
        return { resources };
      }),
      'resources/templates/list': counted(async (_params, context) => {
        const resourceTemplates = await this.#listEach('resources', 'resources/templates/list', 'resourceTemplates', context, (s, items) => this.#routeTemplates(s, items));
        return { resourceTemplates };
      }),
      'resources/read': resourceRequest('resources/read'),
      'resources/subscribe': counted(async (params, context) => {
        const server = await this.#resourceServer('resources/subscribe', params, context);
        const result = await this.#forward(server, 'resources/subscribe', params, context);
        this.#subscriptions.add(server, stringParam(params, 'uri'));
        return result;
      }),
      'resources/unsubscribe': counted(async (params, context) => {
        const server = await this.#resourceServer('resources/unsubscribe', params, context);
        this.#subscriptions.remove(server, stringParam(params, 'uri'));
        return this.#forward(server, 'resources/unsubscribe', params, context);
      }),
      'completion/complete': counted(async (params, context) => {
        const ref = objectParam(params, 'ref');
        const prompt = ref.type === 'ref/prompt' ? this.#resolve(this.#prompts, 'completion/complete', { name: String(ref.name) }, context) : undefined;
        const server = prompt?.server ?? await this.#resourceServer('completion/complete', { uri: String(ref.uri) }, context);
        if (this.upstreams.capabilities(server).completions === undefined) return { completion: { values: [] } };
        return this.#forward(server, 'completion/complete', prompt === undefined ? params : { ...params, ref: { ...ref, name: prompt.name } }, context);
      }),
      'logging/setLevel': counted(async (params) => {
        const level = stringParam(params, 'level');
        this.#logLevel = level;
        // Answered at once, as for a server connecting later: a server slow to answer holds no one.
        for (const [server, client] of this.upstreams.connected()) this.#sendLevel(server, client);
        return {};
      }),
    };
  }

  /**
   * A server that came back (its process exited, its host went and returned) knows nothing of the
   * agent's subscriptions to its resources: they are made again, or its updates would never come.
   */
  #subscribeAgain(server: string, client: UpstreamClient): void {
    for (const uri of this.#subscriptions.of(server)) {
      client.request('resources/subscribe', { uri }, { timeoutMs: this.#options.requestTimeoutMs }).catch((error: unknown) =>
        this.#options.log.debug('Resource subscription not made again', { server, error: error instanceof Error ? error.message : String(error) }));
    }
  }

  /**
   * A server that connected after the agent set its log level would log at its own default. Not
   * awaited: the level goes out on the channel ahead of any request the agent sends the server.
   */
  #sendLevel(server: string, client: UpstreamClient): void {
    const level = this.#logLevel;
    if (level === undefined || client.capabilities.logging === undefined) return;
    client.setLoggingLevel(level).catch((error: unknown) => this.#options.log.debug('Upstream log level not set', { server, level, error: error instanceof Error ? error.message : String(error) }));
  }

  async #handle<T>(work: () => Promise<T>): Promise<T> {
    const request = {};
    this.#arrivals.set(request, Date.now());
    try {
      return await work();
    } finally {
      this.#arrivals.delete(request);
    }
  }

  /** A namespaced name back to its server and original name, for one of the agent's servers. */
  #resolve(table: NameTable, method: string, params: Params, context: RequestContext): { server: string; name: string } {
    const name = stringParam(params, 'name');
    // An object by MCP's schema: a server's SDK answers another with -32603 and its schema
    // library's dump, where the agent should read which member was wrong.
    if (params.arguments !== undefined) objectParam(params, 'arguments');
    const target = table.resolve(name);
    if (target === null || !this.upstreams.servers.includes(target.server)) {
      this.#unroutable(method, { name }, context);
      const kind = table === this.#tools ? 'tool' : 'prompt';
      // -32602, as MCP asks for an unknown tool; the reason is the audit line's.
      throw new RpcError(RPC_CODES.invalidParams, `Unknown ${kind} "${name.slice(0, 200)}": list ${kind}s to see the available names`, { reason: 'server-not-found' });
    }
    return target;
  }

  /**
   * The connected server that serves `uri`. One still opening, or failed for a reason that may
   * have gone away, may be it: a URI the lists do not name is neither answered as not found nor
   * given to the one resource server connected until those have been waited for (as a call
   * naming a server is) and the ones that came up asked for their resources. A URI a server
   * named is that server's even while it is down: the agent is told why it is, not answered by
   * another server's guess.
   */
  async #resourceServer(method: string, params: Params, context: RequestContext): Promise<string> {
    const uri = stringParam(params, 'uri');
    const pending = this.upstreams.mayComeUp();
    const owner = this.#resources.owner(uri);
    let server = this.#resources.route(uri, this.#resourceServers(), pending.length === 0);
    if (server === undefined && pending.length > 0 && (owner === undefined || pending.includes(owner))) {
      // Bounded by the open deadline, not the start wait: the agent asks for this URI, and only these servers may have it.
      await untilCancelled(this.upstreams.reconnectAll(pending, this.#options.openTimeoutMs), context.signal);
      await this.#learnResources(pending.filter((s) => this.upstreams.client(s) !== undefined), context);
      // Not on the record as a probe: the agent gave it up.
      if (context.signal.aborted) throw new RequestCancelledError(context.signal.reason);
      server = this.#resources.route(uri, this.#resourceServers());
    }
    // An owner that is down: the forward refuses with its failure, and the record says so.
    server ??= this.#resources.owner(uri);
    if (server === undefined || !this.upstreams.servers.includes(server)) {
      this.#unroutable(method, { uri }, context);
      throw new RpcError(-32002, `Resource not found: ${uri.slice(0, 500)}`, { uri, reason: 'invalid-request' });
    }
    return server;
  }

  /** Connected servers offering resources, in config order. */
  #resourceServers(): string[] {
    return this.upstreams.connected().filter(([s]) => this.upstreams.capabilities(s).resources !== undefined).map(([s]) => s);
  }

  /** Routes by the resources and templates of `servers`, which came up since the agent last listed them. */
  async #learnResources(servers: readonly string[], context: RequestContext): Promise<void> {
    const learn = async (server: string, method: string, key: string, record: (s: string, items: Array<Record<string, unknown>>) => unknown) => {
      const client = this.upstreams.client(server);
      if (client === undefined) return;
      try {
        record(server, await listAll(client, method, key, context.signal, this.#options.requestTimeoutMs));
      } catch (error) {
        this.#options.log.debug('Upstream list failed', { server, method, error: error instanceof Error ? error.message : String(error) });
      }
    };
    await Promise.all(servers.filter((s) => this.upstreams.capabilities(s).resources !== undefined).flatMap((s) => [
      learn(s, 'resources/list', 'resources', (server, items) => this.#routeResources(server, items)),
      learn(s, 'resources/templates/list', 'resourceTemplates', (server, items) => this.#routeTemplates(server, items)),
    ]));
  }

  /** `server`'s resources, as it listed them just now, route their URIs to it. */
  #routeResources(server: string, items: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
    this.#resources.clearResources(server);
    this.#resources.addResources(server, items.map((r) => String(r.uri)));
    return items;
  }

  #routeTemplates(server: string, items: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
    this.#resources.clearTemplates(server);
    this.#resources.addTemplates(server, items.map((t) => String(t.uriTemplate)));
    return items;
  }

  /**
   * A request its session refused before this server saw it (an id already in flight): on the
   * record as refused, under the server its tool or prompt name leads to (by that server's own
   * name), else (a resource read, an unknown name) under none, as an unroutable call is.
   */
  refusedBySession(message: { method: string; params?: unknown }, reason: string, trace: ReturnType<typeof traceContextOf>): void {
    const params = (typeof message.params === 'object' && message.params !== null ? message.params : {}) as Params;
    const table = message.method === 'tools/call' ? this.#tools : message.method === 'prompts/get' ? this.#prompts : undefined;
    const target = table?.resolve(typeof params.name === 'string' ? params.name : '');
    const server = target != null && this.upstreams.servers.includes(target.server) ? target.server : null;
    this.#ledger(server)?.refuse({ id: 0, method: message.method, params: server === null ? params : { ...params, name: target!.name } }, 'refused', reason, trace);
  }

  /**
   * A call whose name or URI leads to none of the agent's servers is on the record as a probe of
   * an unknown server is on `/servers/:name/mcp`; on no server, as the name may be one the agent may not use.
   */
  #unroutable(method: string, params: Params, context: RequestContext): void {
    this.#ledger(null)?.refuse({ id: 0, method, params }, 'refused', 'server-not-found', traceOf(context));
  }

  /** Tools or prompts from every server, under their namespaced names (`table` forgets each server's old ones). */
  #listNamed(kind: 'tools' | 'prompts', table: NameTable, context: RequestContext): Promise<Array<Record<string, unknown>>> {
    return this.#listEach(kind, `${kind}/list`, kind, context, (s, items) => {
      table.clearServer(s);
      return items.map((item) => ({ ...item, name: table.add(s, String(item.name)) }));
    });
  }

  /** Lists one kind from every available server offering it (all pages), in config order. */
  async #listEach(
    capability: 'tools' | 'prompts' | 'resources',
    method: string,
    key: string,
    context: RequestContext,
    map: (server: string, items: Array<Record<string, unknown>>) => Array<Record<string, unknown>>,
  ): Promise<Array<Record<string, unknown>>> {
    await this.upstreams.retryFailed(this.#startWaitMs);
    const lists = await Promise.all(this.upstreams.connected().map(async ([server, client]) => {
      if (this.upstreams.capabilities(server)[capability] === undefined) return [];
      try {
        // A server up but slow to list (busy with a long call, one request at a time) holds no one
        // else's list past the start wait: its items are left out of this one.
        return map(server, await listAll(client, method, key, context.signal, Math.min(this.#options.requestTimeoutMs, this.#startWaitMs)));
      } catch (error) {
        this.#options.log.warn('Upstream list failed', { server, method, error: error instanceof Error ? error.message : String(error) });
        return [];
      }
    }));
    return lists.flat();
  }

  /**
   * Sends one request upstream with the agent's progress and cancellation; maps its errors. A
   * server unavailable in this session is tried again first (`UpstreamSet.reconnect`).
   */
  async #forward(server: string, method: string, params: Params, context: RequestContext): Promise<Result> {
    let client = this.upstreams.client(server);
    if (client === undefined) {
      // The open may take the whole open deadline: an agent that cancels meanwhile gets its request back now.
      await untilCancelled(this.upstreams.reconnect(server), context.signal);
      client = this.upstreams.client(server);
      if (client === undefined) throw this.#refuseUnavailable(server, method, params, context);
    }
    const { progressToken, ...meta } = params._meta ?? {};
    const { _meta: _, ...rest } = params;
    const ledger = this.#ledger(server);
    const audited: AuditedRequest = { id: ++this.#auditIds, method, params: Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest };
    const upstreamParams = ledger === undefined ? audited.params : ledger.request(audited, traceOf(context)).params;
    try {
      const result = await this.#relay.serving(server, context, () =>
        client.request(method, upstreamParams, {
          signal: context.signal,
          timeoutMs: this.#options.requestTimeoutMs,
          resetTimeoutOnProgress: true,
          ...(progressToken !== undefined
            ? { onprogress: (p) => void context.notify('notifications/progress', { ...p, progressToken }).catch(() => {}) }
            : {}),
        }));
      ledger?.answer({ id: audited.id, result });
      return result;
    } catch (error) {
      // A channel a config change closed under the call (the server taken away or bound elsewhere) answers with that.
      const answer = toAgentError(server, error, () => this.upstreams.failure(server) ?? (this.upstreams.client(server) !== client ? this.upstreams.departure(server) : undefined));
      if (error instanceof RequestCancelledError && error.byPeer) {
        ledger?.cancel(audited.id); // the agent cancelled it: no answer goes to the agent
        throw answer;
      }
      // The upstream's error as the ledger reads an answer, still the host's own where the host marked it.
      ledger?.answer(sameAuthor(answer, { id: audited.id, error: answer instanceof RpcError ? { code: answer.code, data: answer.data } : {} }));
      throw answer;
    }
  }

  /** A call to a server this session cannot reach: refused with the reason it failed for, and on the record as refused. */
  #refuseUnavailable(server: string, method: string, params: Params, context: RequestContext): RpcError {
    // No failure: a config change took the server away under the attempt, or the session closed under it.
    const failure = this.upstreams.failure(server) ?? this.upstreams.departure(server) ?? { reason: 'server-exited', message: 'the session is closing' };
    this.#ledger(server)?.refuse({ id: 0, method, params }, 'refused', failure.reason, traceOf(context));
    return fromWireError(new WireError(failure.reason, `Server "${server}" is unavailable: ${failure.message}`));
  }

  #ledger(server: string | null): CallLedger | undefined {
    const make = this.#ledgerOf;
    if (make === undefined) return undefined;
    let ledger = this.#ledgers.get(server);
    if (ledger === undefined) this.#ledgers.set(server, (ledger = make(server)));
    return ledger;
  }
}

/** The agent's trace context, from the HTTP request that carried this call. */
function traceOf(context: RequestContext) {
  return traceContextOf(context.info?.requestInfo?.headers);
}

/** The agent's sampling, elicitation and roots capabilities, for the upstream clients to declare. */
function mirroredCapabilities(agent: ClientCapabilities): ClientCapabilities {
  return {
    ...(agent.sampling !== undefined ? { sampling: agent.sampling } : {}),
    ...(agent.elicitation !== undefined ? { elicitation: agent.elicitation } : {}),
    ...(agent.roots !== undefined ? { roots: agent.roots } : {}),
  };
}

/** Every page of one list method; a server paging forever is cut off after 100 pages. */
async function listAll(client: UpstreamClient, method: string, key: string, signal: AbortSignal, timeoutMs: number): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await client.request(method, cursor === undefined ? {} : { cursor }, { signal, timeoutMs });
    const list = result[key];
    if (Array.isArray(list)) items.push(...(list as Array<Record<string, unknown>>));
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return items;
}

/** `work`, or a `RequestCancelledError` as soon as `signal` aborts (the work itself goes on). */
async function untilCancelled(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw new RequestCancelledError(signal.reason);
  let onAbort!: () => void;
  const cancelled = new Promise<never>((_, reject) => (onAbort = () => reject(new RequestCancelledError(signal.reason))));
  signal.addEventListener('abort', onAbort);
  try {
    await Promise.race([work, cancelled]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Resource subscriptions held per server, at most `MAX_SUBSCRIPTIONS` in all (past it one is forwarded but not made again). */
const MAX_SUBSCRIPTIONS = 1024;

class Subscriptions {
  readonly #byServer = new Map<string, Set<string>>();
  #count = 0;

  add(server: string, uri: string): void {
    const uris = this.#byServer.get(server) ?? new Set<string>();
    if (uris.has(uri) || this.#count >= MAX_SUBSCRIPTIONS) return;
    uris.add(uri);
    this.#byServer.set(server, uris);
    this.#count += 1;
  }

  remove(server: string, uri: string): void {
    if (this.#byServer.get(server)?.delete(uri) === true) this.#count -= 1;
  }

  of(server: string): readonly string[] {
    return [...(this.#byServer.get(server) ?? [])];
  }
}
