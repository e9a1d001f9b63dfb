import { describe, expect, it } from 'vitest';
import { isCleartextRemote } from './worker-url.ts';

describe('worker URLs', () => {
  it('flags http: and ws: to another machine, never https: or wss:', () => {
    expect(isCleartextRemote('http://yard.example.com')).toBe(true);
    expect(isCleartextRemote('ws://192.168.1.5:8787')).toBe(true);
    expect(isCleartextRemote('http://[::1]:8787')).toBe(false);
    expect(isCleartextRemote('https://yard.example.com')).toBe(false);
    expect(isCleartextRemote('wss://10.0.0.1')).toBe(false);
    expect(isCleartextRemote('not a url')).toBe(false);
  });
});
