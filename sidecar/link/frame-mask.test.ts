import { describe, expect, it } from 'vitest';
import { linkMask } from './frame-mask.ts';

describe('linkMask', () => {
  it('masks with zeros over TLS and on loopback, where no intermediary reads the frames', () => {
    for (const url of ['wss://yard.example.com/link', 'ws://127.0.0.1:8787/link', 'ws://127.1.2.3/link', 'ws://localhost:8787/link', 'ws://[::1]:8787/link']) {
      const mask = Uint8Array.of(1, 2, 3, 4);
      linkMask(url)!(mask);
      expect([...mask], url).toEqual([0, 0, 0, 0]);
    }
  });

  it('keeps the random mask of plain ws to any other host', () => {
    for (const url of ['ws://yard.example.com/link', 'ws://203.0.113.7:8787/link', 'ws://127.0.0.1.example.com/link']) expect(linkMask(url), url).toBeUndefined();
  });
});
