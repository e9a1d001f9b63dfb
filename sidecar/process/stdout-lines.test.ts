import { describe, expect, it } from 'vitest';
import { StdoutLines } from './stdout-lines.ts';

/** Every line `chunks` make, reading after each append as the transport does. */
function linesOf(chunks: readonly (string | Buffer)[], maxBytes = 1 << 20): string[] {
  const lines = new StdoutLines(maxBytes);
  const out: string[] = [];
  for (const chunk of chunks) {
    lines.append(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    for (let line = lines.readLine(); line !== null; line = lines.readLine()) out.push(line);
  }
  return out;
}

describe('StdoutLines', () => {
  it('reads several lines from one chunk, and holds the unfinished one', () => {
    const lines = new StdoutLines(1024);
    lines.append(Buffer.from('{"a":1}\n{"b":2}\n{"c"'));
    expect([lines.readLine(), lines.readLine(), lines.readLine()]).toEqual(['{"a":1}', '{"b":2}', null]);
    lines.append(Buffer.from(':3}\n'));
    expect([lines.readLine(), lines.readLine()]).toEqual(['{"c":3}', null]);
  });

  it('joins a line that came in many chunks, in order', () => {
    const pieces = Array.from({ length: 40 }, (_, i) => `${i}`.padStart(3, '0').repeat(100));
    expect(linesOf([...pieces, '\nnext\n'])).toEqual([pieces.join(''), 'next']);
  });

  it('drops the CR of a CRLF, also when the CR ends one chunk and the LF opens the next', () => {
    expect(linesOf(['one\r\ntwo\r', '\nthree\n'])).toEqual(['one', 'two', 'three']);
    expect(linesOf(['a', 'b\r', '\n'])).toEqual(['ab']);
  });

  it('keeps a CR that is not before an LF, and reads an empty line', () => {
    expect(linesOf(['a\rb\n\n'])).toEqual(['a\rb', '']);
  });

  it('decodes a multi-byte character split across chunks', () => {
    const bytes = Buffer.from('é€😀\n');
    expect(linesOf([bytes.subarray(0, 1), bytes.subarray(1, 4), bytes.subarray(4)])).toEqual(['é€😀']);
  });

  it('refuses an unfinished line past its cap, counting what it held, then starts over', () => {
    const lines = new StdoutLines(8);
    lines.append(Buffer.from('12345'));
    expect(lines.readLine()).toBeNull();
    expect(() => lines.append(Buffer.from('6789'))).toThrow('Line buffer exceeded maximum size of 8 bytes');
    lines.append(Buffer.from('ok\n'));
    expect(lines.readLine()).toBe('ok');
  });

  it('keeps the order when a chunk comes before the lines of the last were read', () => {
    const lines = new StdoutLines(1024);
    lines.append(Buffer.from('x\ny'));
    lines.append(Buffer.from('z\n'));
    expect([lines.readLine(), lines.readLine(), lines.readLine()]).toEqual(['x', 'yz', null]);
  });

  it('reads nothing after clear', () => {
    const lines = new StdoutLines(1024);
    lines.append(Buffer.from('held'));
    expect(lines.readLine()).toBeNull();
    lines.clear();
    lines.append(Buffer.from('\n'));
    expect(lines.readLine()).toBe('');
  });
});
