import { describe, expect, it } from 'vitest';
import { hasModernClaim, logLevelProblem, parseRequestMeta, requestMetaSchema } from './request-meta.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('modern request _meta', () => {
  it('accepts the required keys, keeps unknown ones and a progress token', () => {
    const result = parseRequestMeta({ _meta: { ...META, progressToken: 'p1', 'com.example/x': 1 } });
    expect(result).toEqual({ ok: true, meta: { ...META, progressToken: 'p1', 'com.example/x': 1 } });
  });

  it('names the field that is missing or wrong', () => {
    expect(parseRequestMeta(undefined)).toMatchObject({ ok: false, problem: expect.stringContaining('_meta is missing') });
    expect(parseRequestMeta({ _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } })).toMatchObject({ ok: false, problem: expect.stringContaining('protocolVersion"] is missing') });
    expect(parseRequestMeta({ _meta: { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' } })).toMatchObject({ ok: false, problem: expect.stringContaining('clientCapabilities"] is invalid') });
    expect(parseRequestMeta({ _meta: { ...META, 'io.modelcontextprotocol/clientInfo': { name: 'x' } } })).toMatchObject({ ok: false, problem: expect.stringContaining('clientInfo.version') });
  });

  it('sees the claim whatever the version says, and checks logLevel on its own', () => {
    expect(hasModernClaim({ _meta: { 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' } })).toBe(true);
    expect(hasModernClaim({ protocolVersion: '2025-11-25' })).toBe(false);
    const parsed = parseRequestMeta({ _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'verbose' } });
    expect(parsed.ok && logLevelProblem(parsed.meta)).toContain('not a logging level');
  });

  it('accepts exactly what the schema accepts, the common shapes recognized without it included', () => {
    const versions = ['2026-07-28', '', 7, undefined];
    const capabilities = [{}, { roots: {} }, { roots: 1 }, { 'com.example/x': 1 }, [], 'all', null, undefined];
    const infos = [undefined, { name: 'a', version: '1' }, { name: 'a' }, { name: 'a', version: 1 }, { name: 'a', version: '1', title: 2 }, { name: 'a', version: '1', title: 't', extra: 5 }, [], null];
    const tokens = [undefined, 'p', 1, {}, null];
    for (const version of versions) for (const caps of capabilities) for (const info of infos) for (const progressToken of tokens) {
      const meta = {
        ...(version !== undefined ? { 'io.modelcontextprotocol/protocolVersion': version } : {}),
        ...(caps !== undefined ? { 'io.modelcontextprotocol/clientCapabilities': caps } : {}),
        ...(info !== undefined ? { 'io.modelcontextprotocol/clientInfo': info } : {}),
        ...(progressToken !== undefined ? { progressToken } : {}),
      };
      const parsed = parseRequestMeta({ _meta: meta });
      expect([JSON.stringify(meta), parsed.ok]).toEqual([JSON.stringify(meta), requestMetaSchema().safeParse(meta).success]);
      if (parsed.ok) expect(parsed.meta).toEqual(meta);
    }
  });
});
