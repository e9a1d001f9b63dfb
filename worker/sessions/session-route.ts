/**
 * The HTTP session plumbing both agent endpoints share (`/mcp` and `/servers/:name/mcp`).
 *
 * A request carrying `Mcp-Session-Id` goes to that session, but only if the session belongs to
 * the same agent and the same endpoint: anything else is the 404 "Session not found" that tells an
 * MCP client to initialize again (never a hint that the id exists elsewhere). A request without
 * the header must be an `initialize` POST; the endpoint's `create` opens the upstream side, and
 * only then is the new session registered and handed the request. Cheap checks (Accept, media
 * type, JSON) run before `create`, so a malformed request never starts a server process.
 * Errors the SDK transport answers itself get a `data.reason` too (`withReason`).
 *
 * Every POST body is read here, once, for both endpoints (`readPostBody`), and handed to the
 * session already parsed: a body nested deeper than `MAX_JSON_DEPTH` is answered with
 * `invalid-request` (HTTP 400, JSON-RPC -32600, the request's id when it can be read) before
 * the SDK, zod or the link see it. Past the parse, everything recursive (the link's
 * `JSON.stringify` above all) overflows the stack on deep input, and where that exception lands
 * is a misleading `server-exited` or a request that never ends. Reading the body here is also
 * the hot path's cheapest read: a body with a declared length is one `Request.text()` (about
 * 4 µs under `Deno.serve` against 18 µs for the SDK's chunked reader, measured for a tools/call).
 * A body over the SDK's own limit, or one that is not JSON, goes to the SDK as it came (rebuilt
 * from the text), so its answers (413, parse error) stay exactly the SDK's.
 *
 * @module
 */
import type { Context } from 'hono';
import type { InitializeRequest, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest, isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import { MAX_JSON_DEPTH, parseJsonWithinDepth } from '../../shared/json-depth.ts';
import type { AgentEntry } from '../config/worker-config.ts';
import type { WorkerLogger } from '../log.ts';
import { sessionLimitOf } from './agent-limits.ts';
import { readBoundedBody } from './bounded-body.ts';
import type { AgentSession, SessionTable } from './session-table.ts';

/** Largest initialize body read before the transport takes over; initialize requests are small. */
const MAX_INITIALIZE_BYTES = 1024 * 1024;
/** The SDK transport's own body limit (`DEFAULT_MAX_REQUEST_BODY_SIZE`, 4 MiB); larger bodies are its business. */
const MAX_POST_BYTES = 4 * 1024 * 1024;

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
  /** The worker-wide `max-sessions-per-agent` (an agent's own `max-sessions` wins). */
  config?: { readonly 'max-sessions-per-agent'?: number | undefined };
}

/** A JSON-RPC error response with the HTTP status that goes with its reason. */
export function jsonRpcErrorResponse(c: Context, id: string | number | null, error: WireError, status?: number): Response {
  return c.json(jsonRpcErrorBody(id, error), (status ?? httpStatusFor(error.reason)) as 400);
}

/**
 * Routes one HTTP request of an agent endpoint: to its session, or through `create` for an
 * `initialize` without a session id.
 */
export async function handleSessionRequest(
  c: Context,
  agent: AgentEntry,
  route: string,
  options: SessionRouteOptions,
  create: (request: NewSessionRequest) => Promise<AgentSession>,
): Promise<Response> {
  const sessionId = c.req.header('mcp-session-id');
  if (sessionId !== undefined) {
    const session = options.sessions.get(sessionId);
    if (session === undefined || session.agent !== agent.name || session.route !== route) {
      return jsonRpcErrorResponse(c, null, new WireError('invalid-request', 'Session not found: it expired or was closed; initialize a new session'), 404);
    }
    options.sessions.touch(sessionId);
    if (c.req.method !== 'POST') return withReason(await session.handle(c.req.raw));
    const body = await readPostBody(c.req.raw);
    if (body.kind === 'too-deep') return jsonRpcErrorResponse(c, body.id, tooDeep());
    if (body.kind === 'too-large') return jsonRpcErrorResponse(c, null, new WireError('invalid-request', `Payload too large: the request body is over ${MAX_POST_BYTES} bytes`), 413);
    return withReason(body.kind === 'json' ? await session.handle(c.req.raw, body.value) : await session.handle(body.request));
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
  const initialize = messages.find(isInitializeRequest) as (JSONRPCRequest & InitializeRequest) | undefined;
  if (initialize === undefined || messages.length !== 1) {
    const message = initialize === undefined
      ? 'Bad Request: Mcp-Session-Id header is required'
      : 'Invalid Request: Only one initialization request is allowed';
    return jsonRpcErrorResponse(c, null, new WireError('invalid-request', message));
  }
  // `isInitializeRequest` checks method and params only: a bad envelope must not start a server.
  if (!isJSONRPCRequest(initialize)) {
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
  options.sessions.add(session);
  room.release();
  let response: Response;
  try {
    response = await session.handle(c.req.raw, body);
  } catch (error) {
    options.sessions.remove(session.id);
    await session.close('initialize failed');
    throw error;
  }
  if (response.status !== 200) {
    options.sessions.remove(session.id);
    await session.close('initialize failed');
  } else {
    options.log.info('Agent session opened', { agent: agent.name, route, session: session.id });
  }
  return withReason(response);
}

/**
 * The SDK transport answers malformed requests itself (400, 404, 405, 406, 413, 415) with
 * JSON-RPC errors that carry no `data.reason`, while DESIGN §4 promises a reason in every error
 * body; such a 4xx answer gets `invalid-request`. Only 4xx JSON answers are read and rebuilt, so
 * the hot path (200 with an SSE stream, 202) passes through untouched.
 */
export async function withReason(response: Response): Promise<Response> {
  if (response.status < 400 || response.status >= 500 || !(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const text = await response.text();
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  const init = { status: response.status, statusText: response.statusText, headers };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new Response(text, init);
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error !== 'object' || error === null) return new Response(text, init);
  const data = (error as { data?: unknown }).data;
  const fields = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  if (typeof fields.reason === 'string') return new Response(text, init);
  (error as { data?: unknown }).data = { ...fields, reason: 'invalid-request' };
  return new Response(JSON.stringify(body), init);
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

type PostBody =
  | { kind: 'json'; value: unknown }
  | { kind: 'as-is'; request: Request }
  | { kind: 'too-deep'; id: string | number | null }
  | { kind: 'too-large' };

/** A session's POST body: parsed and depth-checked, or for the SDK to answer as it came. */
async function readPostBody(request: Request): Promise<PostBody> {
  const length = Number(request.headers.get('content-length') ?? Number.NaN);
  if (length > MAX_POST_BYTES) return { kind: 'as-is', request };
  const body = await readBoundedBody(request, MAX_POST_BYTES);
  if (body.kind === 'too-large') return { kind: 'too-large' };
  const read = parseJsonWithinDepth(body.text);
  if (read.kind === 'not-json') return { kind: 'as-is', request: new Request(request.url, { method: 'POST', headers: request.headers, body: body.text }) };
  return read.kind === 'too-deep' ? { kind: 'too-deep', id: read.id } : read;
}
