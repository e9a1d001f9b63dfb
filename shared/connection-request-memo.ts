/**
 * The check of every channel-open request (the McpConnectionRequest schema, strict), memoized:
 * the worker checks what it sends and the host what it receives. A modern agent opens a channel
 * per request, and the full zod parse was about 57 µs of the worker's CPU under Deno and 60 µs of
 * the sidecar's under perf per request (issue 17), though most of what it checks
 * depends only on the agent, the server and the trust profile it names (and the inner target).
 * That part is parsed once, and remembered by its JSON; per request only the session id, the era
 * and the traceparent are checked, by the schema's own rules (`connection-request-fields.ts`).
 * Anything new, odd or failing goes to the full parse, which also words the error, so what is
 * accepted and what is refused is exactly what the parse alone did. The check is a pure function
 * of the request, so nothing a config reload changes can make a remembered answer wrong.
 *
 * Only plain objects of strings (what the link's JSON gives) take the memo: a value whose JSON
 * could stand for another (`null` for an absent one) is parsed in full.
 *
 * @module
 */
import { parseMcpConnectionRequestOrWireError, type InnerTarget, type McpConnection, type McpConnectionRequest } from './connection-request.ts';
import { FIXED_CONNECTION_KEYS, inSchemaOrder, KNOWN_CONNECTION_KEYS, perCallValid } from './connection-request-fields.ts';

/** Far more than the (agent, server, profile) combinations of any host; past it the memo starts over. */
export const MAX_CHECKED_CONNECTIONS = 1024;

export class ConnectionRequestMemo {
  /** Memo key → the inner target as the parse returned it (absent for none). */
  readonly #checked = new Map<string, InnerTarget | undefined>();

  /** As `parseMcpConnectionRequestOrWireError(input)`: the same request, or the same `WireError` thrown. */
  parse(input: unknown): McpConnectionRequest {
    const key = memoKey(input);
    if (key !== null && this.#checked.has(key)) {
      const connection = (input as { connection: McpConnection }).connection;
      if (perCallValid(connection)) return { type: 'mcp', connection: inSchemaOrder(connection, this.#checked.get(key)) };
    }
    const request = parseMcpConnectionRequestOrWireError(input);
    if (key !== null) {
      if (this.#checked.size >= MAX_CHECKED_CONNECTIONS) this.#checked.clear();
      this.#checked.set(key, request.connection.target);
    }
    return request;
  }
}

/** The memo key of the request's per-config part, or null when it is not the plain shape the memo covers. */
function memoKey(input: unknown): string | null {
  if (!isPlain(input)) return null;
  for (const key in input) if (key !== 'type' && key !== 'connection') return null;
  const connection = input.connection;
  if (input.type !== 'mcp' || !isPlain(connection)) return null;
  for (const key in connection) if (!KNOWN_CONNECTION_KEYS.has(key)) return null;
  const fixed: Array<string | null> = [];
  for (const key of FIXED_CONNECTION_KEYS) {
    const value = connection[key];
    if (value !== undefined && typeof value !== 'string') return null;
    fixed.push(value ?? null);
  }
  const target = connection.target;
  if (target !== undefined && !plainTree(target)) return null;
  // JSON tells an absent value from an empty one and escapes every separator.
  return JSON.stringify([fixed, target ?? null]);
}

function isPlain(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** A plain object whose values are strings or plain objects of strings (what a target holds): its JSON says exactly what it is. */
function plainTree(value: unknown): boolean {
  if (!isPlain(value)) return false;
  for (const key in value) {
    const inner = value[key];
    if (typeof inner !== 'string' && !(isPlain(inner) && Object.values(inner).every((v) => typeof v === 'string'))) return false;
  }
  return true;
}
