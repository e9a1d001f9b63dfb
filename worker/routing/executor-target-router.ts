/**
 * ExecutorTargetRouter: turns a server's bound connection descriptor into a channel (an MCP SDK
 * `Transport`, returned open and not yet started). It
 * is the production consumer of the descriptor (upstream G8): the descriptor goes straight in,
 * with no intermediate schema.
 *
 * - `user-computer-profile` / `reverse-http`: the outer part names the host, the inner `target`
 *   is what runs there. The router opens a channel on that host's link with an
 *   McpConnectionRequest carrying references only (server name, trust profile ref + revision),
 *   under the caller's deadline.
 * - `http` (edge-direct): proxied from the worker with its own Streamable HTTP client
 *   (`shared/legacy-http-client-transport.ts`, as an `HttpUpstreamTransport`, so a raw
 *   pass-through works on it too); a modern agent's request
 *   gets a channel of its own that learns the server's era per request (`EdgeDirectModernChannel`). When the
 *   agent's trust context requires containment this is refused with `unsupported-policy` before
 *   any request leaves the worker: there is no process to sandbox.
 * - `local`: only the all-in-one mode has a local host; it injects `localHost`.
 *
 * Nesting deeper than host → target (a host descriptor inside a target) is refused for now.
 *
 * @module
 */
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { InnerTarget, McpConnection, McpConnectionRequest } from '../../shared/connection-request.ts';
import { innerTargetOf, type ConnectionDescriptor, type HttpDescriptor } from '../../shared/descriptors.ts';
import { WireError } from '../../shared/errors.ts';
import { DualEraHttpTransport } from '../../shared/era-bridge/dual-era-http-transport.ts';
import { LegacyAgentTransport } from '../../shared/era-bridge/legacy-agent-transport.ts';
import { ServerEraCache } from '../../shared/era-bridge/discover-verdict.ts';
import { silentLogger, type Logger } from '../../shared/log.ts';
import type { ModernHttpTarget } from '../../shared/modern-http-transport.ts';
import { EdgeDirectModernChannel } from '../modern/edge-direct-channel.ts';
import type { ChannelOpenOptions, ChannelRouter, ChannelTrust } from './channel-router.ts';
import type { HostLinkRegistry } from '../link/host-link-registry.ts';
import { ConnectionRequestMemo } from '../../shared/connection-request-memo.ts';

export interface ExecutorTargetRouterOptions {
  registry: HostLinkRegistry;
  /** The all-in-one mode's in-process host, for servers bound to `{"type":"local"}`. */
  localHost?: (request: McpConnectionRequest, options: ChannelOpenOptions) => Promise<Transport>;
  /** Fetch for edge-direct HTTP servers; the runtime's global `fetch` by default. */
  fetch?: FetchLike;
  /** Where a legacy session's bridge to a modern edge-direct server logs (`LegacyAgentTransport`). */
  log?: Logger;
}

/**
 * The eras edge-direct servers were found in, for every router of this isolate: on Workers each
 * legacy session's object builds a router of its own, and a verdict kept per router was learnt
 * anew by every session, at the cost of a refused `initialize` each. Keyed by name and where the
 * server is, so two configs naming one server share what is true of it either way.
 */
const ISOLATE_ERAS = new ServerEraCache();

export class ExecutorTargetRouter implements ChannelRouter {
  readonly #options: ExecutorTargetRouterOptions;
  /** The check of the channel-open requests this worker sends, memoized (`connection-request-memo.ts`). */
  readonly #requests = new ConnectionRequestMemo();

  constructor(options: ExecutorTargetRouterOptions) {
    this.#options = options;
  }

  /** Opens a channel to `connection['server-name']` as bound by `descriptor`. Rejects with a `WireError`. */
  async open(descriptor: ConnectionDescriptor, connection: McpConnection, trust: ChannelTrust = {}, options: ChannelOpenOptions = {}): Promise<Transport> {
    const name = connection['server-name'];
    switch (descriptor.type) {
      case 'user-computer-profile':
      case 'reverse-http': {
        const target = hostTarget(innerTargetOf(descriptor), name);
        const { target: _ignored, ...rest } = connection;
        const request = this.#requests.parse({ type: 'mcp', connection: target.type === 'local' ? rest : { ...rest, target } });
        return this.#options.registry.openChannel(descriptor['entity-id'], request, options);
      }
      case 'http':
        if (trust.containment === 'required') {
          throw new WireError(
            'unsupported-policy',
            `Server "${name}" is an edge-direct HTTP server, but the agent's trust profile requires containment: no process exists to sandbox; bind the server to a host instead`,
            { detail: { server: name } },
          );
        }
        return connection.era === 'modern' ? this.#openModernHttp(descriptor) : this.#openLegacyHttp(descriptor, name);
      case 'local': {
        const localHost = this.#options.localHost;
        if (localHost === undefined) {
          throw new WireError(
            'host-offline',
            `Server "${name}" is bound to {"type":"local"}, but this worker has no local host: bind it to a host with user-computer-profile, or run the all-in-one mode`,
            { detail: { server: name } },
          );
        }
        const { target: _ignored, ...rest } = connection;
        return localHost(this.#requests.parse({ type: 'mcp', connection: rest }), options);
      }
    }
  }

  /** A modern request's channel: the request as it is, or a legacy session of its own (`modern/edge-direct-channel.ts`). */
  #openModernHttp(descriptor: HttpDescriptor): Transport {
    return new EdgeDirectModernChannel(this.#httpTarget(descriptor));
  }

  /**
   * A legacy session's channel: the session passed through to a legacy server, or, when the
   * server refuses its `initialize` as a modern-only one does (or is known modern), bridged onto
   * it as a host bridges its own servers (`shared/era-bridge/legacy-agent-transport.ts`).
   */
  #openLegacyHttp(descriptor: HttpDescriptor, name: string): Transport {
    // Where the server is, not how it is reached: no header value or query (a key) is held as a key.
    const url = new URL(descriptor.url);
    const eraKey = `${name}#${url.origin}${url.pathname}`;
    return new LegacyAgentTransport(new DualEraHttpTransport(this.#httpTarget(descriptor)), { server: name, eraKey, eras: ISOLATE_ERAS, log: this.#options.log ?? silentLogger });
  }

  #httpTarget(descriptor: HttpDescriptor): ModernHttpTarget {
    return { url: new URL(descriptor.url), ...(descriptor.headers ? { headers: descriptor.headers } : {}), ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}) };
  }
}

/** The inner target sent to a host; a host descriptor nested inside a target is not supported yet. */
function hostTarget(target: ConnectionDescriptor, name: string): InnerTarget {
  if (target.type === 'local') return { type: 'local' };
  if (target.type === 'http') return { type: 'http', url: target.url, ...(target.headers ? { headers: target.headers } : {}) };
  throw new WireError(
    'invalid-request',
    `Server "${name}" nests a "${target.type}" descriptor inside a host's target: hops through a second host are not supported yet; bind the server to the last host directly`,
    { detail: { server: name } },
  );
}
