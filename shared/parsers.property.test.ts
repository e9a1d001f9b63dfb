import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseConnectionDescriptor } from './descriptors.ts';
import { parseMcpConnectionRequest } from './connection-request.ts';
import { MAX_FRAME_BYTES } from './frames.ts';
import { readFrame } from './link/frame-reader.ts';
import { ValidationError } from './validation.ts';

/** Random JSON biased towards the shapes the parsers look at, so the fuzz gets past the first check. */
const nearMiss = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue(),
    tie('descriptor'),
    tie('request'),
    tie('frame'),
  ),
  descriptor: fc.record(
    {
      type: fc.constantFrom('local', 'http', 'user-computer-profile', 'reverse-http', 'ssh', ''),
      'entity-id': fc.oneof(fc.string(), fc.constant('../x'), fc.constant('host-1')),
      url: fc.oneof(fc.webUrl(), fc.string()),
      target: tie('value'),
      headers: fc.dictionary(fc.string(), fc.jsonValue()),
    },
    { requiredKeys: [] },
  ),
  request: fc.record(
    {
      type: fc.constantFrom('mcp', 'chat', 'MCP'),
      connection: fc.record(
        {
          'server-name': fc.oneof(fc.string(), fc.constant('files')),
          'trust-profile-ref': fc.string(),
          'trust-profile-revision': fc.oneof(fc.string(), fc.constant(`sha256:${'0'.repeat(64)}`)),
          'compiled-policy': fc.jsonValue(),
          target: tie('value'),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  ),
  frame: fc.record(
    {
      v: fc.constantFrom(1, 2, '1'),
      type: fc.constantFrom('channel-open', 'channel-message', 'channel-close', 'keepalive', 'link-close', 'nope'),
      channel: fc.oneof(fc.integer(), fc.double()),
      id: fc.integer(),
      message: fc.jsonValue(),
      reason: fc.string(),
    },
    { requiredKeys: [] },
  ),
}));

function onlyValidationErrors<T>(parse: (input: T) => unknown) {
  return (input: T) => {
    try {
      parse(input);
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues.length).toBeGreaterThan(0);
    }
  };
}

describe('parsers under random input', () => {
  it('parseConnectionDescriptor throws nothing but ValidationError', () => {
    fc.assert(fc.property(nearMiss.value, onlyValidationErrors(parseConnectionDescriptor)), { numRuns: 2000 });
  });

  it('parseMcpConnectionRequest throws nothing but ValidationError', () => {
    fc.assert(fc.property(nearMiss.value, onlyValidationErrors(parseMcpConnectionRequest)), { numRuns: 2000 });
  });

  it('the live frame reader throws nothing and classifies every text, JSON or not', () => {
    const kinds = new Set(['message', 'frame', 'too-large', 'wrong-version', 'malformed']);
    const classified = (text: string): void => {
      expect(kinds.has(readFrame(text, MAX_FRAME_BYTES).kind)).toBe(true);
    };
    fc.assert(fc.property(nearMiss.value, (v) => classified(JSON.stringify(v) ?? 'null')), { numRuns: 2000 });
    fc.assert(fc.property(fc.string(), classified), { numRuns: 1000 });
  });
});
