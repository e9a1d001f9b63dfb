import { describe, expect, it } from 'vitest';
import { parseMcpConnectionRequestOrWireError } from './connection-request.ts';
import { WireError } from './errors.ts';
import { ConnectionRequestMemo } from './connection-request-memo.ts';

const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const REVISION = `sha256:${'a'.repeat(64)}`;
const request = (extra: Record<string, unknown> = {}, outer: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'mcp',
  connection: { 'server-name': 'everything', 'trust-profile-ref': 'workspace', 'trust-profile-revision': REVISION, agent: 'alice', era: 'modern', traceparent: TRACE, ...extra },
  ...outer,
});

/** What an answer is: the request's JSON (key order included), or the error's reason and message. */
function outcome(parse: () => unknown): unknown {
  try {
    return JSON.stringify(parse());
  } catch (error) {
    return error instanceof WireError ? [error.reason, error.message] : error;
  }
}

describe('ConnectionRequestMemo', () => {
  it('answers what the full parse answers, the first time and every time after', () => {
    const memo = new ConnectionRequestMemo();
    const http = { type: 'http', url: 'https://docs.example.com/mcp', headers: { 'x-a': '1' } };
    for (let i = 0; i < 3; i++) {
      for (const input of [request({ session: `s-${i}` }), request({ traceparent: undefined }), request({ target: http }), request({ target: { type: 'local' } }), request({ 'trust-profile-ref': undefined, 'trust-profile-revision': undefined })]) {
        expect(outcome(() => memo.parse(input))).toEqual(outcome(() => parseMcpConnectionRequestOrWireError(input)));
      }
    }
  });

  it('refuses exactly what the parse refuses, after the same agent and server passed', () => {
    const memo = new ConnectionRequestMemo();
    memo.parse(request());
    memo.parse(request({ target: { type: 'local' } }));
    const bad = [
      request({ session: 'has space' }),
      request({ session: 7 }),
      request({ session: 'x'.repeat(129) }),
      request({ agent: 'al ice' }),
      request({ era: 'future' }),
      request({ traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' }),
      request({ traceparent: ` ${TRACE}` }),
      request({ 'compiled-policy': { allow: '*' } }),
      request({ agent: null }),
      request({ target: null }),
      request({ target: { type: 'local', extra: 'x' } }),
      request({ 'trust-profile-revision': undefined }),
      request({}, { extra: true }),
      request({}, { type: 'mcp2' }),
    ];
    for (const input of bad) {
      const refusal = outcome(() => parseMcpConnectionRequestOrWireError(input));
      expect(refusal).toEqual(['invalid-request', expect.any(String)]);
      expect(outcome(() => memo.parse(input))).toEqual(refusal);
    }
  });

  it('parses in full what is not a plain object of strings, so a look-alike is never taken for a checked one', () => {
    const memo = new ConnectionRequestMemo();
    memo.parse(request());
    const classy = Object.assign(Object.create({ inherited: true }) as Record<string, unknown>, request());
    expect(outcome(() => memo.parse(classy))).toEqual(outcome(() => parseMcpConnectionRequestOrWireError(classy)));
  });
});
