/**
 * Which answers a host wrote itself, in the server's place: its refusals (its trust profile's
 * `denied-by-policy` above all) and the failures it met, as opposed to what a server behind it
 * wrote, which the host passes on unchanged. Only a marked answer's `denied-by-policy` is the
 * host's decision on the worker's audit line (`audit-record.ts`): a server can write that error,
 * code and reason included, but it cannot mark its answer.
 *
 * Kept beside the message, keyed by the message object itself, as `raw-message-text.ts` keeps a
 * text: nothing is added to the message, parsed or serialised. A hop that changes a message builds
 * a new object, which is unmarked: whatever loses the mark counts the answer as the server's,
 * never the other way round.
 *
 * Who marks:
 * - on the host, its own code at the channel's edge (`sidecar/host/channel-bridge.ts`,
 *   `modern/modern-channel.ts`) and the link endpoint for what it answers itself; the endpoint
 *   then sets `own: true` on the frame where the worker asked (`link/link-features.ts`,
 *   `host-answers`);
 * - on the worker, the link endpoint, for a message that came in a frame with `own: true` on a
 *   link whose host announced `host-answers`, and nothing else;
 * - in one process (`cli/single-machine.ts`), the in-memory channel hands the host's message
 *   object to the worker as it is, mark included.
 *
 * @module
 */

const marked = new WeakSet<object>();

/** `message`, marked as an answer the host wrote itself. */
export function hostAnswer<M extends object>(message: M): M {
  marked.add(message);
  return message;
}

/** Whether `message`, that very object, is an answer the host wrote itself. */
export function isHostAnswer(message: unknown): boolean {
  return typeof message === 'object' && message !== null && marked.has(message);
}

/** `to`, marked when `from` is: for a hop that rebuilds a host's answer and keeps what it says. */
export function sameAuthor<T extends object>(from: unknown, to: T): T {
  if (isHostAnswer(from)) marked.add(to);
  return to;
}
