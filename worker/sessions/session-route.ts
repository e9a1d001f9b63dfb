/**
 * The HTTP session plumbing both agent endpoints share (`/mcp` and `/servers/:name/mcp`).
 *
 * A request carrying `Mcp-Session-Id` goes to that session, but only if the session belongs to
 * the same agent and the same endpoint: anything else is the 404 "Session not found" that tells an
 * MCP client to initialize again (never a hint that the id exists elsewhere). For a session of
 * this agent and endpoint that the worker ended lately, the 404's body says why
 * (`data.endedBecause`, `ended-sessions.ts`). A request without
 * the header must be an `initialize` POST; the endpoint's `create` opens the upstream side, and
 * only then is the new session registered and handed the request. Cheap checks (Accept, media
 * type, JSON) run before `create`, so a malformed request never starts a server process.
 *
 * Every POST body is read here, once, for both endpoints (`readPostBody`), and handed to the
 * session already parsed: a body nested deeper than `MAX_JSON_DEPTH` is answered with
 * `invalid-request` (HTTP 400, JSON-RPC -32600, the request's id when it can be read) before
 * the session or the link see it. Past the parse, everything recursive (the link's
 * `JSON.stringify` above all) overflows the stack on deep input, and where that exception lands
 * is a misleading `server-exited` or a request that never ends. Reading the body here is also
 * the hot path's cheapest read: a body with a declared length is one `Request.text()` (about
 * 4 µs under `Deno.serve` against 18 µs for a chunked reader, measured for a tools/call).
 * A body over the endpoint's limit, or one that is not JSON, is handed on as such, so the session's
 * endpoint answers it (413, parse error) after its own header checks (`legacy-http-endpoint.ts`, `legacy-post-body.ts`).
 *
 * @module
 */
import type { WorkerConfig } from '../config/worker-config.ts';
import type { Context } from 'hono';
import type { InitializeRequest, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { MAX_JSON_DEPTH, parseJsonWithinDepth } from '../../shared/json-depth.ts';
import { isInitializeRequest, isJsonRpcMessage, isRequest } from '../../shared/json-rpc-guards.ts';
import type { AgentEntry } from '../config/worker-config.ts';
import type { AgentVariables } from '../auth/agent-auth.ts';
import type { WorkerLogger } from '../log.ts';
import { sessionLimitOf } from './agent-limits.ts';
import { readBoundedBody } from './bounded-body.ts';
import { drawRequestsFrom, type AgentRequestCounters } from './request-limits.ts';
import { MAX_LEGACY_BODY_BYTES, type LegacyPostBody } from './legacy-post-body.ts';
import type { SessionEnd } from './ended-sessions.ts';
import type { AgentSession, SessionTable } from './session-table.ts';

/** Largest initialize body read before the session exists; initialize requests are small. */
const MAX_INITIALIZE_BYTES = 1024 * 1024;

export interface NewSessionRequest {
  agent: AgentEntry;
  /** The id the session will answer with; generated before the upstream is opened. */
  sessionId: string;
  initialize: JSONRPCRequest & InitializeRequest;
}

export interface SessionRouteOptions {
  sessions: SessionTable;
  log: WorkerLogger;
  /** New session ids; `crypto.randomUUID()` by default (on Workers, an id naming the Durable Object that holds it). */
  newSessionId?: () => string;
  /**
   * The config the session is opened under: its `max-sessions-per-agent` (an agent's own
   * `max-sessions` wins), and what a reload during the open is measured against (`catchUp`).
   */
  config?: WorkerConfig;
  /** Each agent's requests in flight, kept across config reloads. */
  requestCounters: AgentRequestCounters;
}

/** A JSON-RPC error response with the HTTP status that goes with its reason. */
export function jsonRpcErrorResponse(c: Context, id: string | number | null, error: WireError, status?: number): Response {
  return c.json(jsonRpcErrorBody(id, error), (status ?? httpStatusFor(error.reason)) as 400);
}

/**
 * Routes one HTTP request of an agent endpoint: to its session, or through `create` for an
 * `initialize` without a session id. A session opened with an OAuth access token is registered
 * with the token's grant, and ends when the grant does (`SessionTable.endGrants`); any credential
 * of its agent may use it meanwhile, as a session belongs to its agent (every request's own
 * credential is checked before it gets here).
 */
export async function handleSessionRequest(
  c: Context<{ Variables: AgentVariables }>,
  agent: AgentEntry,
  route: string,
  options: SessionRouteOptions,
  create: (request: NewSessionRequest) => Promise<AgentSession>,
): Promise<Response> {
  const sessionId = c.req.header('mcp-session-id');
  if (sessionId !== undefined) {
    const session = options.sessions.get(sessionId);
    if (session === undefined || session.agent !== agent.name || session.route !== route) {
      const end = session === undefined ? await options.sessions.endOf?.(sessionId, agent.name, route) : undefined;
      return sessionNotFound(c, end);
    }
    options.sessions.touch(sessionId);
    if (c.req.method !== 'POST') return session.handle(c.req.raw);
    const body = await readPostBody(c.req.raw);
    if (body.kind === 'too-deep') return jsonRpcErrorResponse(c, body.id, tooDeep());
    drawRequestsFrom(c.req.raw, options.requestCounters.of(agent));
    return session.handle(c.req.raw, body);
  }

  if (c.req.method !== 'POST') {
    return jsonRpcErrorResponse(c, null, new WireError('invalid-request', 'Bad Request: Mcp-Session-Id header is required'));
  }
  const accept = c.req.header('accept') ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return jsonRpcErrorResponse(c, null, new WireError('invalid-request', 'Not Acceptable: Client must accept both application/json and text/event-stream'), 406);
  }
  if (!/^application\/json\s*(;|$)/i.test(c.req.header('content-type') ?? '')) {
    return jsonRpcErrorResponse(c, null, new WireError('invalid-request', 'Unsupported Media Type: Content-Type must be application/json'), 415);
  }
  const body = await readJson(c.req.raw);
  if (body instanceof TooDeep) return jsonRpcErrorResponse(c, body.id, tooDeep());
  if (body instanceof WireError) return jsonRpcErrorResponse(c, null, body);
  const messages = Array.isArray(body) ? body : [body];
  const initialize = messages.find((message) => isInitializeRequest(message)) as (JSONRPCRequest & InitializeRequest) | undefined;
  if (initialize === undefined || messages.length !== 1) {
    const message = initialize === undefined
      ? 'Bad Request: Mcp-Session-Id header is required'
      : 'Invalid Request: Only one initialization request is allowed';
    return jsonRpcErrorResponse(c, null, new WireError('invalid-request', message));
  }
  // `isInitializeRequest` checks method and params only: a bad envelope must not start a server.
  if (!isJsonRpcMessage(initialize) || !isRequest(initialize)) {
    return jsonRpcErrorResponse(c, null, new WireError('invalid-request', 'Invalid Request: initialize must be a JSON-RPC 2.0 request ("jsonrpc": "2.0", a string or number id)'));
  }

  let room: { release(): void };
  try {
    room = await options.sessions.admit(agent.name, sessionLimitOf(agent, options.config));
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    return jsonRpcErrorResponse(c, initialize.id, error);
  }
  let session: AgentSession;
  try {
    session = await create({ agent, sessionId: options.newSessionId?.() ?? crypto.randomUUID(), initialize });
  } catch (error) {
    room.release();
    if (!(error instanceof WireError)) throw error;
    options.log.info('Agent session refused', { agent: agent.name, route, reason: error.reason });
    return jsonRpcErrorResponse(c, initialize.id, error);
  }
  options.sessions.add(session, c.get('grant'));
  room.release();
  drawRequestsFrom(c.req.raw, options.requestCounters.of(agent));
  let response: Response;
  try {
    response = await session.handle(c.req.raw, { kind: 'json', value: body });
  } catch (error) {
    options.sessions.remove(session.id);
    await session.close('initialize failed');
    throw error;
  }
  if (response.status !== 200) {
    options.sessions.remove(session.id);
    await session.close('initialize failed');
  } else {
    // Open once its initialize has a result: a server's error on the stream opened nothing (the session ends behind it).
    const opened = () => {
      options.log.info('Agent session opened', { agent: agent.name, route, session: session.id });
      options.sessions.opened?.(session.id);
    };
    if (session.initialized === undefined) opened();
    else void session.initialized.then((ok) => ok && opened());
    // A reload while it opened saw no such session: it is ended or reconfigured now, as that
    // reload would have (its next request then learns why, as any session a reload ended).
    if (options.config !== undefined) await options.sessions.catchUp?.(session, options.config);
  }
  return response;
}

/**
 * The spec's 404 for a session id this endpoint does not serve, which is what makes a client
 * initialize again; the body says why when the worker ended it (`end`).
 */
function sessionNotFound(c: Context, end: SessionEnd | undefined): Response {
  const notFound = end === undefined
    ? new WireError('invalid-request', 'Session not found: it expired or was closed; initialize a new session')
    : new WireError('invalid-request', `Session ended: ${end.why}; initialize a new session`, { detail: { endedBecause: end.because } });
  return jsonRpcErrorResponse(c, null, notFound, 404);
}

/**
 * For an endpoint that no longer serves `route` to `agent` (a server a reload took away): the
 * session the request names, when the worker ended it, answered as {@link handleSessionRequest}
 * answers an ended one, so the agent learns why; `undefined` otherwise.
 */
export async function endedSessionAnswer(c: Context, agent: AgentEntry, route: string, options: Pick<SessionRouteOptions, 'sessions'>): Promise<Response | undefined> {
  const sessionId = c.req.header('mcp-session-id');
  if (sessionId === undefined || options.sessions.get(sessionId) !== undefined) return undefined;
  const end = await options.sessions.endOf?.(sessionId, agent.name, route);
  return end === undefined ? undefined : sessionNotFound(c, end);
}

/** The initialize body as JSON, read within its cap; a `WireError` when too large or not JSON, `TooDeep` when nested too deep. */
async function readJson(request: Request): Promise<unknown> {
  const body = await readBoundedBody(request, MAX_INITIALIZE_BYTES);
  if (body.kind === 'too-large') return new WireError('invalid-request', `Request body too large: more than ${body.maxBytes} bytes`);
  const read = parseJsonWithinDepth(body.text);
  if (read.kind === 'not-json') return new WireError('invalid-request', 'Parse error: Invalid JSON');
  return read.kind === 'too-deep' ? new TooDeep(read.id) : read.value;
}

class TooDeep {
  constructor(readonly id: string | number | null) {}
}

function tooDeep(): WireError {
  return new WireError('invalid-request', `Request nested deeper than ${MAX_JSON_DEPTH} levels`);
}

/** A session's POST body, read once and depth-checked; what is not JSON or too large the session's endpoint answers. */
async function readPostBody(request: Request): Promise<LegacyPostBody | { kind: 'too-deep'; id: string | number | null }> {
  const body = await readBoundedBody(request, MAX_LEGACY_BODY_BYTES);
  if (body.kind === 'too-large') return { kind: 'too-large' };
  return parseJsonWithinDepth(body.text);
}
