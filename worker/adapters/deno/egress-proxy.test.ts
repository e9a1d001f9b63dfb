import { describe, expect, it } from 'vitest';
import { connectAnswer, connectRequest, proxyFor } from './egress-proxy.ts';

const env = (vars: Record<string, string>) => (name: string) => vars[name];
const bytes = (text: string) => new TextEncoder().encode(text);

describe('the egress proxy of the client metadata document fetch', () => {
  it('takes HTTPS_PROXY (or https_proxy), its port 80 by default, and its credentials as Basic authorization', () => {
    expect(proxyFor('apps.example.com', env({}))).toEqual({ direct: true });
    expect(proxyFor('apps.example.com', env({ HTTPS_PROXY: 'http://proxy.corp:3128' }))).toEqual({ proxy: { hostname: 'proxy.corp', port: 3128 } });
    expect(proxyFor('apps.example.com', env({ https_proxy: 'proxy.corp' }))).toEqual({ proxy: { hostname: 'proxy.corp', port: 80 } });
    expect(proxyFor('apps.example.com', env({ HTTPS_PROXY: 'http://[fd00::1]:8080' }))).toEqual({ proxy: { hostname: 'fd00::1', port: 8080 } });
    expect(proxyFor('apps.example.com', env({ HTTPS_PROXY: 'http://al%40ice:p%3Ass@proxy.corp:3128' }))).toEqual({ proxy: { hostname: 'proxy.corp', port: 3128, authorization: `Basic ${btoa('al@ice:p:ss')}` } });
  });

  it('goes direct for a host NO_PROXY names, a domain above it, or *', () => {
    const proxied = (host: string, noProxy: string) => 'proxy' in proxyFor(host, env({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: noProxy }));
    expect(proxied('apps.example.com', 'example.com')).toBe(false);
    expect(proxied('apps.example.com', 'other.org, .example.com')).toBe(false);
    expect(proxied('apps.example.com', '*.example.com')).toBe(false);
    expect(proxied('apps.example.com', 'apps.example.com:443')).toBe(false);
    expect(proxied('apps.example.com', '*')).toBe(false);
    expect(proxied('apps.example.com', 'ample.com,example.org')).toBe(true);
    expect(proxied('apps.example.com', '')).toBe(true);
  });

  it('refuses a proxy it cannot use, saying why', () => {
    expect(proxyFor('apps.example.com', env({ HTTPS_PROXY: 'https://proxy.corp' }))).toEqual({ refused: 'HTTPS_PROXY uses https:, and only an http: proxy is supported here' });
    expect(proxyFor('apps.example.com', env({ HTTPS_PROXY: 'http://[bad' }))).toEqual({ refused: 'HTTPS_PROXY is not a URL' });
  });

  it('asks CONNECT for the checked address, never the name', () => {
    expect(connectRequest('93.184.215.14', 443, { hostname: 'proxy.corp', port: 3128 })).toBe('CONNECT 93.184.215.14:443 HTTP/1.1\r\nHost: 93.184.215.14:443\r\n\r\n');
    expect(connectRequest('2606:2800::1', 8443, { hostname: 'proxy.corp', port: 3128, authorization: 'Basic eDp5' })).toBe('CONNECT [2606:2800::1]:8443 HTTP/1.1\r\nHost: [2606:2800::1]:8443\r\nProxy-Authorization: Basic eDp5\r\n\r\n');
  });

  it('reads the proxy\'s answer once its head is whole, and refuses one followed by bytes the tunnel would take for the server\'s', () => {
    expect(connectAnswer(bytes('HTTP/1.1 200 Connection established\r\n'))).toBeNull();
    expect(connectAnswer(bytes('HTTP/1.1 200 Connection established\r\n\r\n'))).toBe(200);
    expect(connectAnswer(bytes('HTTP/1.0 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n'))).toBe(407);
    expect(() => connectAnswer(bytes('HTTP/1.1 200 OK\r\n\r\n\x16\x03\x01'))).toThrow('the proxy sent more than its answer to CONNECT');
    expect(() => connectAnswer(bytes('SSH-2.0\r\n\r\n'))).toThrow('the proxy did not answer CONNECT in HTTP/1.1');
  });
});
