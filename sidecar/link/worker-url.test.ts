import { describe, expect, it } from 'vitest';
import { isCleartextRemote, isLoopbackHostname } from './worker-url.ts';

describe('worker URLs', () => {
  it('calls only this machine\'s loopback names loopback', () => {
    for (const name of ['localhost', 'LOCALHOST', '127.0.0.1', '127.255.0.9', '[::1]']) expect([name, isLoopbackHostname(name)]).toEqual([name, true]);
    for (const name of ['localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.1', '[::2]', '::1', '0.0.0.0']) expect([name, isLoopbackHostname(name)]).toEqual([name, false]);
  });

  it('flags http: and ws: to another machine, never https: or wss:', () => {
    expect(isCleartextRemote('http://yard.example.com')).toBe(true);
    expect(isCleartextRemote('ws://192.168.1.5:8787')).toBe(true);
    expect(isCleartextRemote('http://[::1]:8787')).toBe(false);
    expect(isCleartextRemote('https://yard.example.com')).toBe(false);
    expect(isCleartextRemote('wss://10.0.0.1')).toBe(false);
    expect(isCleartextRemote('not a url')).toBe(false);
  });
});
