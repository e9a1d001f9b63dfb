import { describe, expect, it } from 'vitest';
import { headerMismatch, methodNotFound, missingCapability, rejectionResponse, statusForUpstreamError, unsupportedVersion } from './modern-errors.ts';

describe('modern error answers', () => {
  it('carry the spec\'s code and data fields beside a Switchyard reason, and echo the id', async () => {
    const response = rejectionResponse(301, unsupportedVersion('1900-01-01'));
    expect(response.status).toBe(400);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(await response.json()).toEqual({
      jsonrpc: '2.0', id: 301,
      error: { code: -32022, message: expect.stringMatching(/^Unsupported protocol version: 1900-01-01/), data: { supported: ['2026-07-28'], requested: '1900-01-01', reason: 'invalid-request' } },
    });
    expect(missingCapability({ sampling: {} })).toMatchObject({ status: 400, code: -32021, data: { requiredCapabilities: { sampling: {} }, reason: 'invalid-request' } });
    expect(headerMismatch('x')).toMatchObject({ status: 400, code: -32020, message: 'Header mismatch: x' });
  });

  it('echo an unsupported version cut to 64 characters, in data as in the message', () => {
    const requested = `v${'9'.repeat(4000)}`;
    const rejection = unsupportedVersion(requested);
    expect(rejection.data.requested).toBe(requested.slice(0, 64));
    expect(rejection.message).toContain(`${requested.slice(0, 64)};`);
  });

  it('say why a method is not found', () => {
    expect(methodNotFound('ping', 'removed')).toMatchObject({ status: 404, code: -32601, message: expect.stringContaining('removed in protocol version 2026-07-28') });
    expect(methodNotFound('subscriptions/listen', 'not-yet').message).toContain('not supported yet');
  });

  it('keep 400 for the modern errors a server returns, 404 for a method it does not implement, 200 for any other error answer', () => {
    expect([-32020, -32021, -32022].map(statusForUpstreamError)).toEqual([400, 400, 400]);
    expect(statusForUpstreamError(-32601)).toBe(404);
    expect([-32602, -32603, -32000, undefined].map(statusForUpstreamError)).toEqual([200, 200, 200, 200]);
  });
});
