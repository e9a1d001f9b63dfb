/**
 * Large JSON-RPC messages keep the text they were read from, so a hop that forwards one unchanged
 * (a server's answer, from its stdout into a link frame) writes that text instead of serialising
 * the object again: a 1 MB answer was about 7 ms of the sidecar's CPU in `JSON.stringify`
 * (issue 17). Only `readJsonRpcText` keeps a text, of a result response, after every check it
 * makes (JSON, depth, the message schema, whose output for a result has the parse's content: no
 * defaults, no transforms, no key dropped), so a text kept is one that passed them. Keyed by the message object itself: a hop that changes a message
 * builds a new object, which has no text; nothing in this project changes a message in place.
 *
 * @module
 */

/** Below this, serialising again costs next to nothing, and small frames stay byte for byte as before. */
export const RAW_TEXT_MIN_CHARS = 16 * 1024;

const texts = new WeakMap<object, string>();

/** Remembers that `message` was read from `text` (when it is large enough to matter). */
export function keepRawText(message: object, text: string): void {
  if (text.length >= RAW_TEXT_MIN_CHARS) texts.set(message, text);
}

/** The text `message`, that very object, was read from; undefined for small or built messages. */
export function rawTextOf(message: object): string | undefined {
  return texts.get(message);
}
