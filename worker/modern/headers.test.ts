import { describe, expect, it } from 'vitest';
import { decodeHeaderValue, isLegacyVersion, protocolVersionHeader, trimOws } from './headers.ts';

const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

describe('modern headers', () => {
  it('decodes a Base64 sentinel to its UTF-8 value', () => {
    expect(decodeHeaderValue('=?base64?SGVsbG8=?=')).toEqual({ ok: true, value: 'Hello' });
    expect(decodeHeaderValue(`=?base64?${b64('  ünï  ')}?=`)).toEqual({ ok: true, value: '  ünï  ' });
  });

  it('refuses a sentinel with bad padding or characters outside the alphabet', () => {
    expect(decodeHeaderValue('=?base64?SGVsbG8?=').ok).toBe(false);
    expect(decodeHeaderValue('=?base64?SGVs!!!bG8=?=').ok).toBe(false);
  });

  it('refuses a sentinel whose bytes are not UTF-8', () => {
    expect(decodeHeaderValue(`=?base64?${btoa('\xff\xfe')}?=`)).toMatchObject({ ok: false, problem: expect.stringContaining('UTF-8') });
  });

  it('says a sentinel header was sent more than once when Headers folded it with another value', () => {
    const twice = new Headers([['mcp-name', '=?base64?SGVsbG8=?='], ['mcp-name', '=?base64?SGVsbG8=?=']]);
    expect(decodeHeaderValue(twice.get('mcp-name')!)).toEqual({ ok: false, problem: 'it was sent more than once' });
    expect(decodeHeaderValue('=?base64?SGVsbG8=?=, echo')).toEqual({ ok: false, problem: 'it was sent more than once' });
    expect(decodeHeaderValue('echo, =?base64?SGVsbG8=?=')).toEqual({ ok: false, problem: 'it was sent more than once' });
    expect(decodeHeaderValue('a, b')).toEqual({ ok: true, value: 'a, b' });
  });

  it('takes a value missing either marker as a literal', () => {
    expect(decodeHeaderValue('SGVsbG8=')).toEqual({ ok: true, value: 'SGVsbG8=' });
    expect(decodeHeaderValue('=?base64?SGVsbG8=')).toEqual({ ok: true, value: '=?base64?SGVsbG8=' });
    expect(decodeHeaderValue('SGVsbG8=?=')).toEqual({ ok: true, value: 'SGVsbG8=?=' });
  });

  it('trims spaces and tabs around a value, and keeps the inside', () => {
    expect(trimOws(' \t echo  tool\t ')).toBe('echo  tool');
    expect(decodeHeaderValue('  echo  ')).toEqual({ ok: true, value: 'echo' });
  });

  it('refuses characters outside visible ASCII, space and tab', () => {
    expect(decodeHeaderValue('caf\u00e9').ok).toBe(false);
  });

  it('reads the version header case-insensitively and knows the legacy versions', () => {
    expect(protocolVersionHeader(new Headers({ 'MCP-PROTOCOL-VERSION': ' 2026-07-28 ' }))).toBe('2026-07-28');
    expect(protocolVersionHeader(new Headers())).toBeUndefined();
    expect(isLegacyVersion('2025-11-25')).toBe(true);
    expect(isLegacyVersion('2026-07-28')).toBe(false);
  });
});
