import { describe, expect, it } from 'vitest';
import { readSseMessages } from './sse-messages.ts';

const streamOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      controller.close();
    },
  });

describe('readSseMessages', () => {
  it('reads events split anywhere, CRLF between chunks included, and joins data lines', async () => {
    const seen: unknown[] = [];
    await readSseMessages(streamOf('event: message\r', '\ndata: {"a":', '1}\r\n\r\n: keep-alive\n\ndata: {"b":\ndata: 2}\n\n', 'data: {"c":3}'), (m) => seen.push(m));
    expect(seen).toEqual([{ a: 1 }, { b: 2 }, { c: 3 }]);
  });

  it('skips a payload that is not JSON and reads on', async () => {
    const seen: unknown[] = [];
    await readSseMessages(streamOf('data: not json\n\ndata: {"ok":true}\n\n'), (m) => seen.push(m));
    expect(seen).toEqual([{ ok: true }]);
  });
});
