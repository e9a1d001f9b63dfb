import { describe, expect, it } from 'vitest';
import { listenAddress } from './listen-address.ts';

describe('listenAddress', () => {
  it('takes the flags, else HOST and PORT, else loopback on 8787; an empty variable is unset, never every address (review s21)', () => {
    expect(listenAddress({}, {})).toEqual({ host: '127.0.0.1', hostSource: '', port: 8787 });
    expect(listenAddress({}, { HOST: '', PORT: '' })).toEqual({ host: '127.0.0.1', hostSource: '', port: 8787 });
    expect(listenAddress({}, { HOST: '::1', PORT: '0' })).toEqual({ host: '::1', hostSource: ' (from HOST)', port: 0 });
    expect(listenAddress({ host: '127.0.0.2', port: '9000' }, { HOST: 'elsewhere', PORT: '1' })).toEqual({ host: '127.0.0.2', hostSource: '', port: 9000 });
  });

  it('refuses an empty flag, which names no address or port', () => {
    expect(() => listenAddress({ host: '' }, {})).toThrow('Invalid host "": expected an address to listen on, such as 127.0.0.1 (the default)');
    expect(() => listenAddress({ port: '' }, {})).toThrow('Invalid port "": expected 0-65535');
  });

  it('refuses a port that is not digits 0-65535, saying where it came from', () => {
    expect(() => listenAddress({}, { PORT: '0x50' })).toThrow('Invalid port "0x50" (from PORT): expected 0-65535');
    expect(() => listenAddress({ port: '1e3' }, {})).toThrow('Invalid port "1e3": expected 0-65535');
    expect(() => listenAddress({ port: '65536' }, {})).toThrow('Invalid port "65536": expected 0-65535');
  });
});
