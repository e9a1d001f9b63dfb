import { describe, expect, it } from 'vitest';
import { isLoopbackAddress, isLoopbackHostname } from './loopback.ts';

describe('loopback names', () => {
  it('calls only this machine\'s loopback names loopback', () => {
    for (const name of ['localhost', 'LOCALHOST', '127.0.0.1', '127.255.0.9', '[::1]']) expect([name, isLoopbackHostname(name)]).toEqual([name, true]);
    for (const name of ['localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.1', '[::2]', '::1', '0.0.0.0']) expect([name, isLoopbackHostname(name)]).toEqual([name, false]);
  });

  it('calls only loopback peer addresses loopback, as Deno and Node spell them', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1', '::FFFF:127.0.0.1']) expect([address, isLoopbackAddress(address)]).toEqual([address, true]);
    for (const address of ['localhost', '10.0.0.1', '::2', '::ffff:10.0.0.1', '0.0.0.0', '::', '203.0.113.9', '127.0.0.1.nip.io']) expect([address, isLoopbackAddress(address)]).toEqual([address, false]);
  });
});
