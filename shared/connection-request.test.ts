import { describe, expect, it } from 'vitest';
import { eraOf, parseMcpConnectionRequest, parseMcpConnectionRequestOrWireError } from './connection-request.ts';
import { WireError } from './errors.ts';
import { ValidationError } from './validation.ts';

const REVISION = `sha256:${'a'.repeat(64)}`;
const valid = {
  type: 'mcp',
  connection: { 'server-name': 'files', 'trust-profile-ref': 'workspace', 'trust-profile-revision': REVISION },
};

function problemsOf(input: unknown): string[] {
  try {
    parseMcpConnectionRequest(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected the request to be rejected');
}

describe('McpConnectionRequest', () => {
  it('RemoteRequest_CompiledPolicyProperty_IsNotAccepted', () => {
    const hostile = { ...valid, connection: { ...valid.connection, 'compiled-policy': { args: ['--bind', '/', '/'] } } };
    expect(problemsOf(hostile)).toEqual(['connection.compiled-policy: unknown key']);
    try {
      parseMcpConnectionRequestOrWireError(hostile);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).reason).toBe('invalid-request');
      expect((error as WireError).toJsonRpcError().data.reason).toBe('invalid-request');
    }
  });

  it('rejects a compiled policy smuggled at the top level too', () => {
    expect(problemsOf({ ...valid, 'compiled-policy': {} })).toEqual(['compiled-policy: unknown key']);
  });

  it('rejects unknown keys, a command line among them', () => {
    expect(problemsOf({ ...valid, connection: { ...valid.connection, command: 'rm', args: ['-rf', '/'] } })).toEqual([
      'connection.command: unknown key',
      'connection.args: unknown key',
    ]);
  });

  it('rejects a trust profile reference without its expected revision', () => {
    const problems = problemsOf({ type: 'mcp', connection: { 'server-name': 'files', 'trust-profile-ref': 'workspace' } });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^connection\.trust-profile-revision: trust-profile-ref and trust-profile-revision go together: .*or neither/);
    const revisionOnly = problemsOf({ type: 'mcp', connection: { 'server-name': 'files', 'trust-profile-revision': REVISION } });
    expect(revisionOnly).toEqual([problems[0]]);
  });

  it('rejects server names that could walk a path', () => {
    for (const name of ['../x', 'a/b', '.hidden', '', 'x'.repeat(65)]) {
      expect(problemsOf({ type: 'mcp', connection: { 'server-name': name } })[0]).toMatch(/^connection\.server-name: /);
    }
  });

  it('names the era: legacy when absent, modern when asked, anything else refused', () => {
    expect(eraOf(parseMcpConnectionRequest(valid).connection)).toBe('legacy');
    const modern = parseMcpConnectionRequest({ type: 'mcp', connection: { 'server-name': 'e', agent: 'alice', era: 'modern' } });
    expect(eraOf(modern.connection)).toBe('modern');
    expect(problemsOf({ type: 'mcp', connection: { 'server-name': 'e', era: '2026-07-28' } })[0]).toMatch(/^connection\.era: /);
  });

  it('carries a W3C traceparent, and refuses a malformed one naming the field', () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01';
    expect(parseMcpConnectionRequest({ ...valid, connection: { ...valid.connection, traceparent } }).connection.traceparent).toBe(traceparent);
    const problems = problemsOf({ ...valid, connection: { ...valid.connection, traceparent: 'trace me' } });
    expect(problems).toEqual([expect.stringMatching(/^connection\.traceparent: must be a W3C traceparent/)]);
  });

  it('round-trips valid requests unchanged', () => {
    const requests = [
      valid,
      { type: 'mcp', connection: { 'server-name': 'everything' } },
      { type: 'mcp', connection: { 'server-name': 'docs', target: { type: 'http', url: 'http://127.0.0.1:9000/mcp' } } },
      { type: 'mcp', connection: { 'server-name': 'e', target: { type: 'local' }, session: 'abc-123', agent: 'alice' } },
      { type: 'mcp', connection: { 'server-name': 'e', session: 'modern-1', agent: 'alice', era: 'modern' } },
    ];
    for (const request of requests) {
      const parsed = parseMcpConnectionRequest(JSON.parse(JSON.stringify(request)));
      expect(parsed).toEqual(request);
      expect(parseMcpConnectionRequest(JSON.parse(JSON.stringify(parsed)))).toEqual(parsed);
    }
  });
});
