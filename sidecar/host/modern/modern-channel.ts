/**
 * Serves one modern channel: the worker opens it per modern request and sends exactly that one
 * JSON-RPC request on it (issue 14 contract). The host answers it from the agent's legacy
 * instance: notifications for that request, then one response with the request's own id, then
 * the channel closes. The worker closing the channel first (the agent's HTTP request went away)
 * cancels the call upstream; the instance stays for the agent's next request.
 *
 * What the host does between the two:
 * - the tool-call check of the trust profile runs first, as on a legacy channel;
 * - `server/discover` is answered from the instance's `initialize` result;
 * - `subscriptions/listen` keeps the channel open as the agent's listen stream (`listen-stream.ts`)
 *   until the agent closes it or the instance ends;
 * - the modern `_meta` keys are stripped before forwarding (`progressToken` stays), and the
 *   `Mcp-Param-*` headers the worker put there are checked against the tool's `x-mcp-header`
 *   arguments (`tool-schemas.ts`, -32020 on a mismatch) and never forwarded;
 * - results and errors are made modern on the way back (`modern-results.ts`);
 * - on a legacy instance, tools/call, prompts/get and resources/read go through `input-rounds.ts`:
 *   a question the server asks becomes an `InputRequiredResult`, and a retry resumes the call its
 *   `requestState` names. Closing the channel after that answer does not cancel the call.
 *
 * The instance's output is held back while the link holds too much of this channel's frames
 * (`shared/link/link-flow.ts`), until they are written out even after the channel closed.
 *
 * Nothing here throws into the link: every failure becomes the request's error response.
 * The errors this file writes itself (a denial, a check that failed, a failure to serve) are
 * marked as the host's own (`shared/audit/host-answers.ts`); what comes from the server, made
 * modern or not, and what the layers below answer, are not.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelTransport } from '../../../shared/channel-transport.ts';
import { jsonRpcErrorBody, WireError, type JsonRpcErrorResponse } from '../../../shared/errors.ts';
import { ValidationError } from '../../../shared/validation.ts';
import type { Logger } from '../../log.ts';
import type { CallLedger } from '../../../shared/audit/call-ledger.ts';
import { hostAnswer } from '../../../shared/audit/host-answers.ts';
import { INPUT_CAPABLE_METHODS } from '../../../shared/era-bridge/input-requests.ts';
import { serveRound } from './input-rounds.ts';
import type { Call } from './legacy-instance.ts';
import type { InstanceKey } from './legacy-instance-pool.ts';
import { clientInfoOf, discoverResult, FORWARDED_METHODS, modernError, modernMetaOf, modernResult, stripModernMeta, type Implementation } from './modern-results.ts';
import { isModernServer, type ServerInstance } from './server-instance.ts';
import { listenOnLegacy, listenOnModern } from './listen-stream.ts';
import { openServerState, sealServerState } from './modern-server-state.ts';
import { takeParamHeaders } from './param-headers.ts';
import { toolCallHeaderError } from './tool-schemas.ts';
import type { ParamHeaders } from '../../../shared/param-headers-meta.ts';
import { McpChannelClientTransport } from '../../../shared/link/mcp-channel-client-transport.ts';

type Id = string | number;

/** A served modern channel, as the handler hands it to the listener (a `HostedConnection`). */
export interface ModernChannel {
  dispose(): Promise<void>;
  /** Settles when the channel has closed: answered, or closed by the worker. */
  readonly closed: Promise<void>;
}

export interface ModernChannelOptions {
  server: string;
  log: Logger;
  /** The agent's instance; `clientInfo` gives the request's own, for an instance not yet started. */
  instance: (clientInfo: () => Implementation | null) => Promise<ServerInstance>;
  /** What the instance is kept for: a `requestState` is bound to it. */
  key?: InstanceKey;
  /** The trust profile's tool-call check; returns the error to answer instead of forwarding. */
  filter?: (message: JSONRPCMessage) => JsonRpcErrorResponse | null;
  /** The request's audit: a denial recorded, the call timed to its answer, trace context passed on. */
  ledger?: CallLedger;
}

const METHOD_NOT_FOUND = -32601;

export function serveModernChannel(channel: ChannelTransport, options: ModernChannelOptions): ModernChannel {
  const { log, server } = options;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  let call: Call | null = null;
  let abandon: (() => void) | null = null;
  let answered = false;
  let seen = false;

  // The answer and the close, in one frame where the worker reads that (`open-reply`).
  const reply = (message: Record<string, unknown>) => {
    answered = true;
    options.ledger?.answer(message);
    channel.reply(message as JSONRPCMessage).catch((error: unknown) => log.debug('Modern answer not delivered', { error }));
  };
  const fail = (id: Id, error: unknown) => {
    const wire = error instanceof WireError ? error : error instanceof ValidationError ? error.toWireError() : null;
    if (wire === null) log.warn('Modern request failed on the host', { error });
    reply(hostAnswer(jsonRpcErrorBody(id, wire ?? new WireError('launch-failed', `Server "${server}" could not serve the request: see the sidecar log`, { detail: { server } }))) as unknown as Record<string, unknown>);
  };

  const serve = async (id: Id, method: string, params: unknown, paramHeaders: ParamHeaders) => {
    const meta = modernMetaOf(params);
    // After every await below the agent may have left: `onclose` then found no call to cancel, so
    // nothing may start for it now (the Mcp-Param check's own tools/list is such an await).
    const instance = await options.instance(() => clientInfoOf(params));
    if (channel.closed) return;
    // Its output for this request is held back while the link holds too much of this channel.
    if (channel instanceof McpChannelClientTransport) channel.throttle(instance);
    if (method === 'tools/call') {
      const mismatch = await toolCallHeaderError(instance, params, paramHeaders, log);
      if (channel.closed) return;
      if (mismatch !== null) return reply(hostAnswer({ jsonrpc: '2.0', id, error: mismatch }));
    }
    if (method === 'server/discover' && !isModernServer(instance)) {
      reply({ jsonrpc: '2.0', id, result: discoverResult(instance.initializeResult) });
      return;
    }
    if (method === 'subscriptions/listen') {
      const out = {
        notify: (notification: { method: string; params?: Record<string, unknown> }) => {
          if (!answered) channel.send({ jsonrpc: '2.0', ...notification } as JSONRPCMessage).catch(() => {});
        },
        reply: (answer: Record<string, unknown>) => {
          if (!answered) reply({ jsonrpc: '2.0', id, ...answer });
        },
        drop: () => {
          if (answered) return;
          answered = true;
          options.ledger?.failAll('server-exited');
          void channel.close();
        },
      };
      const end = isModernServer(instance) ? listenOnModern(id, params as Record<string, unknown> | undefined, instance, out) : await listenOnLegacy(id, params, instance, out);
      abandon = end;
      if (channel.closed) end();
      return;
    }
    if (INPUT_CAPABLE_METHODS.has(method) && !isModernServer(instance) && options.key !== undefined) {
      const answer = await serveRound({
        method,
        params,
        clientCapabilities: meta.clientCapabilities,
        instance,
        key: options.key,
        attachment: {
          logLevel: meta.logLevel,
          progressToken: meta.progressToken,
          notify: (notification) => {
            if (!answered) channel.send({ jsonrpc: '2.0', ...notification } as JSONRPCMessage).catch(() => {});
          },
        },
        onAbandon: (cancel) => {
          abandon = cancel;
          if (channel.closed) cancel();
        },
      });
      reply({ jsonrpc: '2.0', id, ...answer });
      return;
    }
    // A modern server's own requestState travels sealed by the host (`modern-server-state.ts`).
    const sealing = isModernServer(instance) && INPUT_CAPABLE_METHODS.has(method) ? options.key : undefined;
    if (sealing !== undefined) {
      const opened = await openServerState(method, params, sealing);
      if (channel.closed) return;
      if ('error' in opened) return reply(hostAnswer({ jsonrpc: '2.0', id, error: opened.error }));
      params = opened.params;
    }
    const forwarded = isModernServer(instance) ? (params as Record<string, unknown> | undefined) : stripModernMeta(params); // a modern server gets its _meta
    call = instance.call({ method, ...(forwarded !== undefined ? { params: forwarded } : {}) }, {
      logLevel: meta.logLevel,
      notify: (notification) => {
        if (!answered) channel.send({ jsonrpc: '2.0', ...notification } as JSONRPCMessage).catch(() => {});
      },
    });
    let outcome = await call.outcome;
    if (sealing !== undefined && 'result' in outcome) outcome = await sealServerState(method, params, outcome.result, sealing);
    if ('result' in outcome) reply({ jsonrpc: '2.0', id, result: modernResult(method, outcome.result, instance.serverInfo) });
    else reply({ jsonrpc: '2.0', id, error: modernError(method, forwarded, outcome.error, isModernServer(instance) ? 'either' : 'legacy') });
  };

  channel.onmessage = (message) => {
    if (seen) return log.debug('Second message on a modern channel ignored');
    seen = true;
    // The request came right behind the open and the worker closed the channel before this host
    // accepted it (the agent went away): it is queued, and withdrawn, so nothing serves it.
    if (channel.closed) return log.debug('A modern request was withdrawn before its channel opened');
    if (!('method' in message) || !('id' in message)) {
      log.debug('A modern channel carried no request: closed');
      void channel.close();
      return;
    }
    const { id, method } = message;
    try {
      const denied = options.filter?.(message) ?? null;
      if (denied !== null) {
        log.info('Tool call denied by policy', { server, reason: denied.error.data.reason });
        options.ledger?.refuse(message, 'denied-by-policy', denied.error.data.reason);
        reply(hostAnswer(denied) as unknown as Record<string, unknown>);
        return;
      }
    } catch {
      reply(hostAnswer(jsonRpcErrorBody(id, new WireError('denied-by-policy', 'Request denied by the trust profile: its rules could not be evaluated for this request'))) as unknown as Record<string, unknown>);
      return;
    }
    if (method !== 'server/discover' && method !== 'subscriptions/listen' && !FORWARDED_METHODS.has(method)) {
      // The worker's method set normally stops these; a worker and host of different versions do not.
      reply(hostAnswer({ jsonrpc: '2.0', id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method.slice(0, 64)}`, data: { reason: 'invalid-request' } } }));
      return;
    }
    // The worker's Mcp-Param-* headers leave _meta before anything else sees the request.
    const { params: untagged, headers } = takeParamHeaders(message.params);
    const request = { ...message, ...(untagged !== undefined ? { params: untagged } : {}) };
    const traced = options.ledger?.request(request) ?? request;
    serve(id, method, (traced as { params?: unknown }).params, headers).catch((error: unknown) => fail(id, error));
  };
  channel.onclose = () => {
    if (!answered) options.ledger?.failAll('agent-left');
    if (!answered && call !== null) call.cancel('The agent closed its request');
    if (!answered) abandon?.();
    resolveClosed();
  };
  void channel.start();

  return {
    closed,
    async dispose() {
      await channel.close();
      await closed;
    },
  };
}
