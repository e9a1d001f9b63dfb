/**
 * Serves one `subscriptions/listen` request on a modern channel, which stays open as the agent's
 * listen stream (basic/patterns/subscriptions.mdx): the acknowledgement first, naming the subset
 * of the filter the server honours, then each change notification the filter asked for, every
 * one carrying `_meta["io.modelcontextprotocol/subscriptionId"]`, the listen request's own id.
 *
 * - On a legacy instance the host speaks for the server: it subscribes each watched URI upstream
 *   (`resources/subscribe`, once per instance however many streams watch it, `listener-set.ts`),
 *   acknowledges what the server's capabilities allow, and fans the instance's
 *   the `list_changed` notifications and `notifications/resources/updated` out to the streams whose
 *   filter asked. The host ending the instance ends the stream gracefully (a complete result); the
 *   process ending on its own drops it (no response, so the agent listens again).
 * - On a modern server the request is passed through under a remapped id; what comes back tagged
 *   with that id (the server's own acknowledgement, its notifications, its closing result) is
 *   re-tagged with the agent's id; the server's `notifications/cancelled` for it, or its process
 *   ending, drops the stream.
 * The returned function ends the subscription upstream (the agent closed its stream): the legacy
 * listener leaves and URIs no stream watches any more are unsubscribed; a modern server gets
 * `notifications/cancelled` for the listen's upstream id.
 *
 * @module
 */
import { hostCall } from './host-call.ts';
import type { LegacyInstance } from './legacy-instance.ts';
import type { JsonRpcErrorShape } from './modern-results.ts';
import type { ModernServerInstance } from './modern-server-instance.ts';
import { honouredFilter, parseSubscriptionFilter, passesFilter, SUBSCRIPTION_ID_KEY, tagged, type SubscriptionFilter } from '../../../shared/era-bridge/subscription-filter.ts';
import { isRecord } from '../../../shared/records.ts';
import { answerBrokeOff } from '../../../shared/modern-http-transport.ts';

type Id = string | number;

/** Where the stream's messages go: notifications while it is open, one response to end it. */
export interface ListenOutput {
  notify(notification: { method: string; params?: Record<string, unknown> }): void;
  reply(answer: { result: Record<string, unknown> } | { error: JsonRpcErrorShape }): void;
  /**
   * Ends the stream with no response, as a transport drop does (subscriptions.mdx): a server that
   * ended or tore the subscription down, which its agent answers by listening again. A response
   * (`listenClosed`) is the graceful end, for the host's own stop of an instance.
   */
  drop(): void;
}

const ACKNOWLEDGED = 'notifications/subscriptions/acknowledged';
const INVALID_PARAMS = -32602;

/** The result that ends a subscription gracefully. */
export const listenClosed = (id: Id): { result: Record<string, unknown> } => ({ result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_KEY]: id } } });

export async function listenOnLegacy(id: Id, params: unknown, instance: LegacyInstance, out: ListenOutput): Promise<() => void> {
  const parsed = parseSubscriptionFilter(params);
  if (!parsed.ok) {
    out.reply({ error: { code: INVALID_PARAMS, message: `Invalid params: ${parsed.problem}`, data: { reason: 'invalid-request' } } });
    return () => {};
  }
  const honoured = honouredFilter(parsed.filter, instance.initializeResult.capabilities);
  const listeners = instance.listeners;
  // Subscribed together, each bounded (`host-call.ts`): a server that never answers one holds the
  // acknowledgement for that long, not for good, and pins no instance (review s23).
  const uris = honoured.resourceSubscriptions ?? [];
  const taken = await Promise.all(
    uris.map(async (uri) => {
      if (!listeners.retain(uri)) return true;
      const outcome = await hostCall(instance, { method: 'resources/subscribe', params: { uri } });
      if (outcome !== null && 'result' in outcome) return true;
      listeners.release(uri);
      return false;
    }),
  );
  const held = uris.filter((_, i) => taken[i]);
  const filter: SubscriptionFilter = { ...honoured, ...(honoured.resourceSubscriptions !== undefined ? { resourceSubscriptions: held } : {}) };
  if (filter.resourceSubscriptions?.length === 0) delete filter.resourceSubscriptions;
  // The acknowledgement goes out before the listener joins, so nothing of the subscription precedes it.
  out.notify(tagged(ACKNOWLEDGED, { notifications: filter }, id));
  let ended = false;
  // The instance ending ends the stream through the set (`ListenerSet.end`), which drops the
  // listener: a reaction on `instance.closed` here would hold `out` until the instance ends.
  const leave = listeners.add({
    offer: (method, notification) => {
      if (passesFilter(filter, method, notification)) out.notify(tagged(method, notification, id));
    },
    ended: (graceful) => {
      if (ended) return;
      if (graceful) out.reply(listenClosed(id));
      else out.drop();
    },
  });
  return () => {
    if (ended) return;
    ended = true;
    leave();
    for (const uri of held) {
      if (listeners.release(uri) && !instance.ended) void hostCall(instance, { method: 'resources/unsubscribe', params: { uri } });
    }
  };
}

export function listenOnModern(id: Id, params: Record<string, unknown> | undefined, instance: ModernServerInstance, out: ListenOutput): () => void {
  const call = instance.call({ method: 'subscriptions/listen', ...(params !== undefined ? { params } : {}) }, {
    logLevel: null,
    notify: (notification) => out.notify(tagged(notification.method, notification.params, id)),
  });
  let ended = false;
  call.outcome.then(
    (outcome) => {
      ended = true;
      // Its HTTP stream broke off (a proxy's idle timeout): a drop, which the agent answers by listening again.
      if ('error' in outcome) return answerBrokeOff(outcome.error) ? out.drop() : out.reply(outcome);
      const result = isRecord(outcome.result) ? outcome.result : {};
      const meta = isRecord(result._meta) ? result._meta : {};
      out.reply({ result: { ...result, resultType: result.resultType ?? 'complete', _meta: { ...meta, [SUBSCRIPTION_ID_KEY]: id } } });
    },
    () => {
      ended = true;
      // The process ended, or the server tore the subscription down: gracefully only when the host ended it.
      if (instance.closedByHost) out.reply(listenClosed(id));
      else out.drop();
    },
  );
  return () => {
    if (!ended) call.cancel('The agent closed its listen stream');
    ended = true;
  };
}
