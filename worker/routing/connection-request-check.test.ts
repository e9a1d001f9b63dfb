import { describe, expect, it } from 'vitest';
import { parseMcpConnectionRequestOrWireError, type McpConnection } from '../../shared/connection-request.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import { WireError } from '../../shared/errors.ts';
import { ConnectionRequestCheck } from './connection-request-check.ts';

const descriptor = (): ConnectionDescriptor => ({ type: 'user-computer-profile', 'entity-id': 'laptop', target: { type: 'local' } });
const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const REVISION = `sha256:${'a'.repeat(64)}`;
const connection = (extra: Record<string, unknown> = {}): McpConnection =>
  ({ 'server-name': 'everything', 'trust-profile-ref': 'workspace', 'trust-profile-revision': REVISION, session: 's-1', agent: 'alice', traceparent: TRACE, ...extra }) as McpConnection;

/** What the full parse alone answers: the request, or the error it throws. */
function parsed(input: McpConnection, target?: unknown): unknown {
  try {
    return JSON.stringify(parseMcpConnectionRequestOrWireError({ type: 'mcp', connection: target === undefined ? input : { ...input, target } }));
  } catch (error) {
    return error instanceof WireError ? [error.reason, error.message] : error;
  }
}

function checked(check: ConnectionRequestCheck, d: ConnectionDescriptor, input: McpConnection, target?: unknown): unknown {
  try {
    return JSON.stringify(check.request(d, input, target as never));
  } catch (error) {
    return error instanceof WireError ? [error.reason, error.message] : error;
  }
}

describe('ConnectionRequestCheck', () => {
  it('sends what the full parse returns, the first time and every time after, per call fields included', () => {
    const check = new ConnectionRequestCheck();
    const [local, remote] = [descriptor(), descriptor()];
    const http = { type: 'http', url: 'https://docs.example.com/mcp', headers: { 'x-a': '1' } };
    for (let i = 0; i < 3; i++) {
      for (const input of [connection({ session: `s-${i}` }), connection({ era: 'modern', session: `modern-${i}`, traceparent: undefined }), connection({ 'trust-profile-ref': undefined, 'trust-profile-revision': undefined })]) {
        expect(checked(check, local, input)).toEqual(parsed(input));
        expect(checked(check, remote, input, http)).toEqual(parsed(input, http));
      }
    }
  });

  it('refuses exactly what the parse refuses, after the same agent and server passed', () => {
    const check = new ConnectionRequestCheck();
    const d = descriptor();
    expect(checked(check, d, connection())).toEqual(parsed(connection()));
    const bad = [
      connection({ session: 'has space' }),
      connection({ session: 'x'.repeat(129) }),
      connection({ era: 'future' }),
      connection({ traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' }),
      connection({ traceparent: ` ${TRACE}` }),
      connection({ 'compiled-policy': { allow: '*' } }),
      connection({ 'trust-profile-revision': undefined }),
      connection({ agent: 'al ice' }),
    ];
    for (const input of bad) {
      const refusal = parsed(input);
      expect(refusal).toEqual(['invalid-request', expect.any(String)]);
      expect(checked(check, d, input)).toEqual(refusal);
    }
  });

  it('starts afresh for a new descriptor (a reloaded config), with the same answers', () => {
    const check = new ConnectionRequestCheck();
    expect(checked(check, descriptor(), connection())).toEqual(parsed(connection()));
    expect(checked(check, descriptor(), connection({ session: 's-2' }))).toEqual(parsed(connection({ session: 's-2' })));
  });
});
