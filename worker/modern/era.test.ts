import { describe, expect, it } from 'vitest';
import { bodyClaimsModern, classifyByHeaders, classifyEra } from './era.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const post = (body: unknown, headers: Record<string, string> = {}) =>
  new Request('http://localhost/servers/s/mcp', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('era classification', () => {
  it('sends GET and DELETE without a session to 405 only when they claim a modern version', () => {
    expect(classifyByHeaders('GET', new Headers({ 'mcp-protocol-version': '2026-07-28' }))).toBe('reject');
    expect(classifyByHeaders('DELETE', new Headers({ 'mcp-protocol-version': '2026-07-28' }))).toBe('reject');
    expect(classifyByHeaders('GET', new Headers())).toBe('legacy');
    expect(classifyByHeaders('GET', new Headers({ 'mcp-protocol-version': '2025-11-25' }))).toBe('legacy');
    expect(classifyByHeaders('GET', new Headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-session-id': 'x' }))).toBe('legacy');
  });

  it('decides a POST by its version header where it can, and reads the body only without one', () => {
    expect(classifyByHeaders('POST', new Headers({ 'mcp-protocol-version': '2025-11-25' }))).toBe('legacy');
    expect(classifyByHeaders('POST', new Headers({ 'mcp-protocol-version': 'v999.0.0' }))).toBe('modern');
    expect(classifyByHeaders('POST', new Headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-session-id': 'x' }))).toBe('modern');
    expect(classifyByHeaders('POST', new Headers())).toBe('peek');
  });

  it('finds the modern claim in params._meta, whatever the method', () => {
    expect(bodyClaimsModern({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { _meta: META } })).toBe(true);
    expect(bodyClaimsModern({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25' } })).toBe(false);
    expect(bodyClaimsModern([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }])).toBe(false);
  });

  it('finds the claim in a small body that has no version header', async () => {
    const text = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { _meta: META } });
    const request = new Request('http://localhost/x', { method: 'POST', headers: { 'content-length': String(text.length) }, body: text });
    expect(await classifyEra(request)).toMatchObject({ kind: 'modern', body: { kind: 'json', value: { id: 2 } } });
  });

  it('leaves a legacy initialize readable for the session path after peeking at it', async () => {
    const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'a', version: '1' } } });
    const request = new Request('http://localhost/x', { method: 'POST', headers: { 'content-length': String(text.length) }, body: text });
    expect(await classifyEra(request)).toEqual({ kind: 'legacy' });
    expect(JSON.parse(await request.text()).method).toBe('initialize');
  });

  it('reads a modern body once, parsed, and refuses one nested too deep', async () => {
    const era = await classifyEra(post({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: META } }, { 'mcp-protocol-version': '2026-07-28' }));
    expect(era).toMatchObject({ kind: 'modern', body: { kind: 'json', value: { id: 7 } } });
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = [deep];
    const tooDeep = await classifyEra(post({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { _meta: META, arguments: { deep } } }, { 'mcp-protocol-version': '2026-07-28' }));
    expect(tooDeep).toEqual({ kind: 'modern', body: { kind: 'too-deep', id: 8 } });
  });
});
