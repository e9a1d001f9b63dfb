/**
 * Reads an SSE body as it arrives (`text/event-stream`, WHATWG rules as far as MCP uses them:
 * `data:` lines joined, `event:`, `id:` and `retry:` read, comments and other fields ignored, an
 * event ends at a blank line, CR, LF and CRLF all end a line), with web streams only.
 *
 * A line or an event's data longer than `MAX_SSE_EVENT_CHARS` ends the read with an error (the
 * body is cancelled): a server that never ends a line cannot make the worker buffer without
 * limit. The limit is the link's frame size (`frames.ts`), the largest message anything
 * downstream carries.
 *
 * `readSseMessages` is the modern client's view: every event's data parsed as JSON, a payload
 * that is not JSON skipped, as the SDK's client does.
 *
 * @module
 */
import { passGate, type ReadGate } from './read-gate.ts';

export const MAX_SSE_EVENT_CHARS = 16 * 1024 * 1024;

export interface SseEvent {
  data: string;
  /** The `event:` field; undefined for the default type (`message`). */
  event: string | undefined;
  /** The `id:` field of this event, if it had one. */
  id: string | undefined;
}

export interface SseReadOptions {
  /** Called with each valid `retry:` field, in milliseconds. */
  onRetry?: (ms: number) => void;
  maxEventChars?: number;
  /** Waited at before each read while held (`read-gate.ts`); `signal` ends the wait. */
  gate?: ReadGate;
  signal?: AbortSignal;
}

/** Calls `onEvent` for every event with data, one a microtask, until the body ends (aborting the fetch ends it too). */
export async function readSseEvents(body: ReadableStream<Uint8Array>, onEvent: (event: SseEvent) => void, options: SseReadOptions = {}): Promise<void> {
  const max = options.maxEventChars ?? MAX_SSE_EVENT_CHARS;
  const tooLong = () => new Error(`SSE event longer than ${max} characters: the stream is dropped`);
  let data: string | undefined;
  let event: string | undefined;
  let id: string | undefined;
  const ready: SseEvent[] = [];
  const line = (text: string) => {
    if (text === '') {
      if (data !== undefined) ready.push({ data, event, id });
      data = event = id = undefined;
      return;
    }
    const colon = text.indexOf(':');
    if (colon === 0) return;
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(text.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1);
    if (field === 'data') {
      data = data === undefined ? value : `${data}\n${value}`;
      if (data.length > max) throw tooLong();
    } else if (field === 'event') event = value === '' ? undefined : value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) options.onRetry?.(Number(value));
  };

  // One event per microtask, as a stream of events would hand them out: an SDK \`Protocol\` runs a
  // notification's handler a microtask late but a response's at once, so progress delivered in
  // the same turn as its response would find the request already gone.
  const dispatch = async () => {
    for (const next of ready.splice(0)) {
      onEvent(next);
      await null;
    }
  };
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let partial = '';
  let skipLf = false; // a chunk ended in CR, which ended the line: the LF of its CRLF may open the next chunk
  try {
    for (;;) {
      if (options.gate?.closed !== undefined) await passGate(options.gate, options.signal);
      const { value, done } = await reader.read();
      if (done) break;
      let text = decoder.decode(value, { stream: true });
      if (skipLf && text.startsWith('\n')) text = text.slice(1);
      if (text === '') continue;
      skipLf = text.endsWith('\r');
      if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
      let start = 0;
      for (let end = text.indexOf('\n'); end >= 0; start = end + 1, end = text.indexOf('\n', start)) {
        line(start === 0 ? partial + text.slice(0, end) : text.slice(start, end));
        if (start === 0) partial = '';
      }
      partial = start === 0 ? partial + text : text.slice(start);
      if (partial.length > max) throw tooLong();
      await dispatch();
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  if (partial !== '') line(partial);
  line('');
  await dispatch();
}

/** Calls `onMessage` for every event's parsed data until the body ends (aborting the fetch ends it too). */
export function readSseMessages(body: ReadableStream<Uint8Array>, onMessage: (message: unknown) => void, options: SseReadOptions = {}): Promise<void> {
  return readSseEvents(body, ({ data }) => {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    onMessage(message);
  }, options);
}
