/**
 * Bridges an agent's link channel to a server's channel (upstream M3 step d–e): JSON-RPC passes
 * both ways unchanged, requests, responses, notifications and server→client requests alike.
 *
 * What the bridge adds to plain forwarding:
 * - agent→server messages go through the tool-call filter first; a denied `tools/call` is
 *   answered on the agent's channel and never reaches the server;
 * - a request the server side cannot take (its process is gone) is answered with an error, and a
 *   response too large for the link becomes an error response, so a caller is never left waiting;
 * - either side closing closes the other: the agent leaving ends the server process, the server
 *   exiting closes the channel with `server-exited` and its exit code in the message.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { jsonRpcErrorBody, WireError, type JsonRpcErrorResponse } from '../../shared/errors.ts';
import type { ChannelCloseInfo, MessageChannel } from '../../shared/message-channel.ts';
import type { Logger } from '../log.ts';

export interface BridgeOptions {
  /** The server's name, for messages and logs. */
  server: string;
  /** Agent→server check; returns the error response to send back instead of forwarding. */
  filter?: (message: JSONRPCMessage) => JsonRpcErrorResponse | null;
  log: Logger;
}

export interface Bridge {
  /** Settles once both channels are closed, with the close info of the side that ended first. */
  readonly closed: Promise<ChannelCloseInfo>;
  /** Closes both sides (the server side first, so its process ends). */
  close(): Promise<void>;
}

export function bridgeChannels(agent: MessageChannel, server: MessageChannel, options: BridgeOptions): Bridge {
  const { filter, log } = options;
  let resolveClosed!: (info: ChannelCloseInfo) => void;
  const closed = new Promise<ChannelCloseInfo>((resolve) => (resolveClosed = resolve));

  agent.onmessage = (message) => {
    const denied = filter?.(message) ?? null;
    if (denied !== null) {
      log.info('Tool call denied by policy', { server: options.server, tool: toolName(message) });
      agent.send(denied as JSONRPCMessage).catch(() => {});
      return;
    }
    server.send(message).catch((error: unknown) => {
      log.debug('Server did not take a message', { server: options.server, error });
      const id = requestIdOf(message);
      if (id === undefined) return;
      const failure =
        error instanceof WireError ? error : new WireError('server-exited', `Server "${options.server}" could not take the request: its connection is closed`);
      agent.send(jsonRpcErrorBody(id, failure) as JSONRPCMessage).catch(() => {});
    });
  };

  server.onmessage = (message) => {
    agent.send(message).catch((error: unknown) => {
      // Only a message too large for the link leaves the channel open; tell the caller why.
      const id = responseIdOf(message);
      if (id === undefined || !(error instanceof WireError) || error.reason !== 'invalid-request' || agent.closed) return;
      log.warn('Server answer too large for the link', { server: options.server });
      agent.send(jsonRpcErrorBody(id, error) as JSONRPCMessage).catch(() => {});
    });
  };

  let first: ChannelCloseInfo | null = null;
  server.onclose = (info) => {
    if (first !== null) return; // the agent side ended first and is closing the server
    first = info.reason !== undefined ? info : { reason: 'server-exited', message: `Server "${options.server}" closed its connection` };
    const ending = first;
    void agent.close(ending).finally(() => resolveClosed(ending));
  };
  agent.onclose = (info) => {
    if (first !== null) return; // the server side ended first and closed the agent's channel
    first = info;
    void server.close().finally(() => resolveClosed(info));
  };

  server.start();
  agent.start();
  return {
    closed,
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

function toolName(message: JSONRPCMessage): string | null {
  const params = 'params' in message ? (message.params as { name?: unknown } | undefined) : undefined;
  return typeof params?.name === 'string' ? params.name : null;
}
