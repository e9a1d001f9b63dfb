import { describe, expect, it } from 'vitest';
import { LineSplitterStream, linesOf } from './line-framing.ts';

async function collect(stream: ReadableStream<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of stream as unknown as AsyncIterable<string>) out.push(line);
  return out;
}

function bytesStream(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

const utf8 = (s: string) => new TextEncoder().encode(s);

describe('line framing', () => {
  it('splits LF and CRLF lines and keeps a final line without newline', async () => {
    const lines = await collect(linesOf(bytesStream([utf8('a\r\nb\nc')])));
    expect(lines).toEqual(['a', 'b', 'c']);
  });

  it('drops a leading byte order mark', async () => {
    const lines = await collect(linesOf(bytesStream([new Uint8Array([0xef, 0xbb, 0xbf]), utf8('hello\n')])));
    expect(lines).toEqual(['hello']);
  });

  it('reassembles a multi-byte character split across chunks', async () => {
    const bytes = utf8('héllo ✓\n');
    const lines = await collect(linesOf(bytesStream([bytes.slice(0, 2), bytes.slice(2, 9), bytes.slice(9)])));
    expect(lines).toEqual(['héllo ✓']);
  });

  it('caps an overlong line and reports how much was dropped', async () => {
    const dropped: number[] = [];
    const splitter = new LineSplitterStream({ maxLineLength: 4, onOverflow: (n) => dropped.push(n) });
    const source = new ReadableStream<string>({
      start(c) {
        c.enqueue('abcdefgh');
        c.enqueue('ij\nok\n');
        c.close();
      },
    });
    expect(await collect(source.pipeThrough(splitter))).toEqual(['abcd', 'ok']);
    expect(dropped).toEqual([6]);
  });
});
