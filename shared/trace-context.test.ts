import { describe, expect, it } from 'vitest';
import { childSpan, formatTraceparent, parseTraceparent, TraceparentSchema, traceparentOfParams, withTraceparent } from './trace-context.ts';

const VALID = '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01';

describe('trace context', () => {
  it('parses a W3C traceparent and formats it back', () => {
    const context = parseTraceparent(VALID);
    expect(context).toEqual({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: '00f067aa0ba902b7', flags: '01' });
    expect(formatTraceparent(context!)).toBe(VALID);
  });

  it('ignores malformed values, zero ids, other versions and upper case, as a receiver must', () => {
    for (const value of [undefined, 42, '', 'garbage', VALID.toUpperCase(), `01${VALID.slice(2)}`, `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `00-0af7651916cd43dd8448eb211c80319c-${'0'.repeat(16)}-01`, `${VALID}-extra`]) {
      expect(parseTraceparent(value)).toBeNull();
    }
  });

  it('validates the channel request field with zod, with a message saying what is expected', () => {
    expect(TraceparentSchema.safeParse(VALID).success).toBe(true);
    const bad = TraceparentSchema.safeParse('00-xyz');
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toContain('W3C traceparent');
    expect(TraceparentSchema.safeParse(`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`).success).toBe(false);
  });

  it('starts a child span in the parent\'s trace, or a new sampled trace without a parent', () => {
    const parent = parseTraceparent(VALID)!;
    const child = childSpan(parent);
    expect(child).toMatchObject({ traceId: parent.traceId, flags: '01', parentSpanId: parent.spanId });
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(child.spanId).not.toBe(parent.spanId);
    const root = childSpan(null);
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.parentSpanId).toBeNull();
    expect(parseTraceparent(formatTraceparent(root))).not.toBeNull();
  });

  it('reads and writes params._meta.traceparent, keeping every other _meta key and the message', () => {
    const message = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', _meta: { progressToken: 7 } } };
    const span = childSpan(null);
    const traced = withTraceparent(message, span);
    expect(traced).toEqual({ ...message, params: { name: 'echo', _meta: { progressToken: 7, traceparent: formatTraceparent(span) } } });
    expect(message.params._meta).toEqual({ progressToken: 7 });
    expect(traceparentOfParams(traced.params)).toMatchObject({ traceId: span.traceId, spanId: span.spanId });
    expect(traceparentOfParams({ _meta: { traceparent: 'nope' } })).toBeNull();
    expect(withTraceparent({ method: 'x' } as { method: string; params?: unknown }, span).params).toEqual({ _meta: { traceparent: formatTraceparent(span) } });
  });
});
