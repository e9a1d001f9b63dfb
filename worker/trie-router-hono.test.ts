import { describe, expect, it } from 'vitest';
import { Hono, MAX_REMEMBERED, MAX_REMEMBERED_PATH, MemoRouter } from './trie-router-hono.ts';

describe('MemoRouter', () => {
  it('answers a remembered path as the trie does, params included', () => {
    const router = new MemoRouter<string>();
    router.add('ALL', '/servers/:name/mcp', 'server');
    router.add('GET', '/healthz', 'health');
    const first = router.match('POST', '/servers/a/mcp');
    expect(router.match('POST', '/servers/a/mcp')).toBe(first);
    expect(first[0].map(([handler, params]) => [handler, params])).toEqual([['server', { name: 'a' }]]);
    expect(router.match('POST', '/servers/b/mcp')[0][0]![1]).toEqual({ name: 'b' });
    expect(router.match('POST', '/healthz')[0]).toEqual([]);
  });

  it('forgets its answers when a route is added after a match', () => {
    const router = new MemoRouter<string>();
    router.add('GET', '/x', 'one');
    expect(router.match('GET', '/x')[0]).toHaveLength(1);
    router.add('GET', '/x', 'two');
    expect(router.match('GET', '/x')[0].map(([handler]) => handler)).toEqual(['one', 'two']);
  });

  it('holds at most MAX_REMEMBERED paths, and still answers past them', () => {
    const router = new MemoRouter<string>();
    router.add('ALL', '/servers/:name/mcp', 'server');
    const first = router.match('POST', '/servers/0/mcp');
    for (let i = 1; i <= MAX_REMEMBERED; i++) router.match('POST', `/servers/${i}/mcp`);
    const again = router.match('POST', '/servers/0/mcp');
    expect(again).not.toBe(first);
    expect(again[0][0]![1]).toEqual({ name: '0' });
  });

  it('remembers no path longer than MAX_REMEMBERED_PATH, and answers it all the same', () => {
    const router = new MemoRouter<string>();
    router.add('ALL', '/servers/:name/mcp', 'server');
    const long = `/servers/${'a'.repeat(MAX_REMEMBERED_PATH)}/mcp`;
    const first = router.match('POST', long);
    expect(router.match('POST', long)).not.toBe(first);
    expect(first[0][0]![1]).toEqual({ name: 'a'.repeat(MAX_REMEMBERED_PATH) });
    const short = router.match('POST', '/servers/s/mcp');
    expect(router.match('POST', '/servers/s/mcp')).toBe(short);
  });
});

describe('Hono on the MemoRouter', () => {
  it('routes, reads params and answers 404 the same on every request', async () => {
    const app = new Hono();
    app.use('*', async (c, next) => {
      await next();
      c.header('x-mw', '1');
    });
    app.all('/servers/:name/mcp', (c) => c.text(`server ${c.req.param('name')}`));
    app.notFound((c) => c.text('nope', 404));
    for (let i = 0; i < 3; i++) {
      const hit = await app.request('/servers/ab%20c/mcp', { method: 'POST' });
      expect([hit.status, await hit.text(), hit.headers.get('x-mw')]).toEqual([200, 'server ab c', '1']);
      const miss = await app.request('/servers/x/other');
      expect([miss.status, await miss.text()]).toEqual([404, 'nope']);
    }
  });
});
