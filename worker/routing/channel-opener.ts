/**
 * The router composed once for both agent endpoints: every channel open runs under one deadline
 * and ends in a stable reason, and every failed open is told to one observer (the status page's
 * recent errors).
 *
 * One deadline, passed down: the timer lives here, and its `AbortSignal` goes through the router
 * to whatever waits (the host's link gives up its pending open with this same error), so the
 * configured `request-timeout-seconds` is the one limit, not a second timer around an inner one.
 * A router that cannot be interrupted is raced against the deadline itself, and a channel that
 * arrives after it fired is closed at once. Anything thrown that is not a `WireError` becomes
 * `launch-failed`. The deadlines of all opens share one timer (`shared/delay-queue.ts`): a modern
 * request opens a channel per call, and its own `setTimeout` was 20-30 µs of it under Deno.
 *
 * Failures of a channel after it opened are not seen here: the sessions record those where they
 * see the channel close (`passthrough-session.ts`, `aggregate/upstream-set.ts`).
 *
 * @module
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpConnection } from '../../shared/connection-request.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import { DelayQueue } from '../../shared/delay-queue.ts';
import { WireError } from '../../shared/errors.ts';
import type { ChannelOpenOptions, ChannelRouter, ChannelTrust } from './channel-router.ts';
import { fetchErrorText } from '../../shared/fetch-error-text.ts';

/** The agent endpoint an open is for, as the audit names it (`route`). */
export type OpenRoute = 'passthrough' | 'aggregate';

/**
 * Opens the channel to one server for one agent session; rejects with a `WireError`. `route` is
 * told to `onOpenFailed` only: the link does not carry it.
 */
export type ChannelOpener = (descriptor: ConnectionDescriptor, connection: McpConnection, trust: ChannelTrust, options?: Pick<ChannelOpenOptions, 'first'>, route?: OpenRoute) => Promise<Transport>;

export interface ChannelOpenerOptions {
  /** The open's deadline (`request-timeout-seconds`, or the default). */
  timeoutMs: number;
  /** Told of every failed open with the error the agent is answered (timeouts included). */
  onOpenFailed?: (connection: McpConnection, error: WireError, route: OpenRoute | undefined) => void;
  /** Told of every open that succeeded. */
  onOpened?: (connection: McpConnection) => void;
}

export function createChannelOpener(router: ChannelRouter, options: ChannelOpenerOptions): ChannelOpener {
  const { timeoutMs, onOpenFailed, onOpened } = options;
  const deadlines = new DelayQueue(timeoutMs);
  return async (descriptor, connection, trust, options = {}, route) => {
    const server = connection['server-name'];
    const deadline = new AbortController();
    // The deadline rejects the race itself, beside aborting the signal it hands down: a listener
    // on that signal was an `addEventListener` and a `removeEventListener` (with their options'
    // WebIDL conversion) on every open, a modern request's every call (issue 17).
    let expire!: (reason: unknown) => void;
    const aborted = new Promise<never>((_, reject) => (expire = reject));
    const timer = deadlines.add(() => {
      deadline.abort(new WireError('request-timeout', `Opening server "${server}" took longer than ${Math.round(timeoutMs / 1000)} s: check its host and try again`));
      expire(deadline.signal.reason);
    });
    // Inside the try: a router that throws at once still cancels the timer, which would otherwise
    // reject `aborted` later with nothing listening.
    let opening: ReturnType<ChannelRouter['open']> | undefined;
    try {
      opening = router.open(descriptor, connection, trust, { ...options, signal: deadline.signal });
      const channel = await Promise.race([opening, aborted]);
      onOpened?.(connection);
      return channel;
    } catch (error) {
      if (deadline.signal.aborted) void opening?.then((channel) => channel.close(), () => {});
      const failure = error instanceof WireError ? error : new WireError('launch-failed', `Could not open server "${server}": ${fetchErrorText(error)}`, { cause: error });
      onOpenFailed?.(connection, failure, route);
      throw failure;
    } finally {
      deadlines.cancel(timer);
    }
  };
}


