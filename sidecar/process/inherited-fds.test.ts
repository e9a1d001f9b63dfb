import { closeSync, fstatSync, openSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { descriptorMask, inheritableDescriptors } from './inherited-fds.ts';

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
