import { describe, expect, it } from 'vitest';
import { reachableFromTheCloud } from './state-dir.ts';

describe('reachableFromTheCloud', () => {
  it('takes a public https URL, by name or address', () => {
    for (const url of ['https://yard.example.com/mcp', 'https://10.example.com/mcp', 'https://203.0.113.9/mcp', 'https://100.128.0.1/mcp']) expect(reachableFromTheCloud(url), url).toBe(true);
  });

  it('refuses plain http, loopback, private and shared (Tailscale) addresses, link-local and unique-local IPv6', () => {
    for (const url of ['http://yard.example.com/mcp', 'https://127.0.0.1/mcp', 'https://localhost/mcp', 'https://10.1.2.3/mcp', 'https://192.168.1.5/mcp', 'https://172.20.0.1/mcp', 'https://169.254.1.1/mcp', 'https://100.101.102.103/mcp', 'https://[fd00::1]/mcp', 'https://[fe80::1]/mcp']) {
      expect(reachableFromTheCloud(url), url).toBe(false);
    }
  });
});
