/**
 * What the agent routes need from the ExecutorTargetRouter: one call that turns a server's bound
 * descriptor into an open message channel. Declared here as a port so the routes depend on the
 * shape, not on how channels are made (edge-direct HTTP, a host's link, the in-process factory of
 * the all-in-one mode, or a test double).
 *
 * @module
 */
import { WireError } from '../../shared/errors.ts';
import type { McpConnection } from '../../shared/connection-request.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import type { MessageChannel } from '../../shared/message-channel.ts';
import type { AgentEntry } from '../config/worker-config.ts';

/** The agent's declared containment need, used only to refuse edge-direct HTTP. */
export interface ChannelTrust {
  containment?: 'required' | 'none';
}

export interface ChannelRouter {
  /** Opens a channel to the server `connection['server-name']`; rejects with a `WireError`. */
  open(descriptor: ConnectionDescriptor, connection: McpConnection, trust: ChannelTrust): Promise<MessageChannel>;
  /**
   * Optional observer, told by `openChannel` of every failed open with its final reason (timeouts
   * included), so the status page's recent errors see what the agent was answered.
   */
  onOpenFailed?(connection: McpConnection, error: WireError): void;
}

/** The channel-open request for one agent session and server: references only, never argv. */
export function connectionFor(agent: AgentEntry, server: string, session: string): McpConnection {
  const trust = agent['trust-context'];
  return {
    'server-name': server,
    ...(trust !== undefined
      ? { 'trust-profile-ref': trust['trust-profile-ref'], 'trust-profile-revision': trust['trust-profile-revision'] }
      : {}),
    session,
    agent: agent.name,
  };
}

/** The trust argument of `open` for an agent. */
export function trustFor(agent: AgentEntry): ChannelTrust {
  const containment = agent['trust-context']?.containment;
  return containment === undefined ? {} : { containment };
}

/**
 * `router.open` bounded by `timeoutMs`: a slow open becomes `request-timeout` (and the channel,
 * if it arrives later, is closed at once); anything thrown that is not a `WireError` becomes
 * `launch-failed`, so callers always get a stable reason.
 */
export async function openChannel(
  router: ChannelRouter,
  descriptor: ConnectionDescriptor,
  connection: McpConnection,
  trust: ChannelTrust,
  timeoutMs: number,
): Promise<MessageChannel> {
  const server = connection['server-name'];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const opening = router.open(descriptor, connection, trust);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new WireError('request-timeout', `Opening server "${server}" took longer than ${Math.round(timeoutMs / 1000)} s: check its host and try again`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([opening, timeout]);
  } catch (error) {
    if (timedOut) void opening.then((channel) => channel.close(), () => {});
    const failure = error instanceof WireError ? error : new WireError('launch-failed', `Could not open server "${server}": ${errorText(error)}`, { cause: error });
    router.onOpenFailed?.(connection, failure);
    throw failure;
  } finally {
    clearTimeout(timer);
  }
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.slice(0, 300);
}
