import { describe, expect, it } from 'vitest';
import { constantTimeEqual, hexToBytes, sha256, sha256Hex } from './credentials.ts';

describe('credentials', () => {
  it('hashes to lowercase hex sha-256, and to the same bytes', async () => {
    const hex = await sha256Hex('abc');
    expect(hex).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(await sha256('abc')).toEqual(hexToBytes(hex.toUpperCase()));
  });

  it('compares byte arrays by content and length', () => {
    expect(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3]))).toBe(true);
    expect(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3]))).toBe(false);
    expect(constantTimeEqual(new Uint8Array(), new Uint8Array())).toBe(true);
  });

  it('refuses a stored hash that is not 64 hex digits', () => {
    expect(() => hexToBytes('abc')).toThrow(/64 hex digits/);
    expect(() => hexToBytes('g'.repeat(64))).toThrow(TypeError);
  });
});
