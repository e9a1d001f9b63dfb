/**
 * Bridges an agent's link channel to a server's transport (upstream M3 step d–e): JSON-RPC passes
 * both ways unchanged, requests, responses, notifications and server→client requests alike.
 *
 * What the bridge adds to plain forwarding:
 * - agent→server messages go through the tool-call filter first; a denied `tools/call` is
 *   answered on the agent's channel and never reaches the server;
 * - a request the server side cannot take (its process is gone) is answered with an error, and a
 *   response too large for the link becomes an error response, so a caller is never left waiting;
 * - either side closing closes the other: the agent leaving ends the server process, the server
 *   ending closes the channel with the reason of the last `WireError` its transport reported
 *   (`server-exited` with the exit code, by default);
 * - what it answers itself, in the server's place (a denial, a request the server cannot take),
 *   it marks as the host's own (`shared/audit/host-answers.ts`), so the worker's audit can tell a
 *   denial of this host's from a server's error that says the same; what the server writes passes
 *   unmarked;
 * - nothing it runs on a message throws back into the link: the link delivers channel messages
 *   synchronously from its socket handler, so an exception here would reach the sidecar's event
 *   loop. A filter that throws denies the call (`denied-by-policy`: the check could not pass);
 *   anything else unexpected is logged and the request answered, so one agent's message can end
 *   neither the sidecar nor another agent's session;
 * - the server's output is held back while the link holds too much of the agent's channel
 *   (`shared/link/link-flow.ts`): the server, not the sidecar, then waits;
 * - the order of starting: `start()` starts the server (for stdio, launches it) with every
 *   callback already wired, so nothing it says is lost, and only then the agent's channel; a
 *   server that ends while starting is reported once the start has settled, and none is started
 *   for a channel the agent closed already.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelCloseInfo, ChannelTransport } from '../../shared/channel-transport.ts';
import { jsonRpcErrorBody, WireError, type JsonRpcErrorResponse } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import type { CallLedger } from '../../shared/audit/call-ledger.ts';
import { capped } from '../../shared/audit/audit-record.ts';
import { hostAnswer } from '../../shared/audit/host-answers.ts';
import { isCancellation } from '../../shared/json-rpc-guards.ts';
import { McpChannelClientTransport } from '../../shared/link/mcp-channel-client-transport.ts';

export interface BridgeOptions {
  /** The server's name, for messages and logs. */
  server: string;
  /** Agent→server check; returns the error response to send back instead of forwarding. */
  filter?: (message: JSONRPCMessage) => JsonRpcErrorResponse | null;
  log: Logger;
  /** The channel's audited calls: denials recorded, the rest timed to their answer, trace context passed on. */
  ledger?: CallLedger;
}

export interface Bridge {
  /** Starts the server, then the agent's channel; rejects with what the server's start threw. */
  start(): Promise<void>;
  /** Settles once both sides are closed, with the close info of the side that ended first. */
  readonly closed: Promise<ChannelCloseInfo>;
  /** Closes both sides (the server side first, so its process ends). */
  close(): Promise<void>;
}

export function bridgeChannels(agent: ChannelTransport, server: Transport, options: BridgeOptions): Bridge {
  const { filter, log, ledger } = options;
  let resolveClosed!: (info: ChannelCloseInfo) => void;
  const closed = new Promise<ChannelCloseInfo>((resolve) => (resolveClosed = resolve));

  const answerAgent = (id: string | number | undefined, error: WireError) => {
    if (id === undefined || agent.closed) return;
    agent.send(hostAnswer(jsonRpcErrorBody(id, error)) as JSONRPCMessage).catch(() => {});
  };

  const fromAgent = (message: JSONRPCMessage) => {
    let denied: JsonRpcErrorResponse | null;
    try {
      denied = filter?.(message) ?? null;
    } catch (error) {
      log.warn('Tool-call check failed: denied', { server: options.server, tool: toolName(message), error: errorName(error) });
      denied = jsonRpcErrorBody(requestIdOf(message) ?? null, new WireError('denied-by-policy', 'Request denied by the trust profile: its rules could not be evaluated for this request'));
    }
    if (denied !== null) {
      log.info('Tool call denied by policy', { server: options.server, tool: toolName(message), reason: denied.error.data.reason });
      ledger?.refuse(message, 'denied-by-policy', denied.error.data.reason);
      agent.send(hostAnswer(denied) as JSONRPCMessage).catch(() => {});
      return;
    }
    // A server that honours a cancellation never answers: the call's line ends after a short grace,
    // not with the channel; an answer within it (the server ignored the cancellation) is recorded.
    if (ledger !== undefined && isCancellation(message)) ledger.cancel(message.params.requestId);
    server.send(ledger === undefined ? message : ledger.request(message)).catch((error: unknown) => {
      log.debug('Server did not take a message', { server: options.server, error });
      const failure = error instanceof WireError ? error : new WireError('server-exited', `Server "${options.server}" could not take the request: its connection is closed`);
      const id = requestIdOf(message);
      if (id !== undefined) ledger?.fail(id, failure.reason);
      answerAgent(id, failure);
    });
  };
  agent.onmessage = (message) => {
    try {
      fromAgent(message);
    } catch (error) {
      log.error('Agent message not handled', { server: options.server, error: errorName(error) });
      answerAgent(requestIdOf(message), new WireError('invalid-request', `Server "${options.server}" could not be sent the request: the host failed to handle it, see its log`));
    }
  };

  if (agent instanceof McpChannelClientTransport) agent.throttle(server);
  server.onmessage = (message) => {
    ledger?.answer(message);
    agent.send(message).catch((error: unknown) => {
      // A closed channel is reported by its close; a message the link refused (too large, or one
      // it cannot serialize) leaves it open, so the caller is told why instead of waiting.
      const id = responseIdOf(message);
      if (id === undefined || (error instanceof WireError && error.reason !== 'invalid-request')) return;
      log.warn('Server answer refused by the link', { server: options.server, error: error instanceof WireError ? error.message : errorName(error) });
      answerAgent(id, error instanceof WireError ? error : new WireError('invalid-request', `Server "${options.server}" answered with a message the link cannot carry`));
    });
  };

  let serverFailure: WireError | undefined;
  let agentFailure: WireError | undefined;
  server.onerror = (error) => {
    if (error instanceof WireError) serverFailure = error;
    log.debug('Server transport error', { server: options.server, error });
  };
  agent.onerror = (error) => {
    if (error instanceof WireError) agentFailure = error;
  };

  void closed.then((info) => ledger?.failAll(info.reason ?? 'channel-closed'));
  let first: ChannelCloseInfo | null = null;
  let started = false;
  let endedWhileStarting = false;
  const serverEnded = () => {
    if (first !== null) return; // the agent side ended first and is closing the server
    first = serverFailure !== undefined
      ? { reason: serverFailure.reason, message: serverFailure.message }
      : { reason: 'server-exited', message: `Server "${options.server}" closed its connection` };
    const ending = first;
    void agent.close(ending).finally(() => resolveClosed(ending));
  };
  server.onclose = () => {
    if (started) serverEnded();
    else endedWhileStarting = true;
  };
  agent.onclose = () => {
    if (first !== null) return; // the server side ended first and closed the agent's channel
    const info: ChannelCloseInfo = agentFailure !== undefined ? { reason: agentFailure.reason, message: agentFailure.message } : {};
    first = info;
    void server.close().finally(() => resolveClosed(info));
  };

  return {
    closed,
    async start() {
      // An agent that left while the host opened its channel (its close came before the ack)
      // gets no server: starting the channel announces the close, which closes the unstarted one.
      if (!agent.closed) {
        await server.start();
        started = true;
        if (endedWhileStarting) serverEnded();
      }
      await agent.start();
    },
    async close() {
      await server.close();
      await agent.close();
    },
  };
}

function requestIdOf(message: JSONRPCMessage): string | number | undefined {
  return 'method' in message && 'id' in message ? message.id : undefined;
}

function responseIdOf(message: JSONRPCMessage): string | number | undefined {
  return !('method' in message) && 'id' in message && (typeof message.id === 'string' || typeof message.id === 'number') ? message.id : undefined;
}

/** The error's class only: its message may quote the agent's input. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/** The tool named, cut short: the name is the agent's, and a denied call's line must not be as long as its body. */
function toolName(message: JSONRPCMessage): string | null {
  const params = 'params' in message ? (message.params as { name?: unknown } | undefined) : undefined;
  return typeof params?.name === 'string' ? capped(params.name) : null;
}
