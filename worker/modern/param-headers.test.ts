import { describe, expect, it } from 'vitest';
import { PARAM_HEADERS_META_KEY, paramHeadersSchema } from '../../shared/param-headers-meta.ts';
import { readParamHeaders, withParamHeaders } from './param-headers.ts';

describe('Mcp-Param-* headers', () => {
  it('decodes each one by lower-case name: trimmed, Base64 sentinel decoded', () => {
    const read = readParamHeaders(new Headers({ 'Mcp-Param-Region': ' us-west1 ', 'mcp-param-greeting': '=?base64?SGVsbG8sIOS4lueVjA==?=', 'mcp-name': 'x' }));
    expect(read).toEqual({ ok: true, values: { region: 'us-west1', greeting: 'Hello, 世界' } });
  });

  it('refuses a malformed one with -32020 naming it', () => {
    const read = readParamHeaders(new Headers({ 'mcp-param-text': '=?base64?SGVsbG8?=' }));
    expect(read).toMatchObject({ ok: false, rejection: { status: 400, code: -32020, message: expect.stringContaining('Mcp-Param-text') } });
  });

  it('reports the first problem in header order, and refuses more than 64', () => {
    const two = readParamHeaders(new Headers({ 'mcp-param-b': '=?base64?SGVsbG8?=', 'mcp-param-a': '=?base64?SGVsbG8?=' }));
    expect(two).toMatchObject({ ok: false, rejection: { message: expect.stringContaining('Mcp-Param-a header') } });
    const many = readParamHeaders(new Headers(Array.from({ length: 65 }, (_, i) => [`mcp-param-p${i}`, 'v'] as [string, string])));
    expect(many).toMatchObject({ ok: false, rejection: { code: -32020, message: expect.stringContaining('more than 64 Mcp-Param-* headers') } });
    expect(readParamHeaders(new Headers(Array.from({ length: 64 }, (_, i) => [`mcp-param-p${i}`, 'v'] as [string, string])))).toMatchObject({ ok: true });
  });

  it("refuses one longer than the host takes, naming it and the limit, rather than let the host drop them all", () => {
    const value = readParamHeaders(new Headers({ 'mcp-param-region': 'us-west1', 'mcp-param-trace': 'x'.repeat(9000) }));
    expect(value).toEqual({ ok: false, rejection: { status: 400, code: -32020, message: 'Header mismatch: the Mcp-Param-trace header is longer than 8192 characters (decoded)', data: { reason: 'invalid-request' } } });
    const name = readParamHeaders(new Headers({ [`mcp-param-${'n'.repeat(257)}`]: 'v' }));
    expect(name).toMatchObject({ ok: false, rejection: { code: -32020, message: `Header mismatch: the name of the Mcp-Param-${'n'.repeat(64)}… header is longer than 256 characters after Mcp-Param-`, data: { reason: 'invalid-request' } } });
    const longest = readParamHeaders(new Headers({ [`mcp-param-${'n'.repeat(256)}`]: 'x'.repeat(8192) }));
    expect(longest.ok && paramHeadersSchema().safeParse(longest.values).success).toBe(true);
  });

  it("puts the values in _meta for the host, replacing what an agent sent there", () => {
    const request = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name: 't', _meta: { [PARAM_HEADERS_META_KEY]: { region: 'forged' }, progressToken: 'p' } } };
    expect(withParamHeaders(request, { region: 'eu' }).params!._meta).toEqual({ [PARAM_HEADERS_META_KEY]: { region: 'eu' }, progressToken: 'p' });
    expect(withParamHeaders({ ...request, method: 'tools/list' }, null).params!._meta).toEqual({ progressToken: 'p' });
  });
});
