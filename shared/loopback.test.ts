import { describe, expect, it } from 'vitest';
import { isLoopbackHostname } from './loopback.ts';

describe('loopback names', () => {
  it('calls only this machine\'s loopback names loopback', () => {
    for (const name of ['localhost', 'LOCALHOST', '127.0.0.1', '127.255.0.9', '[::1]']) expect([name, isLoopbackHostname(name)]).toEqual([name, true]);
    for (const name of ['localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.1', '[::2]', '::1', '0.0.0.0']) expect([name, isLoopbackHostname(name)]).toEqual([name, false]);
  });
});
