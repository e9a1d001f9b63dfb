import { describe, expect, it } from 'vitest';
import { methodSupport, MODERN_CLIENT_METHODS } from './methods.ts';

describe('modern method set', () => {
  it('is the spec\'s ClientRequest set, with Mcp-Name mirrored from name or uri', () => {
    expect(Object.keys(MODERN_CLIENT_METHODS).sort()).toEqual([
      'completion/complete', 'prompts/get', 'prompts/list', 'resources/list', 'resources/read', 'resources/templates/list',
      'server/discover', 'subscriptions/listen', 'tools/call', 'tools/list',
    ]);
    expect(methodSupport('tools/call')).toEqual({ kind: 'served', name: 'name' });
    expect(methodSupport('resources/read')).toEqual({ kind: 'served', name: 'uri' });
    expect(methodSupport('tools/list')).toEqual({ kind: 'served' });
  });

  it('tells removed and unknown methods apart, and serves subscriptions/listen', () => {
    expect(methodSupport('initialize').kind).toBe('removed');
    expect(methodSupport('toString').kind).toBe('unknown');
    expect(methodSupport('subscriptions/listen')).toEqual({ kind: 'served' });
  });
});
