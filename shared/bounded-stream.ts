/**
 * Reads a byte stream as UTF-8 text chunk by chunk, giving up (and cancelling the stream) as soon
 * as it passes `maxBytes`, so a body of unknown or false length is never buffered past the limit.
 * Shared by the worker's agent-body reader and the OAuth client-metadata fetch.
 *
 * @module
 */

/** The text, or null when the stream held more than `maxBytes` (it is cancelled then). */
export async function readStreamWithin(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<string | null> {
  if (body === null) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}
