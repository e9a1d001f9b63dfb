/**
 * Reads the JSON-RPC messages of an SSE body as they arrive (`text/event-stream`, WHATWG rules
 * as far as MCP uses them: `data:` lines joined, comments and other fields ignored, an event ends
 * at a blank line). A data payload that is not JSON is skipped, as the SDK's client does.
 *
 * @module
 */

/** Calls `onMessage` for every event's parsed data until the body ends (aborting the fetch ends it too). */
export async function readSseMessages(body: ReadableStream<Uint8Array>, onMessage: (message: unknown) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const line = (text: string) => {
    if (text === '') {
      if (data.length > 0) deliver(data.join('\n'), onMessage);
      data = [];
    } else if (text.startsWith('data:')) {
      data.push(text.slice(text.startsWith('data: ') ? 6 : 5));
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
      if (end === buffer.length - 1 && buffer[end] === '\r') break; // its \n may be in the next chunk
      const width = buffer.startsWith('\r\n', end) ? 2 : 1;
      line(buffer.slice(0, end));
      buffer = buffer.slice(end + width);
    }
  }
  if (buffer !== '') line(buffer);
  line('');
}

function deliver(text: string, onMessage: (message: unknown) => void): void {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return;
  }
  onMessage(message);
}
