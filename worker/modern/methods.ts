/**
 * The modern (2026-07-28) client request set (schema.ts `ClientRequest`), what each one mirrors
 * into `Mcp-Name`, and the methods 2026-07-28 removed.
 *
 * `subscriptions/listen` is served as a long-lived stream (`listen-relay.ts`).
 *
 * @module
 */

/** Every request a modern client may send, with the `params` field its `Mcp-Name` header mirrors. */
export const MODERN_CLIENT_METHODS: Readonly<Record<string, { name?: 'name' | 'uri' }>> = {
  'server/discover': {},
  'completion/complete': {},
  'prompts/get': { name: 'name' },
  'prompts/list': {},
  'resources/list': {},
  'resources/templates/list': {},
  'resources/read': { name: 'uri' },
  'subscriptions/listen': {},
  'tools/call': { name: 'name' },
  'tools/list': {},
};

/** Methods of earlier revisions that 2026-07-28 removed; a modern request naming one gets 404. */
export const REMOVED_METHODS: readonly string[] = [
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
];

/** In the spec's set, but not served by Switchyard yet (none now; the kind stays for the next one). */
const NOT_YET: readonly string[] = [];

export type MethodSupport =
  | { kind: 'served'; name?: 'name' | 'uri' }
  | { kind: 'removed' }
  | { kind: 'not-yet' }
  | { kind: 'unknown' };

export function methodSupport(method: string): MethodSupport {
  if (NOT_YET.includes(method)) return { kind: 'not-yet' };
  if (Object.hasOwn(MODERN_CLIENT_METHODS, method)) {
    const name = MODERN_CLIENT_METHODS[method]!.name;
    return name === undefined ? { kind: 'served' } : { kind: 'served', name };
  }
  return REMOVED_METHODS.includes(method) ? { kind: 'removed' } : { kind: 'unknown' };
}
