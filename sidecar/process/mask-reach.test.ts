import { describe, expect, it } from 'vitest';
import { maskShortfall, openFilesLimit } from './mask-reach.ts';

// A real stray at the top of a real limit is in test/sandbox/launch-refusal.test.ts.
const low = Array.from({ length: 30 }, (_, fd) => fd); // 0–29 open, as in a running sidecar
const room = { limit: 256, open: [...low, 30], placeholder: 30, firstFree: 3 };

describe('how high a spawn can mask', () => {
  it('fits a stray with one free number above it for its /dev/null copy', () => {
    expect(maskShortfall({ ...room, open: [...room.open, 254], masked: [254] })).toBe(0);
  });

  it('lacks one for a stray at the last number the limit allows (libuv: EINVAL)', () => {
    expect(maskShortfall({ ...room, open: [...room.open, 255], masked: [255] })).toBe(1);
  });

  it('needs a copy for every masked number above its /dev/null, and counts descriptors open above the highest as taken', () => {
    expect(maskShortfall({ ...room, open: [...room.open, 200, 250, 251], masked: [200, 250] })).toBe(0);
    expect(maskShortfall({ ...room, open: [...room.open, 200, 250, 251, 252, 253, 254], masked: [200, 250] })).toBe(1);
    // A masked number below its /dev/null is dup2ed straight into place: no copy.
    expect(maskShortfall({ ...room, open: [0, 1, 2, 3, 40, 255], placeholder: 40, masked: [3, 255] })).toBe(1);
  });

  it('keeps room for a copy of each own entry above 2, and for what libuv opens when nothing is free below', () => {
    expect(maskShortfall({ ...room, open: [...room.open, 250], masked: [250], firstFree: 7 })).toBe(0);
    expect(maskShortfall({ ...room, open: [...room.open, 252], masked: [252], firstFree: 7 })).toBe(2);
    expect(maskShortfall({ ...room, open: [...room.open, 249], masked: [249] })).toBe(0);
    // Nothing free below 250: the 8 descriptors libuv opens for the spawn go above, where the copy needs one.
    expect(maskShortfall({ ...room, open: Array.from({ length: 250 }, (_, fd) => fd), masked: [249] })).toBe(1);
  });

  it('reads the soft open-files limit from /proc/self/limits, and none when it says unlimited or cannot be read', () => {
    const limits = (soft: string) => () => `Limit                     Soft Limit           Hard Limit           Units     \nMax open files            ${soft}                 4096                 files     \n`;
    expect(openFilesLimit(limits('1024'))).toBe(1024);
    expect(openFilesLimit(limits('unlimited'))).toBeNull();
    expect(
      openFilesLimit(() => {
        throw new Error('ENOENT');
      }),
    ).toBeNull();
    if (process.platform === 'linux') expect(openFilesLimit()).toEqual(expect.any(Number));
  });
});
