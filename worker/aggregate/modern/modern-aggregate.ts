/**
 * `/mcp` for a modern (2026-07-28) agent: the aggregate of every server the agent may use,
 * served statelessly, each request on its own (DESIGN §8: nothing is kept between requests, so
 * any worker instance serves any of them). The request is read and validated as on
 * `/servers/:name/mcp` (`admitModernRequest`), its `Mcp-Name` against the aggregate's own names.
 *
 * - `server/discover` and the four lists go to every server at once and are merged
 *   (`modern-merge.ts`): namespaced names, the smallest `ttlMs`, and `cacheScope: "private"`.
 *   A server that has not answered within `startWaitMs` (`aggregate-start-wait-seconds`) is
 *   left out as `starting`, its placeholder listed and the list stale at once (`ttlMs: 0`), as a
 *   legacy session does at initialize: one server that never answers holds no other's list.
 * - `tools/call` and `prompts/get` go to the server their name names, with the server's own name
 *   in place of `<server>__<name>` (so the forwarded request's `Mcp-Name`, were it sent on, is
 *   the server's name too); a name shortened with a hash is looked up in that server's list.
 *   An `InputRequiredResult` comes back as it is, and the retry, repeating the namespaced name,
 *   reaches the same server. Behind a host its `requestState` is sealed by the host for that
 *   agent and server (legacy bridging and modern servers alike), so a state carried to another
 *   server is refused; an edge-direct modern server's own state goes as the server made it, bound
 *   by that server alone (it sees one configured credential for every agent).
 * - `resources/read` goes to the server that lists the URI or a template matching it
 *   (`resource-routes.ts`), asked afresh each time; `completion/complete` follows its reference.
 * - `subscriptions/listen` opens every server's listen stream and merges them into the agent's
 *   one (`listen-fan-in.ts`): one acknowledgement, the union of what the servers honour.
 *
 * @module
 */
import type { AgentEntry, WorkerConfig } from '../../config/worker-config.ts';
import type { Era } from '../../modern/era.ts';
import { methodNotFound, rejectionResponse } from '../../modern/modern-errors.ts';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../../shared/errors.ts';
import { relayListen } from '../../modern/listen-relay.ts';
import { keptListen } from '../../modern/open-listens.ts';
import { admitModernRequest, forwardModern, openModernChannel, releasedWhenRead, type ModernRouteDeps } from '../../modern/modern-route.ts';
import type { ModernRequest } from '../../modern/validate-request.ts';
import { unavailableResult } from '../availability.ts';
import { MAX_NAME_LENGTH, namespacedName, splitNamespacedName, UNAVAILABLE_TOOL } from '../naming.ts';
import { ResourceRoutes } from '../resource-routes.ts';
import { askAllPages, askEveryServer, askInTime, askServer, type AggregateContext } from './ask-servers.ts';
import { ListenFanIn } from './listen-fan-in.ts';
import { LIST_FIELD, mergeDiscover, mergeList, type ListMethod } from './modern-merge.ts';
import { isRecord } from '../../../shared/records.ts';
import { traceContextOf } from '../../audit/worker-audit.ts';

export interface ModernAggregateDeps extends ModernRouteDeps {
  config: WorkerConfig;
  /** Longest wait for a server's answer to a merged list or discover before it is listed as starting. */
  startWaitMs?: number;
}

const INVALID_PARAMS = -32602;

export async function serveModernAggregate(request: Request, era: Exclude<Era, { kind: 'legacy' }>, agent: AgentEntry, deps: ModernAggregateDeps): Promise<Response> {
  const admitted = admitModernRequest(request, era);
  if (admitted.kind === 'answer') return admitted.response;
  const message = admitted.message;
  const ctx: AggregateContext = { request, agent, servers: agent.servers.filter((s) => Object.hasOwn(deps.config.servers, s)), config: deps.config, deps, ...(deps.startWaitMs !== undefined ? { startWaitMs: deps.startWaitMs } : {}) };
  try {
    return await answer(ctx, message, deps.startWaitMs);
  } catch (error) {
    // A question to a server was refused by the agent's own cap (`askServer`): so is the request.
    if (!(error instanceof WireError && error.reason === 'limit-reached')) throw error;
    deps.log.info('Modern aggregate request refused', { agent: agent.name, method: message.method, reason: error.reason });
    return Response.json(jsonRpcErrorBody(message.id, error), { status: httpStatusFor(error.reason) });
  }
}

async function answer(ctx: AggregateContext, message: ModernRequest, waitMs: number | undefined): Promise<Response> {
  const params = message.params ?? {};
  const bare = { ...message, params: { _meta: params._meta } } as ModernRequest;
  const method = message.method;

  if (method === 'server/discover') {
    const { answered, failed } = await askEveryServer(ctx, bare, undefined, waitMs);
    return result(message, mergeDiscover(answered, failed));
  }
  if (Object.hasOwn(LIST_FIELD, method)) {
    const listMethod = method as ListMethod;
    const { answered, failed } = await askEveryServer(ctx, bare, LIST_FIELD[listMethod], waitMs);
    return result(message, mergeList(listMethod, answered, failed));
  }
  if (method === 'tools/call' || method === 'prompts/get') {
    const target = await resolveName(ctx, bare, method === 'tools/call' ? 'tools/list' : 'prompts/list', params.name);
    if (target === null) return unroutable(ctx, message, `Unknown ${method === 'tools/call' ? 'tool' : 'prompt'}: ${String(params.name).slice(0, 128)}`);
    if (method === 'tools/call' && target.name === UNAVAILABLE_TOOL) {
      // The placeholder of a server that cannot be reached answers with the reason, as on a legacy session.
      const ask = (asking: AggregateContext) => askServer(asking, target.server, { ...bare, method: 'tools/list' });
      const asked = waitMs === undefined ? await ask(ctx) : await askInTime(ctx, waitMs, ask);
      if (asked.kind === 'failed') {
        ledger(ctx, target.server)?.refuse({ ...message, params: { ...params, name: target.name } }, 'refused', asked.failure.reason, traceContextOf(ctx.request.headers));
        return result(message, { resultType: 'complete', ...unavailableResult(target.server, asked.failure) });
      }
    }
    return forward(ctx, { ...message, params: { ...params, name: target.name } }, target.server);
  }
  if (method === 'resources/read') {
    const uri = String(params.uri);
    const server = await routeUri(ctx, bare, uri);
    if (server === undefined) return unroutable(ctx, message, 'Resource not found', { uri });
    return forward(ctx, message, server);
  }
  if (method === 'completion/complete') {
    const ref = isRecord(params.ref) ? params.ref : {};
    if (ref.type === 'ref/prompt') {
      const target = await resolveName(ctx, bare, 'prompts/list', ref.name);
      if (target === null) return error(message, `Unknown prompt: ${String(ref.name).slice(0, 128)}`);
      return forward(ctx, { ...message, params: { ...params, ref: { ...ref, name: target.name } } }, target.server);
    }
    const server = typeof ref.uri === 'string' ? await routeUri(ctx, bare, ref.uri) : undefined;
    if (server === undefined) return error(message, 'Resource not found', typeof ref.uri === 'string' ? { uri: ref.uri } : {});
    return forward(ctx, message, server);
  }
  if (method === 'subscriptions/listen') return listenAcross(ctx, message);
  return rejectionResponse(message.id, methodNotFound(method, 'unknown'));
}

/**
 * One listen stream over every server's: opened where it can be, merged (`listen-fan-in.ts`). It
 * takes one of the agent's `max-requests-per-agent` slots, as a listen on `/servers/:name/mcp`
 * does (`forwardModern`), from before the opens until the stream is read to the end or cancelled:
 * its channels (at most one per server of the agent) are worker and host memory while it is open.
 */
async function listenAcross(ctx: AggregateContext, message: ModernRequest): Promise<Response> {
  const requests = ctx.deps.requestCounters.of(ctx.agent);
  const slot = requests.takeSlot();
  if (slot === null) {
    const refusal = requests.refusal();
    ctx.deps.log.info('Modern request refused', { agent: ctx.agent.name, method: message.method, reason: refusal.reason });
    ledger(ctx, null)?.refuse(message, 'refused', refusal.reason, traceContextOf(ctx.request.headers));
    return Response.json(jsonRpcErrorBody(message.id, refusal), { status: httpStatusFor(refusal.reason) });
  }
  const opened = await Promise.allSettled(ctx.servers.map(async (server) => {
    try {
      return { server, channel: await openModernChannel({ agent: ctx.agent, server, descriptor: ctx.config.servers[server]!.executor }, ctx.deps) };
    } catch (failure) {
      if (!(failure instanceof WireError)) throw failure;
      ctx.deps.log.info('A server of the aggregate listen stream could not be opened', { agent: ctx.agent.name, server, reason: failure.reason });
      return failure;
    }
  }));
  const channels = opened.flatMap((o) => (o.status === 'fulfilled' && !(o.value instanceof WireError) ? [o.value] : []));
  try {
    const thrown = opened.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (thrown !== undefined) throw thrown.reason;
    const refused = opened.flatMap((o) => (o.status === 'fulfilled' && o.value instanceof WireError ? [o.value] : []))[0];
    if (channels.length === 0) {
      const failure = refused ?? new WireError('server-not-found', 'This agent may use no server: there is nothing to listen to');
      slot.release();
      return Response.json(jsonRpcErrorBody(message.id, failure), { status: httpStatusFor(failure.reason) });
    }
    // Each watched URI goes to the server that serves it, as a read would; one nobody serves is not acknowledged.
    const filter = isRecord(message.params?.notifications) ? message.params.notifications : {};
    const watched = Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions.filter((u): u is string => typeof u === 'string') : [];
    if (watched.length > 0) {
      const bare = { ...message, params: { _meta: message.params?._meta } } as ModernRequest;
      const route = await uriRouter(ctx, bare);
      const owners = watched.map((uri) => [uri, route(uri)] as const);
      for (const part of channels) Object.assign(part, { uris: owners.filter(([, owner]) => owner === part.server).map(([uri]) => uri) });
    }
  } catch (error) {
    // Nothing relays the channels already open: close them, or they hold the host's listeners.
    for (const { channel } of channels) void channel.close().catch(() => {});
    slot.release();
    throw error;
  }
  // Counted against the agent's unread budget as a listen on one server is (`forwardModern`), and
  // ended by a reload that takes any of its servers from the agent (it listens again, to the rest).
  const listen = keptListen(ctx.deps.listens, { agent: ctx.agent.name, servers: channels.map((part) => part.server), authorizedUnder: ctx.config }, ctx.request.signal, slot);
  const fanIn = new ListenFanIn(channels, ctx.startWaitMs !== undefined ? { ackWaitMs: ctx.startWaitMs } : {});
  const relayed = await relayListen(fanIn, message, { signal: listen.signal, meter: requests, log: ctx.deps.log });
  return releasedWhenRead(relayed, listen.slot);
}

/** The server and its own name behind a namespaced name; a hash-shortened one is looked up in the server's list. */
async function resolveName(ctx: AggregateContext, bare: ModernRequest, list: 'tools/list' | 'prompts/list', full: unknown): Promise<{ server: string; name: string } | null> {
  if (typeof full !== 'string') return null;
  const split = splitNamespacedName(full);
  if (split === null || !ctx.servers.includes(split.server)) return null;
  if (!(full.length === MAX_NAME_LENGTH && /-[0-9a-f]{8}$/.test(full))) return split;
  const field = LIST_FIELD[list];
  // Every page: the shortened name may be on any.
  const asked = await askAllPages(ctx, split.server, { ...bare, method: list }, field);
  const items = asked.kind === 'result' && Array.isArray(asked.result[field]) ? (asked.result[field] as unknown[]) : [];
  const match = items.find((item) => isRecord(item) && typeof item.name === 'string' && namespacedName(split.server, item.name) === full) as { name: string } | undefined;
  return match === undefined ? split : { server: split.server, name: match.name };
}

/** The server that serves `uri`: the only one, or the one whose list or templates name it. */
async function routeUri(ctx: AggregateContext, bare: ModernRequest, uri: string): Promise<string | undefined> {
  return (await uriRouter(ctx, bare))(uri);
}

/** Routes URIs by what the servers list now (asked once, for as many URIs as need it). */
async function uriRouter(ctx: AggregateContext, bare: ModernRequest): Promise<(uri: string) => string | undefined> {
  if (ctx.servers.length === 1) return () => ctx.servers[0];
  // Within the start wait, as a merged list: one server slow to list holds no read of another's resource.
  const waitMs = ctx.startWaitMs;
  const [resources, templates] = await Promise.all([
    askEveryServer(ctx, { ...bare, method: 'resources/list' }, 'resources', waitMs),
    askEveryServer(ctx, { ...bare, method: 'resources/templates/list' }, 'resourceTemplates', waitMs),
  ]);
  const routes = new ResourceRoutes();
  for (const { server, result } of resources.answered) routes.addResources(server, uris(result.resources, 'uri'));
  for (const { server, result } of templates.answered) routes.addTemplates(server, uris(result.resourceTemplates, 'uriTemplate'));
  const candidates = [...new Set([...resources.answered, ...templates.answered].map((a) => a.server))];
  // A URI no answer names goes to the one server that answered only when none failed to: the
  // one still starting (or down) may be the one that serves it.
  const everyServerAnswered = resources.failed.length === 0 && templates.failed.length === 0;
  return (uri) => routes.route(uri, candidates, everyServerAnswered);
}

function uris(items: unknown, field: string): string[] {
  return Array.isArray(items) ? items.flatMap((item) => (isRecord(item) && typeof item[field] === 'string' ? [item[field] as string] : [])) : [];
}

function forward(ctx: AggregateContext, message: ModernRequest, server: string): Promise<Response> {
  return forwardModern(ctx.request, message, { agent: ctx.agent, server, descriptor: ctx.config.servers[server]!.executor, route: 'aggregate' }, ctx.deps);
}

function ledger(ctx: AggregateContext, server: string | null) {
  return ctx.deps.audit?.ledger({ agent: ctx.agent.name, server, era: 'modern', route: 'aggregate' });
}

/**
 * A call whose name or URI leads to none of the agent's servers is on the record as a probe of an
 * unknown server is on `/servers/:name/mcp`; on no server, as the name may be one the agent may not use.
 */
function unroutable(ctx: AggregateContext, message: ModernRequest, text: string, data?: Record<string, unknown>): Response {
  ledger(ctx, null)?.refuse(message, 'refused', 'server-not-found', traceContextOf(ctx.request.headers));
  return error(message, text, data);
}

function result(message: ModernRequest, value: Record<string, unknown>): Response {
  return Response.json({ jsonrpc: '2.0', id: message.id, result: value });
}

function error(message: ModernRequest, text: string, data: Record<string, unknown> = {}): Response {
  return Response.json({ jsonrpc: '2.0', id: message.id, error: { code: INVALID_PARAMS, message: text, data: { ...data, reason: 'invalid-request' } } });
}
