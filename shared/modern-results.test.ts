import { describe, expect, it } from 'vitest';
import { clientInfoOf, discoverResult, logLevelPasses, modernError, modernMetaOf, modernResult, stripModernMeta } from './modern-results.ts';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'agent', version: '1.0.0' },
  'io.modelcontextprotocol/logLevel': 'warning',
};

describe('modern results from a legacy server', () => {
  it('strips the modern _meta keys and keeps progressToken and foreign keys', () => {
    expect(stripModernMeta({ name: 'echo', _meta: { ...META, progressToken: 7, 'com.example/trace': 'x' } })).toEqual({
      name: 'echo',
      _meta: { progressToken: 7, 'com.example/trace': 'x' },
    });
    expect(stripModernMeta({ name: 'echo', _meta: META })).toEqual({ name: 'echo' });
    expect(stripModernMeta(undefined)).toBeUndefined();
  });

  it('reads clientInfo and logLevel, ignoring malformed ones', () => {
    expect(modernMetaOf({ _meta: META })).toMatchObject({ logLevel: 'warning' });
    expect(clientInfoOf({ _meta: META })).toEqual({ name: 'agent', version: '1.0.0' });
    expect(modernMetaOf({ _meta: { 'io.modelcontextprotocol/clientInfo': { name: 3 }, 'io.modelcontextprotocol/logLevel': 'loud' } })).toMatchObject({ logLevel: null });
    expect(clientInfoOf({ _meta: { 'io.modelcontextprotocol/clientInfo': { name: 3 } } })).toBeNull();
  });

  it('reads the client capabilities and progress token, an object and a string or number or nothing', () => {
    const caps = { elicitation: {} };
    expect(modernMetaOf({ _meta: { 'io.modelcontextprotocol/clientCapabilities': caps, progressToken: 7 } })).toMatchObject({ clientCapabilities: caps, progressToken: 7 });
    expect(modernMetaOf({ _meta: { 'io.modelcontextprotocol/clientCapabilities': 'all', progressToken: {} } })).toMatchObject({ clientCapabilities: {}, progressToken: undefined });
  });

  it('passes log lines at or above the threshold only', () => {
    expect(logLevelPasses('error', 'warning')).toBe(true);
    expect(logLevelPasses('warning', 'warning')).toBe(true);
    expect(logLevelPasses('info', 'warning')).toBe(false);
    expect(logLevelPasses('nonsense', 'debug')).toBe(false);
  });

  it('stamps resultType on every result and caching fields on the cacheable ones, keeping what the server set', () => {
    expect(modernResult('tools/call', { content: [] })).toEqual({ content: [], resultType: 'complete' });
    expect(modernResult('tools/list', { tools: [] })).toEqual({ tools: [], resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    expect(modernResult('resources/read', { contents: [], ttlMs: 5000, cacheScope: 'public' })).toMatchObject({ ttlMs: 5000, cacheScope: 'public' });
    expect(modernResult('prompts/get', { messages: [] }, { name: 's', version: '1' })._meta).toEqual({ 'io.modelcontextprotocol/serverInfo': { name: 's', version: '1' } });
  });

  it('keeps the server\'s keys in order and as its own, an own __proto__ key included, with serverInfo last in _meta unless the server set it', () => {
    const info = { name: 'srv', version: '1' };
    const result = JSON.parse('{"content":[],"__proto__":{"resultType":"x"},"_meta":{"a":1}}') as Record<string, unknown>;
    const out = modernResult('tools/call', result, info);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"content":[],"__proto__":{"resultType":"x"},"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1"}},"resultType":"complete"}');
    const own = { 'io.modelcontextprotocol/serverInfo': { name: 'own' }, b: 2 };
    expect(modernResult('tools/call', { _meta: own }, info)._meta).toEqual(own);
    expect(result._meta).toEqual({ a: 1 }); // the server's own objects are not changed
    expect(Object.keys(stripModernMeta({ _meta: { ...META, progressToken: 1 }, name: 'echo' })!)).toEqual(['name', '_meta']);
  });

  it('turns a legacy -32002 into -32602 with data.uri, and adds data.uri to a resources/read -32602', () => {
    const uri = 'file:///nope';
    expect(modernError('resources/read', { uri }, { code: -32002, message: 'Resource not found: file:///nope' }, 'legacy')).toEqual({ code: -32602, message: 'Resource not found', data: { uri } });
    expect(modernError('resources/read', { uri }, { code: -32602, message: 'Unknown resource' }, 'legacy')).toEqual({ code: -32602, message: 'Unknown resource', data: { uri } });
    expect(modernError('resources/read', { uri }, { code: -32602, message: 'x', data: { uri: 'file:///other' } }, 'legacy').data).toEqual({ uri: 'file:///other' });
    const toolError = { code: -32602, message: 'Bad arguments' };
    expect(modernError('tools/call', { name: 'echo' }, toolError, 'legacy')).toBe(toolError);
    // Codes 2026-07-28 forbids or keeps for its own errors never reach a modern agent as the server sent them.
    const elicitations = [{ mode: 'url', url: 'https://x.example/auth', message: 'Sign in', elicitationId: 'e1' }];
    expect(modernError('tools/call', { name: 'pay' }, { code: -32042, message: 'Sign in first', data: { elicitations } }, 'legacy')).toEqual({ code: -32603, message: 'Sign in first', data: { elicitations, serverCode: -32042 } });
    expect(modernError('tools/call', { name: 'x' }, { code: -32050, message: 'app-specific' }, 'legacy')).toEqual({ code: -32603, message: 'app-specific', data: { serverCode: -32050 } });
    // -32020 to -32022 mean what 2026-07-28 says only from a modern server: a legacy one's are its own.
    expect(modernError('tools/call', { name: 'x' }, { code: -32021, message: 'Missing required client capability' }, 'either').code).toBe(-32021);
    expect(modernError('tools/call', { name: 'x' }, { code: -32021, message: 'quota' }, 'legacy')).toEqual({ code: -32603, message: 'quota', data: { serverCode: -32021 } });
    expect(modernError('tools/call', { name: 'x' }, { code: -32050, message: 'odd', data: 'text' }, 'legacy').data).toEqual({ serverData: 'text', serverCode: -32050 });
    expect(modernError('tools/call', { name: 'x' }, { code: -32019, message: 'legacy range' }, 'legacy').code).toBe(-32019);
  });

  it('builds server/discover from the initialize result, serverInfo in _meta', () => {
    const initialize = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'everything', version: '2' }, instructions: 'Be kind' };
    expect(discoverResult(initialize)).toEqual({
      resultType: 'complete',
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: {} },
      instructions: 'Be kind',
      ttlMs: 0,
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'everything', version: '2' } },
    });
  });
});
