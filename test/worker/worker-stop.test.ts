/**
 * What an operator's stop (SIGTERM) of the Deno worker tells those still connected: a modern
 * agent's listen stream ends as a stream does (it holds no stop up to the grace), and the
 * sidecar's link is closed as going away (1001), not dropped as the process ends (1006), so the
 * sidecar links again at once when the worker is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openListen } from '../modern/listen-client.ts';
import { fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ servers: { modern: fixtureServer('modern-echo-server.mjs') } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('the Deno worker stopping', () => {
  it('ends open listen streams and closes each host link before it exits 0 (review s21)', async () => {
    const listen = await openListen(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!, 'until-stop', { toolsListChanged: true });
    expect((await listen.next()).method).toBe('notifications/subscriptions/acknowledged');
    stack.worker.process.child.kill('SIGTERM');
    await expect(listen.next()).rejects.toThrow('The listen stream ended');
    const dropped = await stack.sidecar.waitForLine((line) => line.msg === 'Link to worker dropped', 'the link dropping', 15_000);
    expect(dropped.code).toBe(1001);
    expect(await stack.worker.process.exited).toBe(0);
  });
});
