/**
 * The `subscriptions/listen` filter (schema.ts `SubscriptionFilter`): which change notifications a
 * listen stream asked for, the subset a server can honour (its capabilities say which kinds it
 * sends), and whether one notification passes it. Pure functions, no I/O.
 *
 * - A kind the server does not announce (`tools.listChanged`, `prompts.listChanged`,
 *   `resources.listChanged`, `resources.subscribe`) is left out of the acknowledged filter, as the
 *   spec asks, and nothing of it is ever sent.
 * - `notifications/resources/updated` passes for a subscribed URI, or for a sub-resource of one
 *   (the spec allows the server to name one): a URI that continues a subscribed one after a `/`.
 *
 * @module
 */
import * as z from '../zod.ts';
import { isRecord } from '../records.ts';

export const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

/** Built on first use, as the worker's schemas read only on some paths are. */
const subscriptionFilterSchema = z.lazily(() =>
  z.looseObject({
    toolsListChanged: z.optional(z.boolean()),
    promptsListChanged: z.optional(z.boolean()),
    resourcesListChanged: z.optional(z.boolean()),
    resourceSubscriptions: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(2048))).check(z.maxLength(256))),
  }),
);
export type SubscriptionFilter = z.infer<ReturnType<typeof subscriptionFilterSchema>>;

/** Each list-changed notification and the filter flag that asks for it. */
const LIST_CHANGED: Record<string, 'toolsListChanged' | 'promptsListChanged' | 'resourcesListChanged'> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
};
export const RESOURCE_UPDATED = 'notifications/resources/updated';

export type FilterParse = { ok: true; filter: SubscriptionFilter } | { ok: false; problem: string };

/** The listen request's `params.notifications`, checked. */
export function parseSubscriptionFilter(params: unknown): FilterParse {
  const value = isRecord(params) ? params.notifications : undefined;
  if (value === undefined) return { ok: false, problem: 'params.notifications is missing: name the change notifications this stream listens for' };
  const parsed = subscriptionFilterSchema().safeParse(value);
  if (parsed.success) return { ok: true, filter: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { ok: false, problem: `params.notifications${issue.path.map((p) => `.${String(p)}`).join('')} is invalid: ${issue.message}` };
}

/** The part of `requested` a server with `capabilities` can honour (what the acknowledgement carries). */
export function honouredFilter(requested: SubscriptionFilter, capabilities: Record<string, unknown>): SubscriptionFilter {
  const announces = (feature: string, flag: string) => isRecord(capabilities[feature]) && (capabilities[feature] as Record<string, unknown>)[flag] === true;
  const honoured: SubscriptionFilter = {};
  if (requested.toolsListChanged === true && announces('tools', 'listChanged')) honoured.toolsListChanged = true;
  if (requested.promptsListChanged === true && announces('prompts', 'listChanged')) honoured.promptsListChanged = true;
  if (requested.resourcesListChanged === true && announces('resources', 'listChanged')) honoured.resourcesListChanged = true;
  const uris = requested.resourceSubscriptions ?? [];
  if (uris.length > 0 && announces('resources', 'subscribe')) honoured.resourceSubscriptions = [...new Set(uris)];
  return honoured;
}

/** Whether a server notification passes `filter`. */
export function passesFilter(filter: SubscriptionFilter, method: string, params: Record<string, unknown> | undefined): boolean {
  const flag = LIST_CHANGED[method];
  if (flag !== undefined) return filter[flag] === true;
  if (method !== RESOURCE_UPDATED || typeof params?.uri !== 'string') return false;
  const uri = params.uri;
  return (filter.resourceSubscriptions ?? []).some((watched) => uri === watched || uri.startsWith(watched.endsWith('/') ? watched : `${watched}/`));
}

/** A notification as it goes out on a listen stream: its `_meta` names the subscription. */
export function tagged(method: string, params: Record<string, unknown> | undefined, subscriptionId: string | number): { method: string; params: Record<string, unknown> } {
  const meta = isRecord(params?._meta) ? params._meta : {};
  return { method, params: { ...params, _meta: { ...meta, [SUBSCRIPTION_ID_KEY]: subscriptionId } } };
}
