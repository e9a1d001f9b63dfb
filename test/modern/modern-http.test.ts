/**
 * A modern (2026-07-28) agent on HTTP MCP servers, through the real stack (worker under Deno, the
 * sidecar CLI): server-everything in its Streamable HTTP mode (a legacy server), reached two ways:
 * - `web`, a host's HTTP target: the sidecar keeps the agent's legacy instance over HTTP;
 * - `direct`, edge-direct: the worker opens a short legacy session per modern request.
 * A legacy SDK client uses the same servers at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { ProcessSet, startEverythingHttp } from '../support/processes.ts';
import { HOST_A, startStack, type Stack } from '../support/stack.ts';
import { modernPost, MODERN } from './modern-client.ts';

const procs = new ProcessSet();
let stack: Stack;
const url = (server: string) => `${stack.url}/servers/${server}/mcp`;
const bob = (server: string, method: string, params?: Record<string, unknown>, call?: Parameters<typeof modernPost>[4]) =>
  modernPost(url(server), stack.tokens.bob!, method, params, call);
const textOf = (answer: { response: Record<string, any> }): string => answer.response.result?.content?.[0]?.text;

beforeAll(async () => {
  const everything = await startEverythingHttp(procs);
  const onA = { type: 'user-computer-profile', 'entity-id': HOST_A, target: { type: 'local' } };
  stack = await startStack({
    servers: { web: { url: everything.url } },
    worker: {
      servers: {
        web: { executor: onA },
        direct: { executor: { type: 'http', url: everything.url } },
        offline: { executor: { type: 'reverse-http', 'entity-id': 'res-host-b' } },
      },
    },
    agents: [{ name: 'bob', servers: ['web', 'direct'] }],
  });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
  await procs.stopAll();
});

describe.each(['web', 'direct'])('a modern agent on the HTTP server %s', (server) => {
  it('discovers it and calls a tool, statelessly', async () => {
    const discover = await bob(server, 'server/discover');

    expect(discover.status).toBe(200);
    expect(discover.response.result).toMatchObject({ resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: expect.any(Object) } });
    const call = await bob(server, 'tools/call', { name: 'echo', arguments: { message: `modern on ${server}` } });
    expect(call.status).toBe(200);
    expect(call.headers.get('mcp-session-id')).toBeNull();
    expect(call.response.result.resultType).toBe('complete');
    expect(textOf(call)).toBe(`Echo: modern on ${server}`);
  });
});
