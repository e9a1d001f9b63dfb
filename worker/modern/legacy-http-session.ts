/**
 * One modern request served by a legacy edge-direct HTTP server, on a legacy session of its own:
 * `initialize` (with the request's clientInfo, declaring no client capabilities), the request,
 * then the session's DELETE. The worker keeps no session between requests (DESIGN §8): any worker
 * instance can serve the next one, and nothing is cached that another would need.
 *
 * - The request goes with the modern `_meta` keys stripped (`progressToken` stays) and its answer
 *   comes back modern (`shared/modern-results.ts`): `resultType`, caching hints, serverInfo,
 *   -32002 as -32602. `server/discover` is answered from the `initialize` result.
 * - Progress reaches the request's stream; log lines only when the request named a `logLevel`
 *   (sent upstream as `logging/setLevel` when the server announces logging), at or above it.
 * - The server learns at `initialize` that this client can answer nothing, so an SDK server's
 *   elicitation and sampling refuse themselves (the agent sees the tool's error); a server
 *   request sent anyway is answered -32601. Bridging questions needs state kept between requests:
 *   a host keeps it (bind the server to one, as a host's HTTP target).
 * - `subscriptions/listen` is acknowledged with nothing honoured and kept open: change
 *   notifications need a session held open, which the worker does not keep. Poll the lists.
 * - The agent leaving (the channel closed) cancels the call upstream and ends the session.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { WireError } from '../../shared/errors.ts';
import { httpUpstream } from '../../shared/http-upstream-transport.ts';
import type { ModernHttpTarget } from '../../shared/modern-http-transport.ts';
import {
  clientInfoOf, discoverResult, initializeResultSchema, logLevelPasses, modernError, modernMetaOf, modernResult, stripModernMeta, type InitializeResult, type JsonRpcErrorShape,
} from '../../shared/modern-results.ts';
import { PARAM_HEADERS_META_KEY } from '../../shared/param-headers-meta.ts';
import { fetchErrorText } from '../../shared/fetch-error-text.ts';

/** The legacy revision the session opens with (the SDK answers with the one it speaks). */
const LEGACY_VERSION = '2025-11-25';
const EDGE_CLIENT_INFO = { name: 'switchyard-worker', version: '0.1.0' };
const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';
const METHOD_NOT_FOUND = -32601;

type Id = string | number;
type Request = { jsonrpc: '2.0'; id: Id; method: string; params?: Record<string, unknown> };
type Answer = { result: unknown } | { error: JsonRpcErrorShape };

/** How long a close waits for the cancel's POST before it ends the session anyway. */
const CANCEL_SEND_MS = 1_000;

export interface LegacySession {
  /** Cancels the call in flight and ends the session (bounded DELETE). */
  close(): Promise<void>;
}

/** Serves `request` on a session of its own; every message for the agent goes to `emit`, the response last. */
export function serveOnLegacySession(target: ModernHttpTarget, request: Request, emit: (message: JSONRPCMessage) => void): LegacySession {
  const meta = modernMetaOf(request.params);
  if (request.method === 'subscriptions/listen') {
    emit({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: {}, _meta: { [SUBSCRIPTION_ID_KEY]: request.id } } });
    return { close: async () => {} };
  }
  // One request: nothing outside it is forwarded, so no GET stream (on Workers, a subrequest saved).
  const transport = httpUpstream(target, { standaloneStream: false });
  const pending = new Map<Id, (answer: Answer) => void>();
  let answered = false;
  let closed = false;
  const initId = `switchyard-initialize-${crypto.randomUUID()}`;
  const ask = (id: Id, method: string, params: Record<string, unknown> | undefined) =>
    new Promise<Answer>((resolve) => {
      pending.set(id, resolve);
      transport.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) }).catch((error: unknown) => {
        pending.delete(id);
        resolve({ error: failure(error, method).toJsonRpcError() });
      });
    });
  const respond = (answer: Answer) => {
    if (answered || closed) return;
    answered = true;
    emit({ jsonrpc: '2.0', id: request.id, ...answer } as JSONRPCMessage);
  };

  transport.onmessage = (message) => {
    const { id, method } = message as { id?: Id; method?: string };
    if (method === undefined && id !== undefined) {
      const resolve = pending.get(id);
      pending.delete(id);
      resolve?.(message as unknown as Answer);
    } else if (method !== undefined && id !== undefined) {
      void transport.send({ jsonrpc: '2.0', id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method} cannot be answered on an edge-direct server; bind the server to a host to bridge it` } }).catch(() => {});
    } else if (method === 'notifications/progress' && id === undefined) {
      if (!answered) emit(message);
    } else if (method === 'notifications/message') {
      const level = (message as { params?: { level?: unknown } }).params?.level;
      if (!answered && meta.logLevel !== null && logLevelPasses(level, meta.logLevel)) emit(message);
    }
  };
  transport.onclose = () => {
    for (const resolve of pending.values()) resolve({ error: new WireError('server-exited', `The HTTP server's session ended before it answered ${request.method}`).toJsonRpcError() });
    pending.clear();
  };

  const run = async () => {
    await transport.start();
    const init = await ask(initId, 'initialize', { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: clientInfoOf(request.params) ?? EDGE_CLIENT_INFO });
    const initialized = 'result' in init ? initializeResultSchema().safeParse(init.result) : null;
    if (initialized === null || !initialized.success) {
      respond({ error: new WireError('launch-failed', `The HTTP server did not accept initialize${'error' in init ? `: ${String(init.error.message).slice(0, 200)}` : ''}`).toJsonRpcError() });
      return;
    }
    const info: InitializeResult = initialized.data;
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (request.method === 'server/discover') return respond({ result: discoverResult(info) });
    if (meta.logLevel !== null && info.capabilities.logging !== undefined) await ask(`switchyard-log-${crypto.randomUUID()}`, 'logging/setLevel', { level: meta.logLevel });
    const answer = await ask(request.id, request.method, forwardedParams(request.params));
    respond('result' in answer ? { result: modernResult(request.method, answer.result, info.serverInfo) } : { error: modernError(request.method, request.params, answer.error, 'legacy') });
  };
  const done = run().catch((error: unknown) => respond({ error: failure(error, request.method).toJsonRpcError() }));

  return {
    close: async () => {
      if (closed) return;
      const cancel = !answered && pending.has(request.id);
      closed = true;
      if (cancel) {
        // Waited for briefly: a server that never answers the cancel's POST must not keep the
        // close (and with it the request's stream, its fetches and the DELETE) waiting for ever.
        const sent = transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: request.id, reason: 'The agent closed its request' } }).catch(() => {});
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([sent, new Promise<void>((resolve) => (timer = setTimeout(resolve, CANCEL_SEND_MS)))]);
        clearTimeout(timer);
      }
      await transport.close();
      await done;
    },
  };
}

/** The params a legacy server gets: no modern `_meta` keys, no Switchyard ones. */
function forwardedParams(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const stripped = stripModernMeta(params);
  const meta = stripped?._meta;
  if (stripped === undefined || meta === undefined || !Object.hasOwn(meta, PARAM_HEADERS_META_KEY)) return stripped;
  const { [PARAM_HEADERS_META_KEY]: _taken, ...kept } = meta;
  const { _meta: _dropped, ...rest } = stripped;
  return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}

function failure(error: unknown, method: string): WireError {
  if (error instanceof WireError) return error;
  return new WireError('server-exited', `Could not send ${method} to the HTTP server: ${fetchErrorText(error)}`);
}
