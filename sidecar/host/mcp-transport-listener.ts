/**
 * McpTransportListener: the sidecar's answer to a channel-open. It accepts `{"type":"mcp"}`
 * requests and offers each to its registered handlers in turn; the first that does not decline
 * (null) hosts the channel. It keeps every hosted connection so shutdown can end them all.
 *
 * Its `onOpen` is what the link endpoint calls; a thrown `WireError` goes back to the worker as
 * channel-open-error with the same reason.
 *
 * @module
 */
import type { ChannelTransport } from '../../shared/channel-transport.ts';
import { isMcpRequestType } from '../../shared/connection-request.ts';
import { WireError } from '../../shared/errors.ts';
import type { ChannelOpenHandler } from '../../shared/link/link-endpoint.ts';
import type { HostedConnection } from './remote-mcp-host-handler.ts';

/** A handler hosts the channel, or declines with null so the next one may. */
export type McpConnectionHandler = (request: unknown, channel: ChannelTransport) => Promise<HostedConnection | null>;

export class McpTransportListener {
  readonly #handlers: McpConnectionHandler[] = [];
  readonly #hosted = new Set<HostedConnection>();

  constructor(handlers: readonly McpConnectionHandler[] = []) {
    this.#handlers.push(...handlers);
  }

  register(handler: McpConnectionHandler): void {
    this.#handlers.push(handler);
  }

  get handlers(): readonly McpConnectionHandler[] {
    return this.#handlers;
  }

  /** Connections hosted right now. */
  get hostedCount(): number {
    return this.#hosted.size;
  }

  /** The link's channel-open handler. */
  readonly onOpen: ChannelOpenHandler = async (request, channel) => {
    if (!isMcpRequestType(request)) {
      const type = (request as { type?: unknown } | null)?.type;
      throw new WireError('invalid-request', `Unsupported channel type ${typeof type === 'string' ? `"${type.slice(0, 32)}"` : String(type)}: this host serves "mcp" channels`);
    }
    for (const handler of this.#handlers) {
      const hosted = await handler(request, channel);
      if (hosted === null) continue;
      this.#hosted.add(hosted);
      void hosted.closed?.then(() => this.#hosted.delete(hosted));
      return;
    }
    const name = (request as { connection?: { 'server-name'?: unknown } }).connection?.['server-name'];
    if (typeof name === 'string') throw new WireError('server-not-found', `No handler on this host serves server "${name.slice(0, 64)}"`);
    throw new WireError('invalid-request', 'No handler on this host accepts this connection request');
  };

  /** Ends every hosted connection (sidecar shutdown). */
  async closeAll(): Promise<void> {
    const all = [...this.#hosted];
    this.#hosted.clear();
    await Promise.all(all.map((hosted) => hosted.dispose().catch(() => {})));
  }
}
