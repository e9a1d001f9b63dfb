/**
 * workerd ends an agent's HTTP/1.1 connection once it has answered a request whose body the
 * worker left unread (or cancelled): it does not drain it. Some answers need no body: a 401
 * before any object wakes, the 404 "Session not found" of a session's object. An agent client
 * that reuses the connection, as every keep-alive client does, and sends its next request before
 * the close reaches it (an SDK client initializing again right after that 404, on a busy
 * machine) gets the connection dropped under that request ("fetch failed: other side closed")
 * instead of an answer.
 *
 * So every entry that answers an agent's request (the edge, and the objects the edge forwards
 * one to) reads what is left of its body before answering, up to the largest body an agent
 * endpoint takes; a longer one is cancelled and its connection closes, as it did before. A body
 * forwarded to an object is that object's to read: the edge finds it used and leaves it.
 *
 * @module
 */
import { readBoundedBody } from '../../sessions/bounded-body.ts';
import { MAX_LEGACY_BODY_BYTES } from '../../sessions/legacy-post-body.ts';

/** Reads and drops what remains of `request`'s body (nothing when it was read or forwarded). */
export async function drainUnreadBody(request: Request): Promise<void> {
  if (request.body === null || request.bodyUsed) return;
  // An agent that went away mid-body has nothing left to answer.
  await readBoundedBody(request, MAX_LEGACY_BODY_BYTES).catch(() => {});
}
