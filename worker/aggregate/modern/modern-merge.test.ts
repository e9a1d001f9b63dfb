import { describe, expect, it } from 'vitest';
import { cacheHints, mergeDiscover, mergeList } from './modern-merge.ts';

const failure = { reason: 'host-offline' as const, message: 'Host b is not linked' };

describe('modern aggregate merge', () => {
  it('takes the smallest ttlMs, a missing hint or a failed server counting as 0, and is private even when every server said public: the merged answer is one agent\'s', () => {
    expect(cacheHints([{ ttlMs: 60000, cacheScope: 'public' }, { ttlMs: 5000, cacheScope: 'public' }], false)).toEqual({ ttlMs: 5000, cacheScope: 'private' });
    expect(cacheHints([{ ttlMs: 60000, cacheScope: 'public' }, { ttlMs: 90000, cacheScope: 'private' }], false)).toEqual({ ttlMs: 60000, cacheScope: 'private' });
    expect(cacheHints([{ ttlMs: 60000, cacheScope: 'public' }, {}], false)).toEqual({ ttlMs: 0, cacheScope: 'private' });
    expect(cacheHints([{ ttlMs: 60000, cacheScope: 'public' }], true)).toEqual({ ttlMs: 0, cacheScope: 'private' });
    expect(cacheHints([], false)).toEqual({ ttlMs: 0, cacheScope: 'private' });
  });

  it('discovers the union of features and of their listen flags, and names an unavailable server', () => {
    const result = mergeDiscover(
      [
        { server: 'a', result: { capabilities: { tools: { listChanged: true } }, ttlMs: 100, cacheScope: 'public', instructions: 'Use a' } },
        { server: 'b', result: { capabilities: { prompts: {}, resources: { subscribe: true }, experimental: { x: {} } }, ttlMs: 50, cacheScope: 'public' } },
      ],
      [['c', failure]],
    );
    expect(result).toMatchObject({ resultType: 'complete', supportedVersions: ['2026-07-28'], ttlMs: 0, cacheScope: 'private' });
    expect(result.capabilities).toEqual({ tools: { listChanged: true }, prompts: {}, resources: { subscribe: true } });
    expect(Object.keys(result.capabilities as object)).toEqual(['tools', 'prompts', 'resources']);
    expect(result.instructions).toContain('c: host-offline: Host b is not linked');
    expect(result.instructions).toContain('Use a');
  });

  it('namespaces tool and prompt names, keeps resource URIs, and lists a placeholder tool for a failed server', () => {
    const tools = mergeList('tools/list', [{ server: 'a', result: { tools: [{ name: 'echo', inputSchema: {} }], ttlMs: 10, cacheScope: 'public' } }], [['c', failure]]);
    expect((tools.tools as Array<{ name: string }>).map((t) => t.name)).toEqual(['a__echo', 'c__unavailable']);
    const resources = mergeList('resources/list', [{ server: 'a', result: { resources: [{ uri: 'file:///x', name: 'x' }], ttlMs: 10, cacheScope: 'public' } }], []);
    expect(resources).toMatchObject({ resources: [{ uri: 'file:///x', name: 'x' }], ttlMs: 10, cacheScope: 'private' });
  });
});
