import { describe, expect, it } from 'vitest';
import { redirectUriMatches } from './client-record.ts';

describe('redirect URI matching', () => {
  it('matches exactly, except for the port of an http loopback URI (RFC 8252 §7.3)', () => {
    const yes: Array<[string, string]> = [
      ['https://app.example/cb', 'https://app.example/cb'],
      ['cursor://anysphere.cursor-mcp/oauth/callback', 'cursor://anysphere.cursor-mcp/oauth/callback'],
      ['http://127.0.0.1/callback', 'http://127.0.0.1:50123/callback'],
      ['http://127.0.0.1:33418/callback', 'http://127.0.0.1:50123/callback'],
      ['http://[::1]/cb?x=1', 'http://[::1]:8080/cb?x=1'],
      ['http://localhost/cb', 'http://localhost:9000/cb'],
    ];
    const no: Array<[string, string]> = [
      ['https://app.example/cb', 'https://app.example:8443/cb'],
      ['https://app.example/cb', 'https://app.example/cb/'],
      ['http://127.0.0.1/callback', 'http://127.0.0.1:50123/other'],
      ['http://127.0.0.1/callback', 'http://localhost:50123/callback'],
      ['http://127.0.0.1/callback', 'https://127.0.0.1:50123/callback'],
      ['http://127.0.0.1/cb?x=1', 'http://127.0.0.1:1/cb?x=2'],
      ['http://127.0.0.1/cb', 'http://127.0.0.1:1/cb#frag'],
      ['http://127.0.0.1/cb', 'http://user@127.0.0.1:1/cb'],
      ['http://127.0.0.1/cb', 'http://127.0.0.1:1/CB'],
    ];
    for (const [registered, requested] of yes) expect([registered, requested, redirectUriMatches(registered, requested)]).toEqual([registered, requested, true]);
    for (const [registered, requested] of no) expect([registered, requested, redirectUriMatches(registered, requested)]).toEqual([registered, requested, false]);
  });
});
