/**
 * The worker's own check of every channel-open request it sends (the McpConnectionRequest schema,
 * strict: nothing but references ever leaves for a host), memoized. A modern request opens a
 * channel per call, and the full zod parse cost ~57 µs of each call under Deno (issue 17), though
 * most of what it checks depends only on the agent, the server and the config in force: the
 * server name, the trust profile reference and revision, the agent name and the descriptor's
 * inner target. That part is parsed once; per call only the session id, the era and the
 * traceparent are checked, by the same rules as the schema's (`CONNECTION_SESSION_ID`,
 * `CONNECTION_ERAS`, `isTraceparent`). Anything new, odd or failing goes to the full parse, which
 * also words the error, so what is sent and what is refused is exactly what the parse alone did.
 *
 * The memo hangs off the descriptor object, so a config reload (new descriptors) starts afresh
 * and the old entries go with the old config; each descriptor keeps at most
 * `MAX_CHECKED_PER_DESCRIPTOR` (agent, profile) combinations.
 *
 * @module
 */
import { parseMcpConnectionRequestOrWireError, type InnerTarget, type McpConnection, type McpConnectionRequest } from '../../shared/connection-request.ts';
import { FIXED_CONNECTION_KEYS, inSchemaOrder, KNOWN_CONNECTION_KEYS, perCallValid } from '../../shared/connection-request-fields.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';

/** Far more than the agents of any config; past it a descriptor's memo starts over. */
export const MAX_CHECKED_PER_DESCRIPTOR = 1024;

interface Checked {
  /** The inner target as the parse returned it; absent for a local one. */
  target: InnerTarget | undefined;
}

export class ConnectionRequestCheck {
  readonly #checked = new WeakMap<ConnectionDescriptor, Map<string, Checked>>();

  /**
   * The channel-open request for `connection` to the host `descriptor` names, with `target`, the
   * descriptor's inner target (absent: launch the server there; the same for every call with that
   * descriptor, it is remembered with it), exactly as `parseMcpConnectionRequestOrWireError` returns
   * it; throws its `WireError` when that would.
   */
  request(descriptor: ConnectionDescriptor, connection: McpConnection, target: InnerTarget | undefined): McpConnectionRequest {
    const key = fixedKey(connection);
    const checked = key === null || !perCallValid(connection) ? undefined : this.#checked.get(descriptor)?.get(key);
    if (checked !== undefined) return { type: 'mcp', connection: inSchemaOrder(connection, checked.target) };
    const request = parseMcpConnectionRequestOrWireError({ type: 'mcp', connection: target === undefined ? connection : { ...connection, target } });
    if (key !== null) this.#remember(descriptor, key, { target: request.connection.target });
    return request;
  }

  #remember(descriptor: ConnectionDescriptor, key: string, checked: Checked): void {
    let memo = this.#checked.get(descriptor);
    if (memo === undefined) this.#checked.set(descriptor, (memo = new Map()));
    if (memo.size >= MAX_CHECKED_PER_DESCRIPTOR) memo.clear();
    memo.set(key, checked);
  }
}

/** The memo key of the per-config part, or null when the connection has a key the schema does not know (the parse refuses it). */
function fixedKey(connection: McpConnection): string | null {
  for (const key in connection) if (!KNOWN_CONNECTION_KEYS.has(key) || key === 'target') return null;
  // JSON tells an absent value from an empty one and escapes every separator.
  return JSON.stringify(FIXED_CONNECTION_KEYS.map((key) => connection[key] ?? null));
}
