/**
 * What the agent routes need from the ExecutorTargetRouter: one call that turns a server's bound
 * descriptor into an open channel, an MCP SDK `Transport`. Declared here as a port so the routes
 * depend on the shape, not on how channels are made (edge-direct HTTP, a host's link, the
 * in-process factory of the all-in-one mode, or a test double).
 *
 * The routes never call a router directly: `createChannelOpener` (`channel-opener.ts`) composes
 * it once, in `app.ts`, with the open deadline and the recording of failed opens.
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpConnection } from '../../shared/connection-request.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import type { AgentEntry } from '../config/worker-config.ts';

/** The agent's declared containment need, used only to refuse edge-direct HTTP. */
export interface ChannelTrust {
  containment?: 'required' | 'none';
}

export interface ChannelOpenOptions {
  /** The open's deadline; a router passes it on to whatever waits (the host's link). */
  signal?: AbortSignal;
  /**
   * The channel's first message, to go right behind the open where the medium can (a host's
   * link: `OpenChannelOptions.first`); elsewhere it is ignored, and the caller sends it once the
   * channel is open unless `wasSentAhead` says it went.
   */
  first?: JSONRPCMessage;
}

export interface ChannelRouter {
  /**
   * Opens a channel to the server `connection['server-name']`; rejects with a `WireError`. The
   * transport comes back open but not started: the caller wires its callbacks, then starts it.
   */
  open(descriptor: ConnectionDescriptor, connection: McpConnection, trust: ChannelTrust, options?: ChannelOpenOptions): Promise<Transport>;
}

/** The channel-open request for one agent session and server: references only, never argv. */
export function connectionFor(agent: AgentEntry, server: string, session: string, traceparent?: string): McpConnection {
  const trust = agent['trust-context'];
  return {
    'server-name': server,
    ...(trust !== undefined
      ? { 'trust-profile-ref': trust['trust-profile-ref'], 'trust-profile-revision': trust['trust-profile-revision'] }
      : {}),
    session,
    agent: agent.name,
    ...(traceparent !== undefined ? { traceparent } : {}),
  };
}

/** The trust argument of `open` for an agent. */
export function trustFor(agent: AgentEntry): ChannelTrust {
  const containment = agent['trust-context']?.containment;
  return containment === undefined ? {} : { containment };
}
