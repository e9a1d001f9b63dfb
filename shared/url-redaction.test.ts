import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrlsIn } from './url-redaction.ts';

describe('redactUrl', () => {
  it('keeps a URL without credentials as it is', () => {
    expect(redactUrl('https://mcp.example.com:8443/v1/mcp')).toBe('https://mcp.example.com:8443/v1/mcp');
    expect(redactUrl('http://127.0.0.1:4318/v1/traces')).toBe('http://127.0.0.1:4318/v1/traces');
  });

  it('redacts userinfo, query and fragment, keeping scheme, host, port and path', () => {
    expect(redactUrl('https://svc:ghp_S1@mcp.example.com:8443/v1/mcp?api_key=S2&x=1#access_token=S3')).toBe('https://[redacted]@mcp.example.com:8443/v1/mcp?[redacted]#[redacted]');
    expect(redactUrl('https://api.example.com/x#access_token=FRAGSECRET')).toBe('https://api.example.com/x#[redacted]');
    expect(redactUrl('https://user@example.com/')).toBe('https://[redacted]@example.com/');
    expect(redactUrl('https://:onlypassword@example.com/')).toBe('https://[redacted]@example.com/');
  });

  it('takes a password holding an @ as userinfo to the last @ before the path', () => {
    expect(redactUrl('https://user:p@ssW0RDSECRET@example.com/x')).toBe('https://[redacted]@example.com/x');
  });

  it('redacts what it cannot parse: nothing after ? or #, no userinfo', () => {
    expect(redactUrl('https://user:S1@exa mple.com/x?key=S2')).toBe('https://[redacted]@exa mple.com/x?[redacted]');
    expect(redactUrl('not a url?key=S2#frag=S3')).toBe('not a url?[redacted]#[redacted]');
    expect(redactUrl('not a url#frag=S3?x')).toBe('not a url#[redacted]');
    expect(redactUrl('https://u:p#ssS1@example.com/x')).toBe('https://[redacted]@example.com/x');
    for (const secret of ['S1', 'S2', 'S3']) expect(redactUrl(`http://u:${secret}@[bad/?k=${secret}#${secret}`)).not.toContain(secret);
  });
});

describe('redactUrlsIn', () => {
  it('redacts every URL a message quotes and keeps the rest, with the punctuation after a URL', () => {
    expect(redactUrlsIn('Request cannot be constructed from a URL that includes credentials: https://svc:ghp_S1@127.0.0.1:1/mcp')).toBe(
      'Request cannot be constructed from a URL that includes credentials: https://[redacted]@127.0.0.1:1/mcp',
    );
    expect(redactUrlsIn('error sending request for url (http://127.0.0.1:1/v1/traces?key=S2): client error (Connect)')).toBe(
      'error sending request for url (http://127.0.0.1:1/v1/traces?[redacted]): client error (Connect)',
    );
    expect(redactUrlsIn('"https://a.example/x?t=S1", then http://b.example/y.')).toBe('"https://a.example/x?[redacted]", then http://b.example/y.');
  });

  it('leaves text without URLs alone', () => {
    expect(redactUrlsIn('the collector answered HTTP 503')).toBe('the collector answered HTTP 503');
  });
});
