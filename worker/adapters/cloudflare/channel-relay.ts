/**
 * The relay between an isolate that serves an agent and the Durable Object that holds the host's
 * link. The agent's side (the stateless edge for a modern request, an `AgentSession` object for a
 * legacy session) cannot touch the link socket, which lives in the host's object; so it dials the
 * object (`GET /channel`, a WebSocket between the two) and opens its channel over that socket with
 * the link's own frames and endpoint: the relay is a one-channel link. The object opens the same
 * request on the host's link and bridges the two channels message for message, closing each with
 * the other's reason, so `host-offline`, `server-exited` and the rest reach the agent unchanged.
 *
 * One relay socket carries one channel and ends with it: an I/O object of a Workers request
 * cannot serve another request, and the relay's liveness timer must not outlive the channel.
 * While a relay is open the host's object cannot hibernate, which is right: the bridge is state
 * in memory.
 *
 * @module
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelCloseInfo, ChannelTransport } from '../../../shared/channel-transport.ts';
import { type FailureReason, httpStatusFor, jsonRpcErrorBody, WireError } from '../../../shared/errors.ts';
import { LinkEndpoint, type LinkLogger } from '../../../shared/link/link-endpoint.ts';
import type { LinkFeature } from '../../../shared/link/link-features.ts';
import type { HostLinkRegistry } from '../../link/host-link-registry.ts';
import type { OpenOutcomes } from '../../status/open-outcomes.ts';
import type { RecentErrors } from '../../status/recent-errors.ts';
import * as z from '../../../shared/zod.ts';
import { acceptedFrameSocket } from './websocket-frame-socket.ts';
import { newWebSocketPair, upgradeResponse } from './workers-runtime.ts';

/** A relay's own open and close are routine, one pair per channel: logged at debug, warnings kept. */
export function relayLog(log: LinkLogger & { debug(msg: string, fields?: Record<string, unknown>): void }): LinkLogger {
  return { info: (msg, fields) => log.debug(msg, fields), warn: (msg, fields) => log.warn(msg, fields) };
}

/**
 * What an agent's isolate asks of the relay, the same code as itself: the host's own answers
 * marked (`host-answers`), so its audit tells a host's denial from a server's. The host's object
 * passes each message on as the host's link handed it over, mark included, and that link has it
 * only from a host that announced the feature.
 */
export const RELAY_FEATURES: ReadonlySet<LinkFeature> = new Set(['host-answers']);

/** The host object's path for relays; objects are reachable through their bindings only. */
export const RELAY_PATH = '/channel';

export interface RelayHost {
  registry: HostLinkRegistry;
  entityId: string;
  /** False when the host has no live link now: the relay is refused before any socket exists. */
  linked(): boolean;
  /** The relay endpoint's log (see `relayLog`). */
  log?: LinkLogger;
  /** Where each open's outcome is kept, for the status the edge reads (`open-outcomes.ts`). */
  outcomes?: OpenOutcomes;
  /** Where each failure is kept, for the same status (`recent-errors.ts`). */
  recentErrors?: RecentErrors;
}

/** The names of a relayed channel open that its outcome is kept under. */
const OpenNamed = z.looseObject({ connection: z.looseObject({ 'server-name': z.string().check(z.minLength(1), z.maxLength(256)), agent: z.optional(z.string().check(z.maxLength(256))) }) });

/** Host object side: answers `GET /channel` with a relay socket, or `host-offline` at once. */
export function serveRelay(request: Request, host: RelayHost): Response {
  if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
    return Response.json(new WireError('invalid-request', 'The relay takes a WebSocket upgrade').toHttpBody(), { status: 426 });
  }
  if (!host.linked()) {
    const offline = new WireError('host-offline', `Host "${host.entityId}" is offline: its sidecar has no live link to this worker`, { detail: { 'entity-id': host.entityId } });
    return Response.json(offline.toHttpBody(), { status: httpStatusFor(offline.reason) });
  }
  const { client, server } = newWebSocketPair();
  const relay: LinkEndpoint = new LinkEndpoint(acceptedFrameSocket(server), {
    role: 'sidecar',
    peer: `relay:${host.entityId}`,
    ...(host.log !== undefined ? { log: host.log } : {}),
    onOpen: async (connection, relayed) => {
      // Whose open of what, for its outcome only: the host checks the whole request.
      const named = OpenNamed.safeParse(connection);
      let channel: ChannelTransport;
      try {
        channel = await host.registry.openChannel(host.entityId, connection);
      } catch (error) {
        if (error instanceof WireError && named.success) failed(host, named.data.connection, error.reason, error.message);
        throw error;
      }
      if (named.success) host.outcomes?.opened(named.data.connection.agent, named.data.connection['server-name']);
      // The agent's side gave up while the host was opening: nothing to bridge.
      if (relayed.closed || relay.closed) {
        await channel.close();
        return;
      }
      // A server that failed after its open (it exited) is failing too, as in a session on every runtime.
      bridgeChannels(relayed, channel, () => relay.close({ message: 'Channel closed' }), (failure) => {
        if (named.success && failure.reason !== undefined) failed(host, named.data.connection, failure.reason, failure.message ?? failure.reason);
      });
    },
  });
  return upgradeResponse(client);
}

/** A relayed open that failed, or its channel after it: kept as a session's own failure is on every runtime. */
function failed(host: RelayHost, connection: { 'server-name': string; agent?: string | undefined }, reason: FailureReason, message: string): void {
  host.outcomes?.failed(connection.agent, connection['server-name'], reason, message);
  host.recentErrors?.record({ reason, server: connection['server-name'], agent: connection.agent ?? null, message });
}

/**
 * Joins two channels, neither started yet: each message goes to the other side, and when one
 * ends the other is closed with its reason; then `ended` runs once. A request the other side
 * refuses (the host's link, while that session's or that agent's messages wait past their budget:
 * `limit-reached`) is answered with the refusal on the side it came from: the agent is told,
 * rather than wait for an answer that never comes. `bFailed` is told why `b` ended, where it
 * failed with a reason (its server exited).
 */
export function bridgeChannels(a: ChannelTransport, b: ChannelTransport, ended: () => void, bFailed?: (failure: ChannelCloseInfo) => void): void {
  let done = false;
  const join = (from: ChannelTransport, to: ChannelTransport) => {
    let failure: ChannelCloseInfo = {};
    from.onmessage = (message) =>
      void to.send(message).catch((error: unknown) => {
        if (!(error instanceof WireError) || !('method' in message) || !('id' in message)) return;
        void from.send(jsonRpcErrorBody(message.id, error) as JSONRPCMessage).catch(() => {});
      });
    from.onerror = (error) => {
      if (error instanceof WireError) failure = { reason: error.reason, message: error.message };
    };
    from.onclose = () => {
      if (from === b && failure.reason !== undefined) bFailed?.(failure);
      void to.close(failure).finally(() => {
        if (done) return;
        done = true;
        ended();
      });
    };
  };
  join(a, b);
  join(b, a);
  void a.start();
  void b.start();
}
