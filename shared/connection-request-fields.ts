/**
 * The parts of a channel-open request's `connection` that a memoized check of the
 * McpConnectionRequest schema needs, shared by the worker (which checks what it sends) and the
 * host (which checks what it receives): most of a connection depends only on the agent, the server
 * and the config in force, and is parsed once; per call only the session id, the era and the
 * traceparent are checked, by the same rules as the schema's (issue 17).
 *
 * @module
 */
import { CONNECTION_ERAS, CONNECTION_SESSION_ID, type InnerTarget, type McpConnection } from './connection-request.ts';
import { isTraceparent } from './trace-context.ts';

/**
 * The connection's keys in the schema's order: the order a parse gives them. Written out, not read
 * from the schema's shape, which would build the schema when this module is evaluated rather
 * than at a channel's first open; connection-request-fields.test.ts holds the two the same.
 */
export const CONNECTION_KEYS: ReadonlyArray<keyof McpConnection> = ['server-name', 'trust-profile-ref', 'trust-profile-revision', 'target', 'session', 'agent', 'era', 'traceparent'];
const PER_CALL = new Set<string>(['session', 'era', 'traceparent']);
/** The keys whose values a memo is keyed by: every string one that is not checked per call. */
export const FIXED_CONNECTION_KEYS = CONNECTION_KEYS.filter((key) => key !== 'target' && !PER_CALL.has(key));
/** Every key the schema knows (it refuses any other). */
export const KNOWN_CONNECTION_KEYS: ReadonlySet<string> = new Set<string>(CONNECTION_KEYS);

/** The per-call fields, checked as the schema checks them. */
export function perCallValid(connection: McpConnection): boolean {
  const { session, era, traceparent } = connection;
  return (session === undefined || (typeof session === 'string' && CONNECTION_SESSION_ID.test(session)))
    && (era === undefined || CONNECTION_ERAS.includes(era))
    && (traceparent === undefined || isTraceparent(traceparent));
}

/** `connection` with `target` (the parse's own), keys in the schema's order and absent values left out, as a parse returns it. */
export function inSchemaOrder(connection: McpConnection, target: InnerTarget | undefined): McpConnection {
  const out: Record<string, unknown> = {};
  for (const key of CONNECTION_KEYS) {
    const value = key === 'target' ? target : connection[key];
    if (value !== undefined) out[key] = value;
  }
  return out as McpConnection;
}
