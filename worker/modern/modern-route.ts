/**
 * Serves one modern (2026-07-28) request on `/servers/:name/mcp`, statelessly: the body read once
 * (size and depth capped), validated against its headers (`validate-request.ts`), then one link
 * channel opened for this request alone, with `era: "modern"` and a fresh session id that names
 * nothing the worker keeps. The host keys its legacy instance by agent and server, not by that id,
 * so any worker instance can serve any modern request (DESIGN §8): nothing of it outlives the
 * response here. No answer carries `Mcp-Session-Id`.
 *
 * The caller has already run bearer auth and the Host/Origin guard; the server-allowed check is
 * passed in as `refusal`, so it is answered with the request's id, like every other modern error.
 * The admission (`admitModernRequest`) and the one-server forward (`forwardModern`, a listen
 * stream for `subscriptions/listen`) serve the modern `/mcp` aggregate too.
 *
 * Each forwarded request counts against its agent's `max-requests-per-agent`, with the agent's
 * legacy requests (`sessions/request-limits.ts`), from before its channel opens until its answer
 * has been read (a listen stream: until it ends): a channel is worker and host memory for as long
 * as it is open, and an answer not yet read is worker memory. One the agent abandons before its
 * answer (it went away) keeps its slot for `CANCELLED_SLOT_GRACE_MS` more: the host cancels the
 * call, but a server that ignores that works on, and a slot given back at once let an agent queue
 * unbounded work on a host (review isolation.md, finding 4); one the worker stopped waiting for
 * itself (`STOPPED_WAITING`) gives it back at once. Past the cap the request
 * is answered 429 `limit-reached` and nothing opens. What its answer holds unread counts against
 * the agent's unread budget as well (`sessions/request-limits.ts`).
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { httpStatusFor, isFailureReason, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { isHostAnswer } from '../../shared/audit/host-answers.ts';
import type { OpenOutcomes } from '../status/open-outcomes.ts';
import type { RecentErrors } from '../status/recent-errors.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import type { AgentEntry, WorkerConfig } from '../config/worker-config.ts';
import type { WorkerLogger } from '../log.ts';
import type { ChannelOpener } from '../routing/channel-opener.ts';
import { connectionFor, trustFor } from '../routing/channel-router.ts';
import type { Era } from './era.ts';
import { MAX_MODERN_BODY_BYTES } from './modern-body.ts';
import { invalidRequest, rejectionResponse } from './modern-errors.ts';
import { keptListen, type OpenListens } from './open-listens.ts';
import { relayListen } from './listen-relay.ts';
import { readParamHeaders, withParamHeaders } from './param-headers.ts';
import { heldAnswers, PENDING_KEEPALIVE_MS, relayModernRequest, SSE_HEADERS } from './modern-relay.ts';
import { backgroundWorkHolder } from '../background-work.ts';
import { validateModernRequest, type ModernRequest } from './validate-request.ts';
import { traceContextOf, type WorkerAudit } from '../audit/worker-audit.ts';
import { formatTraceparent } from '../../shared/trace-context.ts';
import type { AgentRequestCounters } from '../sessions/request-limits.ts';

export interface ModernRouteDeps {
  open: ChannelOpener;
  log: WorkerLogger;
  /** Longest wait for the server's answer (`request-timeout-seconds`); none when absent. */
  requestTimeoutMs?: number;
  /** Every call on the record (`audit/`). */
  audit?: WorkerAudit;
  /** How each agent's latest open of each server went, for `/healthz`: a request's open is its own (`open-outcomes.ts`). */
  openOutcomes?: OpenOutcomes;
  /** Recent failures, for `/healthz` (`recent-errors.ts`). */
  recentErrors?: RecentErrors;
  /** Each agent's requests in flight, kept across config reloads. */
  requestCounters: AgentRequestCounters;
  /** The listen streams open, kept across config reloads, which end those a reload no longer allows. */
  listens?: OpenListens;
  /** The config this app was built from, which allowed what it serves (`listens` compares it with the one in force). */
  config?: WorkerConfig;
}

export interface ModernTarget {
  agent: AgentEntry;
  server: string;
  /** The server's bound descriptor; absent exactly when `refusal` is given. */
  descriptor?: ConnectionDescriptor;
  /** Why this agent may not use this server (unknown or not allowed: one answer). */
  refusal?: WireError;
}

export type Admission = { kind: 'answer'; response: Response } | { kind: 'request'; message: ModernRequest };

/**
 * Reads and validates a request `classifyEra` did not call legacy, on either agent endpoint: an
 * answer when it is refused (or a notification, 202), else the request as it goes on, with its
 * `Mcp-Param-*` headers decoded into `_meta` for the host (`param-headers.ts`).
 */
export function admitModernRequest(request: Request, era: Exclude<Era, { kind: 'legacy' }>): Admission {
  const answer = (response: Response): Admission => ({ kind: 'answer', response });
  if (era.kind === 'reject') {
    return answer(Response.json(
      { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed: protocol version 2026-07-28 has no GET stream and no sessions to delete; POST each request', data: { reason: 'invalid-request' } } },
      { status: 405, headers: { allow: 'POST' } },
    ));
  }
  const body = era.body;
  if (body.kind === 'too-large') return answer(rejectionResponse(null, { ...invalidRequest(`the request body is over ${MAX_MODERN_BODY_BYTES} bytes`), status: 413 }));
  if (body.kind === 'not-json') return answer(rejectionResponse(null, { status: 400, code: -32700, message: 'Parse error: the body is not JSON', data: { reason: 'invalid-request' } }));
  if (body.kind === 'too-deep') return answer(rejectionResponse(body.id, invalidRequest('the request is nested deeper than 128 levels')));

  const checked = validateModernRequest(body.value, request.headers);
  if (checked.kind === 'notification') return answer(new Response(null, { status: 202 }));
  if (checked.kind === 'rejected') return answer(rejectionResponse(checked.id, checked.rejection));
  const params = checked.request.method === 'tools/call' ? readParamHeaders(request.headers) : { ok: true as const, values: null };
  if (!params.ok) return answer(rejectionResponse(checked.request.id, params.rejection));
  return { kind: 'request', message: withParamHeaders(checked.request, params.values) };
}

/** Answers a request `classifyEra` did not call legacy. */
export async function serveModern(request: Request, era: Exclude<Era, { kind: 'legacy' }>, target: ModernTarget, deps: ModernRouteDeps): Promise<Response> {
  const admitted = admitModernRequest(request, era);
  if (admitted.kind === 'answer') return admitted.response;
  const message = admitted.message;
  const { agent, server } = target;
  const trace = traceContextOf(request.headers);
  const scope = { agent: agent.name, server: server.slice(0, 64), era: 'modern' as const, route: 'passthrough' as const };
  if (target.refusal !== undefined || target.descriptor === undefined) {
    const refusal = target.refusal ?? new WireError('server-not-found', `Server "${server.slice(0, 64)}" not found`);
    deps.audit?.refused(scope, message, refusal, trace);
    return Response.json(jsonRpcErrorBody(message.id, refusal), { status: httpStatusFor(refusal.reason) });
  }

  return forwardModern(request, message, { agent, server, descriptor: target.descriptor, route: 'passthrough' }, deps);
}


/** Where a modern request goes: one server, for the endpoint the agent called (the audit's `route`). */
export interface ModernForward {
  agent: AgentEntry;
  server: string;
  descriptor: ConnectionDescriptor;
  route: 'passthrough' | 'aggregate';
}

/**
 * Sends one admitted request to one server over a channel of its own and relays the answer: a
 * listen stream for `subscriptions/listen`, else JSON or the request's SSE stream. The aggregate
 * forwards its single-server requests this way too.
 */
export async function forwardModern(request: Request, message: ModernRequest, to: ModernForward, deps: ModernRouteDeps): Promise<Response> {
  const { agent, server } = to;
  const trace = traceContextOf(request.headers);
  const scope = { agent: agent.name, server: server.slice(0, 64), era: 'modern' as const, route: to.route };
  const requests = deps.requestCounters.of(agent);
  const slot = requests.takeSlot();
  if (slot === null) {
    const refusal = requests.refusal();
    deps.log.info('Modern request refused', { agent: agent.name, server, method: message.method, reason: refusal.reason });
    deps.audit?.refused(scope, message, refusal, trace);
    return Response.json(jsonRpcErrorBody(message.id, refusal), { status: httpStatusFor(refusal.reason) });
  }
  // Where the runtime ends a request's work with its response (Workers), the request is held
  // until its place is given back: its channel's close and a cancelled call's grace come after.
  const hold = backgroundWorkHolder(request);
  hold?.(slot.givenBack());
  const session = newModernSession();
  const ledger = deps.audit?.ledger({ ...scope, session });
  const traced = ledger?.request(message, trace) ?? message;
  const span = ledger?.spanOf(message.id);
  const traceparent = span !== undefined ? formatTraceparent(span) : deps.audit?.channelTraceparent(trace);
  let channel;
  try {
    // The request goes right behind the open (one round trip on a host's link); a refused open
    // drops it unread on the host, and is answered here as before.
    channel = await openModernChannel(to, deps, { session, first: traced as JSONRPCMessage, ...(traceparent !== undefined ? { traceparent } : {}) });
  } catch (error) {
    slot.release();
    if (!(error instanceof WireError)) throw error;
    deps.log.info('Modern request refused', { agent: agent.name, server, method: message.method, reason: error.reason });
    if (ledger?.spanOf(message.id) !== undefined) ledger.fail(message.id, error.reason, error.reason === 'denied-by-policy' ? 'denied-by-policy' : 'refused');
    else if (deps.audit !== undefined) deps.audit.refused(scope, message, error, trace);
    return Response.json(jsonRpcErrorBody(message.id, error), { status: httpStatusFor(error.reason) });
  }
  // The relays log an answer ended or dropped for being left unread with the agent, `server` and
  // the method; one the agent abandons parks `slot` for the grace (one the worker stopped waiting
  // for gives it back), and `releasedWhenRead` gives it back once the answer was read otherwise.
  const listen = message.method === 'subscriptions/listen' ? keptListen(deps.listens, { agent: agent.name, servers: [server], authorizedUnder: deps.config }, request.signal, slot) : undefined;
  const answered = listen !== undefined
    ? relayListen(channel, traced, { signal: listen.signal, meter: requests, log: deps.log, server })
    : relayModernRequest(channel, traced, {
        signal: () => request.signal,
        keepAliveMs: PENDING_KEEPALIVE_MS,
        meter: requests,
        log: deps.log,
        server,
        slot,
        ...(hold !== undefined ? { holdBackgroundWork: hold } : {}),
        ...(deps.requestTimeoutMs !== undefined ? { timeoutMs: deps.requestTimeoutMs } : {}),
        onAnswer: (answer: unknown) => {
          if (answer !== null) noteHostFailure(deps, agent.name, server, answer);
          if (ledger !== undefined) return answer === null ? ledger.fail(message.id, 'agent-left') : ledger.answer(answer);
        },
      });
  return releasedWhenRead(await answered, listen?.slot ?? slot);
}

/**
 * `response` as it is, giving `slot` back once its body has been read to the end or cancelled:
 * a streamed answer, or a large JSON one (`heldAnswers`), is still in flight until then. A small
 * JSON answer is taken whole by the connection, so it is released at once.
 * The aggregate's listen stream (`listenAcross`) gives its slot back so too.
 *
 * The content type is looked at before the body: Deno turns a response's static body into a
 * stream the moment `body` is read, and then serves it through a stream resource instead of in
 * one write, so a JSON answer's body is never touched here (issue 17).
 */
export function releasedWhenRead(response: Response, slot: { release(): void }): Response {
  const body = heldAnswers.has(response) || response.headers.get('content-type') === SSE_HEADERS['content-type'] ? response.body : null;
  if (body === null) {
    slot.release();
    return response;
  }
  const reader = body.getReader();
  const relayed = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          slot.release();
          throw error;
        }
        if (chunk.done) {
          slot.release();
          controller.close();
        } else {
          controller.enqueue(chunk.value);
        }
      },
      // The body's own cancel first: it may tell the relay the agent left before the answer.
      cancel: (reason) => {
        const cancelled = reader.cancel(reason);
        slot.release();
        return cancelled;
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(relayed, { status: response.status, headers: response.headers });
}

/**
 * Opens the channel for one modern request: `era: "modern"` and a fresh session id that names
 * nothing the worker keeps (the host keys its instance by agent and server); `first`, the request,
 * goes right behind the open where the medium can (`ChannelOpenOptions.first`). Rejects with a `WireError`.
 */
export function openModernChannel(
  to: { agent: AgentEntry; server: string; descriptor: ConnectionDescriptor },
  deps: Pick<ModernRouteDeps, 'open'>,
  options: { session?: string; traceparent?: string; first?: JSONRPCMessage } = {},
): Promise<Transport> {
  const session = options.session ?? newModernSession();
  const connection = { ...connectionFor(to.agent, to.server, session, options.traceparent), era: 'modern' as const };
  return deps.open(to.descriptor, connection, trustFor(to.agent), options.first !== undefined ? { first: options.first } : {});
}

/**
 * A failure the host answered in the server's place (it could not start it, its pin is stale), as
 * a refused open would be on a legacy session: the open was taken, and its answer says it failed.
 * Only the host's own answer counts, which a server cannot forge (`host-answers.ts`).
 */
function noteHostFailure(deps: Pick<ModernRouteDeps, 'openOutcomes' | 'recentErrors'>, agent: string, server: string, answer: unknown): void {
  if ((deps.openOutcomes === undefined && deps.recentErrors === undefined) || !isHostAnswer(answer)) return;
  const error = (answer as { error?: { message?: unknown; data?: { reason?: unknown } } }).error;
  const reason = error?.data?.reason;
  if (!isFailureReason(reason)) return;
  const message = typeof error?.message === 'string' ? error.message : reason;
  deps.openOutcomes?.failed(agent, server, reason, message);
  deps.recentErrors?.record({ reason, server, agent, message });
}

function newModernSession(): string {
  return `modern-${crypto.randomUUID()}`;
}
