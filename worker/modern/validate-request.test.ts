import { describe, expect, it } from 'vitest';
import { validateModernRequest } from './validate-request.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const HEADERS = { 'mcp-protocol-version': '2026-07-28' };

function check(method: string, params: Record<string, unknown>, headers: Record<string, string> = {}, id: string | number = 1) {
  return validateModernRequest({ jsonrpc: '2.0', id, method, params }, new Headers({ ...HEADERS, 'mcp-method': method, ...headers }));
}
const rejection = (result: ReturnType<typeof check>) => (result.kind === 'rejected' ? { id: result.id, status: result.rejection.status, code: result.rejection.code, data: result.rejection.data } : result.kind);

describe('modern request validation', () => {
  it('accepts a well-formed request and hands back its meta', () => {
    const result = check('tools/call', { name: 'echo', arguments: { message: 'hi' }, _meta: META }, { 'mcp-name': 'echo' });
    expect(result).toMatchObject({ kind: 'request', request: { id: 1, method: 'tools/call' }, meta: META });
  });

  it('refuses a missing or incomplete _meta with -32602 and 400, before the header check', () => {
    expect(rejection(check('server/discover', {}, {}, 101))).toMatchObject({ id: 101, status: 400, code: -32602 });
    expect(rejection(check('server/discover', { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } }, {}, 102))).toMatchObject({ id: 102, code: -32602 });
    const noCaps = check('server/discover', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }, {}, 104);
    expect(noCaps.kind === 'rejected' && noCaps.rejection.message).toContain('clientCapabilities');
  });

  it('accepts a request without clientInfo', () => {
    expect(check('server/discover', { _meta: META }).kind).toBe('request');
  });

  it('refuses a version header that differs from _meta with -32020, before the version check', () => {
    const meta = { ...META, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' };
    expect(rejection(check('server/discover', { _meta: meta }, {}, 302))).toMatchObject({ id: 302, status: 400, code: -32020, data: { reason: 'invalid-request' } });
    expect(rejection(validateModernRequest({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: META } }, new Headers({ 'mcp-method': 'tools/list' })))).toMatchObject({ code: -32020 });
  });

  it('refuses an unsupported version with -32022 naming what is supported and what was asked', () => {
    const meta = { ...META, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' };
    expect(rejection(check('server/discover', { _meta: meta }, { 'mcp-protocol-version': 'v999.0.0' }, 301))).toEqual({
      id: 301, status: 400, code: -32022, data: { supported: ['2026-07-28'], requested: 'v999.0.0', reason: 'invalid-request' },
    });
  });

  it('checks Mcp-Method exactly (case-sensitive) and Mcp-Name against params.name or params.uri', () => {
    const list = { _meta: META };
    expect(rejection(validateModernRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: list }, new Headers(HEADERS)))).toMatchObject({ code: -32020 });
    expect(rejection(check('tools/list', list, { 'mcp-method': 'TOOLS/LIST' }))).toMatchObject({ code: -32020 });
    expect(rejection(check('tools/list', list, { 'mcp-method': 'prompts/list' }))).toMatchObject({ code: -32020 });
    // Only Mcp-Name and Mcp-Param-* take the Base64 sentinel: an encoded method is a mismatch,
    // since an intermediary routing on Mcp-Method would see another value than the one run.
    expect(rejection(check('tools/list', list, { 'mcp-method': `=?base64?${btoa('tools/list')}?=` }))).toMatchObject({ status: 400, code: -32020 });
    expect(check('tools/list', list, { 'mcp-method': ' tools/list ' }).kind).toBe('request');
    expect(rejection(check('tools/list', list, { 'mcp-method': 'tools/list\u0001' }))).toMatchObject({ code: -32020 });
    const call = { name: 'echo', _meta: META };
    expect(rejection(check('tools/call', call))).toMatchObject({ status: 400, code: -32020 });
    expect(rejection(check('tools/call', call, { 'mcp-name': 'wrong_tool_name' }))).toMatchObject({ code: -32020 });
    expect(check('tools/call', call, { 'MCP-NAME': '  echo  ' }).kind).toBe('request');
    expect(check('tools/call', call, { 'mcp-name': `=?base64?${btoa('echo')}?=` }).kind).toBe('request');
    expect(rejection(check('tools/call', call, { 'mcp-name': '=?base64?ZWNobw?=' }))).toMatchObject({ code: -32020 });
    const read = { uri: 'test://static/resource/1', _meta: META };
    expect(check('resources/read', read, { 'mcp-name': 'test://static/resource/1' }).kind).toBe('request');
    expect(rejection(check('resources/read', read, { 'mcp-name': 'test://other' }))).toMatchObject({ code: -32020 });
  });

  it('answers unknown and removed methods 404 with -32601', () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'unknown/method']) {
      expect(rejection(check(method, { _meta: META }, {}, 9))).toMatchObject({ id: 9, status: 404, code: -32601 });
    }
  });

  it('refuses an unknown logLevel with -32602 and accepts a known one', () => {
    expect(rejection(check('tools/list', { _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'loud' } }))).toMatchObject({ status: 400, code: -32602 });
    expect(check('tools/list', { _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'debug' } }).kind).toBe('request');
  });

  it('takes a notification without checks, and refuses a batch or a non-request', () => {
    expect(validateModernRequest({ jsonrpc: '2.0', method: 'notifications/cancelled', params: {} }, new Headers()).kind).toBe('notification');
    expect(rejection(validateModernRequest([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }], new Headers(HEADERS)))).toMatchObject({ id: null, code: -32600 });
    expect(rejection(validateModernRequest({ jsonrpc: '2.0', id: 4, result: {} }, new Headers(HEADERS)))).toMatchObject({ id: 4, code: -32600 });
  });

  it('answers a version header it does not speak -32022 when the body has no modern _meta either, naming what it speaks', () => {
    const typo = check('ping', {}, { 'mcp-protocol-version': '1999-01-01' });
    expect(rejection(typo)).toMatchObject({ id: 1, status: 400, code: -32022, data: { requested: '1999-01-01', reason: 'invalid-request' } });
    // A version it speaks with no _meta is still told what the body lacks.
    expect(rejection(check('ping', {}))).toMatchObject({ id: 1, status: 400, code: -32602 });
  });

  it('refuses an id past 2^53, which is no longer the one sent and which a server would drop unanswered', () => {
    const unsafe = check('tools/list', { _meta: META }, {}, 2 ** 53);
    expect(rejection(unsafe)).toMatchObject({ id: null, status: 400, code: -32600 });
    expect(unsafe.kind === 'rejected' && unsafe.rejection.message).toContain('the request id must be a string or a safe integer');
    expect(check('tools/list', { _meta: META }, {}, Number.MAX_SAFE_INTEGER).kind).toBe('request');
  });

  it('refuses call or prompt arguments that are no object with -32602, naming them', () => {
    for (const [method, header] of [['tools/call', 'echo'], ['prompts/get', 'greet']] as const) {
      for (const args of ['zzz', [1], null]) {
        const result = check(method, { name: header, arguments: args, _meta: META }, { 'mcp-name': header });
        expect(rejection(result)).toMatchObject({ id: 1, status: 400, code: -32602, data: { reason: 'invalid-request' } });
        expect(result.kind === 'rejected' && result.rejection.message).toBe('Invalid params: params.arguments must be an object');
      }
      expect(check(method, { name: header, _meta: META }, { 'mcp-name': header }).kind).toBe('request');
    }
  });
});
