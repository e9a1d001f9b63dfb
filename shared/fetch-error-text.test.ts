import { describe, expect, it } from 'vitest';
import { fetchErrorText } from './fetch-error-text.ts';

describe('fetchErrorText', () => {
  it('keeps why a request failed and none of the URL it was for', () => {
    const deno = new TypeError('error sending request for url (https://svc.internal:8443/mcp?api_key=S1): client error (Connect): tcp connect error: Connection refused (os error 111)');
    expect(fetchErrorText(deno)).toBe('error sending request for url (<url>): client error (Connect): tcp connect error: Connection refused (os error 111)');
    const node = new TypeError('Request cannot be constructed from a URL that includes credentials: https://svc:ghp_S2@127.0.0.1:1/mcp');
    expect(fetchErrorText(node)).toBe('Request cannot be constructed from a URL that includes credentials: <url>');
    expect(fetchErrorText(new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }))).toBe('fetch failed (ECONNREFUSED)');
    expect(fetchErrorText('sent Bearer abc.def to x')).toBe('sent Bearer [redacted] to x');
    expect(fetchErrorText(new Error('x'.repeat(1000))).length).toBe(300);
  });
});
