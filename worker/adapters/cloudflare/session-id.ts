/**
 * Legacy session ids that name the Durable Object holding the session: `<object id>_<uuid>` (the characters a connection request allows in a session id). The
 * edge reads the object id back from `Mcp-Session-Id` and routes every later request of the
 * session there, from any isolate, with no lookup table. The object id comes from
 * `newUniqueId()` (never from a name an agent could choose) and the uuid keeps the whole id
 * unguessable; the session route still checks that the session is the caller's.
 *
 * @module
 */
import type { DurableObjectId, DurableObjectNamespace } from './workers-runtime.ts';

const SESSION_ID = /^([0-9a-f]{64})_[0-9a-f-]{36}$/;

export function sessionIdIn(object: DurableObjectId): string {
  return `${object.toString()}_${crypto.randomUUID()}`;
}

/** The object a session id names, or null when it names none of this namespace. */
export function objectOfSession(namespace: DurableObjectNamespace, sessionId: string): DurableObjectId | null {
  const match = SESSION_ID.exec(sessionId);
  if (match === null) return null;
  try {
    return namespace.idFromString(match[1]!);
  } catch {
    return null;
  }
}
