/**
 * A modern agent's `subscriptions/listen` stream in raw HTTP: the POST's SSE response read event
 * by event while it stays open, so a test can act between events and close the stream itself.
 *
 * @module
 */
import { modernMeta, MODERN } from './modern-client.ts';

export interface ListenStream {
  status: number;
  headers: Headers;
  /** The next JSON-RPC message on the stream; rejects when the stream ended first. */
  next(): Promise<Record<string, any>>;
  /** Resolves at the next comment-only event (a keepalive); messages read meanwhile wait for `next`. */
  keepalive(): Promise<void>;
  /** Closes the stream, as an agent ending its subscription does. */
  close(): Promise<void>;
}

export async function openListen(url: string, token: string, id: string | number, notifications: Record<string, unknown>, meta: Record<string, unknown> = {}): Promise<ListenStream> {
  const abort = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: modernMeta(meta) } }),
  });
  const queued: Array<Record<string, any>> = [];
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    queued.push(JSON.parse(await response.text()));
    return { status: response.status, headers: response.headers, next: async () => queued.shift() ?? Promise.reject(new Error('The answer was one JSON message')), keepalive: () => Promise.reject(new Error('The answer was one JSON message')), close: async () => {} };
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let comments = 0;
  /** Reads one chunk, queueing the messages it completes and counting comment-only events. */
  const read = async (): Promise<void> => {
    const { value, done } = await reader.read();
    if (done) throw new Error('The listen stream ended');
    buffer += value;
    let at;
    while ((at = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at).replace(/^\r?\n\r?\n/, '');
      const lines = event.split(/\r?\n/);
      const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
      if (data !== '') queued.push(JSON.parse(data));
      else if (lines.every((line) => line.startsWith(':'))) comments++;
    }
  };
  const next = async (): Promise<Record<string, any>> => {
    for (;;) {
      const queuedMessage = queued.shift();
      if (queuedMessage !== undefined) return queuedMessage;
      await read();
    }
  };
  const keepalive = async (): Promise<void> => {
    const seen = comments;
    while (comments === seen) await read();
  };
  return {
    status: response.status,
    headers: response.headers,
    next,
    keepalive,
    close: async () => {
      abort.abort();
      await reader.cancel().catch(() => {});
    },
  };
}
