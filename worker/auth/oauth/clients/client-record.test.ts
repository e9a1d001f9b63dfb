import { describe, expect, it } from 'vitest';
import { redirectUriMatches, redirectUriRefusal } from './client-record.ts';

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

describe('redirect URI refusal', () => {
  it('takes https, http on loopback and a native app\'s own scheme, and refuses the browser\'s and the system\'s schemes (QA s30)', () => {
    for (const uri of ['https://app.example/cb', 'http://127.0.0.1:3000/cb', 'cursor://anysphere.cursor-retrieval/oauth/callback', 'vscode://vscode.github-authentication/did-authenticate', 'com.example.app:/oauth2redirect']) {
      expect([uri, redirectUriRefusal(uri)]).toEqual([uri, null]);
    }
    for (const uri of ['view-source:https://evil.example', 'x-javascript:alert(1)', 'jar:https://x.example/a.jar!/b', 'mailto:a@example.com', 'tel:123', 'sms:123', 'javascript:alert(1)', 'intent://x#Intent;end']) {
      expect([uri, redirectUriRefusal(uri)]).toEqual([uri, expect.stringMatching(/uses the scheme [\w-]+: which may not receive a code|has a fragment/)]);
    }
  });
});
