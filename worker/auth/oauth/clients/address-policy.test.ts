import { describe, expect, it } from 'vitest';
import { hostRefusal, isPublicAddress } from './address-policy.ts';

describe('client metadata address policy', () => {
  it('refuses loopback, private, link-local, shared, multicast and reserved IPv4 addresses', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '192.0.2.1', '198.18.0.1']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });

  it('accepts public IPv4 addresses', () => {
    for (const a of ['8.8.8.8', '172.32.0.1', '1.1.1.1']) expect(isPublicAddress(a), a).toBe(true);
  });

  it('refuses loopback, unique-local, link-local, mapped-private and documentation IPv6 addresses', () => {
    for (const a of ['::1', '[::1]', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a00:1', 'ff02::1', '2001:db8::1', '0:0:0:0:0:0:0:1']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });

  it('refuses site-local, discard-only and Teredo IPv6 addresses, and 6to4 ones carrying a private IPv4 address (review s19)', () => {
    for (const a of ['fec0::1', 'feff::1', '100::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2002:7f00:1::', '2002:c0a8:101::1', '2002:a9fe:a9fe::1']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    expect(isPublicAddress('2002:808:808::1')).toBe(true);
  });

  it('accepts public IPv6 addresses and rejects malformed ones as not public', () => {
    expect(isPublicAddress('2606:4700:4700::1111')).toBe(true);
    expect(isPublicAddress('::ffff:8.8.8.8')).toBe(true);
    expect(isPublicAddress('1:2:3:4:5:6:7:8:9')).toBe(false);
    expect(isPublicAddress('not-an-address')).toBe(false);
  });

  it('refuses local names and IP literals that are not public, naming the host', () => {
    expect(hostRefusal('localhost')).toMatch(/"localhost" is this machine/);
    expect(hostRefusal('app.localhost')).toMatch(/loopback/);
    expect(hostRefusal('127.0.0.1')).toMatch(/loopback, private or reserved/);
    expect(hostRefusal('[::1]')).toMatch(/loopback, private or reserved/);
    expect(hostRefusal('printer.local')).toMatch(/local network name/);
    expect(hostRefusal('intranet')).toMatch(/not a public domain name/);
    expect(hostRefusal('app.example.com')).toBeNull();
    expect(hostRefusal('8.8.8.8')).toBeNull();
  });
});
