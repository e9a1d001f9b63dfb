import { describe, expect, it } from 'vitest';
import { wholeLineWriter } from './whole-line-writer.ts';

/** A file that takes at most `room` more bytes, then refuses as a full disk does; `room` can grow. */
function smallDisk(room: number) {
  const disk = { text: '', room };
  const writeSync = (bytes: Uint8Array) => {
    if (disk.room === 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const taken = bytes.subarray(0, Math.min(disk.room, bytes.length, 7)); // a few bytes a write, as a pipe or a full disk may take
    disk.text += new TextDecoder().decode(taken);
    disk.room -= taken.length;
    return taken.length;
  };
  /** Cuts the file's last bytes off, as ftruncate does, which a full disk allows. */
  const dropTail = (bytes: number) => {
    disk.text = disk.text.slice(0, disk.text.length - bytes);
    disk.room += bytes;
  };
  return { disk, writeSync, dropTail };
}

describe('wholeLineWriter', () => {
  it('writes a line whole across partial writes', () => {
    const { disk, writeSync } = smallDisk(1000);
    const write = wholeLineWriter(writeSync);
    write('{"agent":"alice","tool":"echo"}');
    write('{"agent":"bob"}');
    expect(disk.text).toBe('{"agent":"alice","tool":"echo"}\n{"agent":"bob"}\n');
  });

  it('starts the line after one cut by a full disk on a new line, never merged with it (review s22)', () => {
    const { disk, writeSync } = smallDisk(20);
    const write = wholeLineWriter(writeSync);
    expect(() => write('{"agent":"alice","tool":"echo"}')).toThrow('ENOSPC');
    expect(() => write('{"agent":"carol"}')).toThrow('ENOSPC'); // nothing fits: the file still ends cut
    disk.room = 1000;
    write('{"agent":"bob"}');
    const lines = disk.text.split('\n');
    expect(lines).toEqual(['{"agent":"alice","to', '{"agent":"bob"}', '']);
    expect(JSON.parse(lines[1]!)).toEqual({ agent: 'bob' });
  });

  it('adds no empty line when the failed write took only the newline it owed', () => {
    const { disk, writeSync } = smallDisk(3);
    const write = wholeLineWriter(writeSync);
    expect(() => write('abc')).toThrow('ENOSPC'); // `abc` written, its newline not
    disk.room = 1;
    expect(() => write('def')).toThrow('ENOSPC'); // the owed newline written, nothing else
    disk.room = 1000;
    write('ghi');
    expect(disk.text).toBe('abc\nghi\n');
  });

  it('cuts the part of a line a full disk cut off the file again, so it holds whole lines only', () => {
    const { disk, writeSync, dropTail } = smallDisk(20);
    const write = wholeLineWriter(writeSync, dropTail);
    write('{"agent":"al"}');
    expect(() => write('{"agent":"alice","tool":"echo"}')).toThrow('ENOSPC');
    expect(disk.text).toBe('{"agent":"al"}\n');
    disk.room = 1000;
    write('{"agent":"bob"}');
    expect(disk.text.split('\n').map((line) => (line === '' ? line : JSON.parse(line)))).toEqual([{ agent: 'al' }, { agent: 'bob' }, '']);
  });

  it('starts the next line on a new line when the cut part cannot be cut off (a device, not a file)', () => {
    const { disk, writeSync } = smallDisk(20);
    const write = wholeLineWriter(writeSync, () => {
      throw Object.assign(new Error('EINVAL: invalid argument, ftruncate'), { code: 'EINVAL' });
    });
    expect(() => write('{"agent":"alice","tool":"echo"}')).toThrow('ENOSPC');
    disk.room = 1000;
    write('{"agent":"bob"}');
    expect(disk.text.split('\n')).toEqual(['{"agent":"alice","to', '{"agent":"bob"}', '']);
  });

  it('refuses a write that takes nothing without an error, instead of looping on it (review of s22)', () => {
    expect(() => wholeLineWriter(() => 0)('line')).toThrow('The audit file took no bytes of a write');
  });
});
