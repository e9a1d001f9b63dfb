import { describe, expect, it } from 'vitest';
import { FAILURE_REASONS, httpStatusFor, jsonRpcErrorBody, WireError } from './errors.ts';

describe('WireError codes', () => {
  it('emit none that MCP 2026-07-28 forbids or reserves for itself: -32002 and -32042, and -32020 to -32099 (its own errors)', () => {
    const codes = FAILURE_REASONS.map((reason) => jsonRpcErrorBody(1, new WireError(reason, 'x')).error.code);
    for (const code of codes) {
      expect(code).not.toBe(-32002);
      expect(code).not.toBe(-32042);
      expect(code > -32020 || code < -32099).toBe(true);
    }
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('carry the reason in data and a status per reason', () => {
    expect(jsonRpcErrorBody('a', new WireError('server-not-found', 'Server "x" not found')).error).toMatchObject({ code: -31002, data: { reason: 'server-not-found' } });
    expect(httpStatusFor('server-not-found')).toBe(404);
  });
});
