import { describe, expect, it } from 'vitest';
import { readSseEvents, readSseMessages, type SseEvent } from './sse-messages.ts';

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

describe('readSseEvents', () => {
  it('reads event, id and retry, a lone CR ending a chunk as one line end, and leaves out events without data', async () => {
    const events: SseEvent[] = [];
    const retries: number[] = [];
    await readSseEvents(streamOf('id: e-1\rretry: 250\r', '\nretry: soon\rdata:\r\r', 'event: ping\nid: e-2\ndata: x\n\nid: only\n\n'), (e) => events.push(e), { onRetry: (ms) => retries.push(ms) });
    expect(events).toEqual([{ data: '', event: undefined, id: 'e-1' }, { data: 'x', event: 'ping', id: 'e-2' }]);
    expect(retries).toEqual([250]);
  });

  it('drops a stream whose line or event outgrows the limit, and cancels it', async () => {
    for (const chunks of [['data: 12345', '6789'], ['data: 1234\n', 'data: 5678\n']]) {
      let cancelled = false;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        },
        cancel: () => void (cancelled = true),
      });
      await expect(readSseEvents(body, () => {}, { maxEventChars: 8 })).rejects.toThrow('SSE event longer than 8 characters: the stream is dropped');
      expect(cancelled).toBe(true);
    }
  });
});
