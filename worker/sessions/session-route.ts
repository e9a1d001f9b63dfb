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
 * @module
 */
import type { Context } from 'hono';
import type { InitializeRequest, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest, isJSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { httpStatusFor, jsonRpcErrorBody, WireError } from '../../shared/errors.ts';
import type { AgentEntry } from '../config/worker-config.ts';
import type { WorkerLogger } from '../log.ts';
import { readBoundedBody } from './bounded-body.ts';
import type { AgentSession, SessionTable } from './session-table.ts';

/** Largest initialize body read before the transport takes over; initialize requests are small. */
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
    return withReason(await session.handle(c.req.raw));
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

  let session: AgentSession;
  try {
    session = await create({ agent, sessionId: crypto.randomUUID(), initialize });
  } catch (error) {
    if (!(error instanceof WireError)) throw error;
    options.log.info('Agent session refused', { agent: agent.name, route, reason: error.reason });
    return jsonRpcErrorResponse(c, initialize.id, error);
  }
  options.sessions.add(session);
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

/** The initialize body as JSON, read within its cap; a `WireError` when too large or not JSON. */
async function readJson(request: Request): Promise<unknown> {
  const body = await readBoundedBody(request, MAX_INITIALIZE_BYTES);
  if (body.kind === 'too-large') return new WireError('invalid-request', `Request body too large: more than ${body.maxBytes} bytes`);
  try {
    return JSON.parse(body.text);
  } catch {
    return new WireError('invalid-request', 'Parse error: Invalid JSON');
  }
}
