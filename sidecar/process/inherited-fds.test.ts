import { closeSync, fstatSync, openSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { type DescriptorTable, descriptorMask, inheritableDescriptors, inheritableDescriptorsIn } from './inherited-fds.ts';

// Real processes holding real strays are in test/sandbox/stray-fd.test.ts and runtime-descriptors.test.ts.
describe.runIf(process.platform === 'linux')('descriptors a child would inherit', () => {
  it('lists none of those Node opens, which are all close-on-exec', () => {
    const fd = openSync('/dev/null', 'r');
    try {
      expect(inheritableDescriptors()).not.toContain(fd);
      expect(inheritableDescriptors().every((n) => n >= 3)).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it('masks each number at or above the first free index with one /dev/null descriptor, and ignores the rest', () => {
    const mask = descriptorMask([100, 4, 7, 9, 7, 1], 5);
    expect(mask?.fds).toEqual([7, 9, 100]);
    const stdio = mask!.stdio;
    expect(stdio).toHaveLength(100 + 1 - 5);
    const placeholder = stdio[7 - 5];
    expect(placeholder).toEqual(expect.any(Number));
    expect(readlinkSync(`/proc/self/fd/${placeholder as number}`)).toBe('/dev/null');
    expect(stdio.map((entry, i) => (entry === 'ignore' ? null : [i + 5, entry])).filter(Boolean)).toEqual([[7, placeholder], [9, placeholder], [100, placeholder]]);
    // Its own descriptor is close-on-exec: no other spawn inherits it.
    expect(inheritableDescriptors()).not.toContain(placeholder);
    mask!.close();
    mask!.close();
    expect(() => fstatSync(placeholder as number)).toThrow(/EBADF/);
  });

  it('is nothing, and opens nothing, when every number is below the first free index', () => {
    expect(descriptorMask([3, 4], 5)).toBeNull();
    expect(descriptorMask([], 3)).toBeNull();
  });

  it('names what each masked number points to in this process', () => {
    const own = openSync('/dev/null', 'r');
    const mask = descriptorMask([own, 9_999], 3);
    try {
      expect(mask?.describe()).toEqual([{ fd: own, target: '/dev/null' }, { fd: 9_999, target: 'unknown' }]);
    } finally {
      mask?.close();
      closeSync(own);
    }
  });
});

const errno = (code: string) => Object.assign(new Error(`${code}: from the test`), { code });
/**
 * A table from `fdinfo` (number → its text, or the errno its read fails with); `list` fails with
 * `listing` when given; the numbers in `open` are open whatever their fdinfo says.
 */
function table(fdinfo: Record<number, string | { errno: string }>, listing?: string, open: readonly number[] = []): DescriptorTable & { reads: number } {
  const t = {
    reads: 0,
    list: () => {
      t.reads += 1;
      if (listing !== undefined) throw errno(listing);
      return ['0', '1', '2', ...Object.keys(fdinfo)];
    },
    info: (fd: number) => {
      t.reads += 1;
      const info = fdinfo[fd];
      if (info === undefined || typeof info === 'object') throw errno(info?.errno ?? 'ENOENT');
      return info;
    },
    isOpen: (fd: number) => open.includes(fd),
  };
  return t;
}
const flags = (octal: string) => `pos:\t0\nflags:\t${octal}\nmnt_id:\t15\n`;

describe('which descriptors a child would inherit, from a descriptor table', () => {
  it('lists those without O_CLOEXEC, ascending, and skips one closed while it was read', () => {
    const fds = table({ 12: flags('0100002'), 4: flags('02100000'), 9: flags('02'), 7: { errno: 'ENOENT' } });
    expect(inheritableDescriptorsIn('linux', fds)).toEqual([9, 12]);
  });

  it('masks a descriptor still open whose fdinfo is missing: a /proc without fdinfo lets nothing through', () => {
    const noFdinfo = table({ 5: { errno: 'ENOENT' }, 8: { errno: 'ENOENT' }, 9: { errno: 'ENOENT' } }, undefined, [5, 9]);
    expect(inheritableDescriptorsIn('linux', noFdinfo)).toEqual([5, 9]);
  });

  it('counts a descriptor whose flags it cannot parse as inheritable: masking one more is harmless', () => {
    expect(inheritableDescriptorsIn('linux', table({ 5: 'pos:\t0\n' }))).toEqual([5]);
  });

  it('refuses on Linux when /proc/self/fd cannot be read, naming it, instead of listing nothing', () => {
    let refusal: unknown;
    try {
      inheritableDescriptorsIn('linux', table({}, 'ENOENT'));
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(WireError);
    expect(refusal).toMatchObject({ reason: 'launch-failed', detail: { errno: 'ENOENT' }, cause: { code: 'descriptors-unreadable' } });
    expect((refusal as Error).message).toBe('Cannot start process: cannot list the descriptors a child would inherit, /proc/self/fd is unreadable: ENOENT');
  });

  it('refuses when one descriptor cannot be told apart, for any reason but its closing', () => {
    expect(() => inheritableDescriptorsIn('linux', table({ 8: flags('02'), 11: { errno: 'EACCES' } }))).toThrow(
      'Cannot start process: cannot list the descriptors a child would inherit, /proc/self/fdinfo/11 is unreadable: EACCES',
    );
  });

  it.each(['darwin', 'win32', 'freebsd'] as const)('has nothing to list on %s and reads nothing there (no /proc)', (platform) => {
    const fds = table({ 9: flags('02') }, 'ENOENT');
    expect(inheritableDescriptorsIn(platform, fds)).toEqual([]);
    expect(fds.reads).toBe(0);
  });
});
