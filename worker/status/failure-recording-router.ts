/**
 * Feeds `RecentErrors` from the one place every upstream failure of both agent endpoints passes:
 * the `ChannelRouter` port. Wrapping it (rather than touching each route) records:
 *
 * - every failed open, already turned into its stable reason by `openChannel` (router refusals
 *   such as `host-offline` or `trust-profile-stale`, the open timeout, anything unexpected as
 *   `launch-failed`), through the port's `onOpenFailed` observer;
 * - every channel that later ends *because something failed* (its close info carries a reason:
 *   the server exited, the host's link dropped). Orderly closes (agent DELETE, idle expiry,
 *   shutdown) carry no reason and are not failures.
 *
 * The wrapper adds nothing else: channels pass messages, `start`, `send` and `close` straight
 * through, so routes and the MCP transports cannot tell it is there.
 *
 * @module
 */
import type { McpConnection } from '../../shared/connection-request.ts';
import type { FailureReason, WireError } from '../../shared/errors.ts';
import type { ChannelCloseInfo, MessageChannel } from '../../shared/message-channel.ts';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ChannelRouter } from '../routing/channel-router.ts';
import type { RecentErrors } from './recent-errors.ts';

/** The same router, with its failures recorded in `errors`. */
export function recordRouterFailures(router: ChannelRouter, errors: RecentErrors): ChannelRouter {
  return {
    async open(descriptor, connection, trust) {
      const channel = await router.open(descriptor, connection, trust);
      const server = connection['server-name'];
      return new ObservedChannel(channel, (reason, message) => {
        errors.record({ reason, server, agent: connection.agent ?? null, message: message ?? `Server "${server}" ended the channel: ${reason}` });
      });
    },
    onOpenFailed(connection: McpConnection, error: WireError) {
      errors.record({ reason: error.reason, server: connection['server-name'], agent: connection.agent ?? null, message: error.message });
      router.onOpenFailed?.(connection, error);
    },
  };
}

/** A transparent `MessageChannel` that reports a close carrying a failure reason. */
export class ObservedChannel implements MessageChannel {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: (info: ChannelCloseInfo) => void;
  readonly #inner: MessageChannel;

  constructor(inner: MessageChannel, onFailure: (reason: FailureReason, message: string | undefined) => void) {
    this.#inner = inner;
    // The inner channel queues until `start()`, so wiring it now loses nothing.
    inner.onmessage = (message) => this.onmessage?.(message);
    inner.onclose = (info) => {
      if (info.reason !== undefined) onFailure(info.reason, info.message);
      this.onclose?.(info);
    };
  }

  get closed(): boolean {
    return this.#inner.closed;
  }

  start(): void {
    this.#inner.start();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.#inner.send(message);
  }

  close(info?: ChannelCloseInfo): Promise<void> {
    return this.#inner.close(info);
  }
}
