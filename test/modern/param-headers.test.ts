/**
 * `Mcp-Param-*` headers checked against a tool's `x-mcp-header` arguments, through the real stack
 * (the worker under Deno, the sidecar CLI, the modern echo fixture's `regional` tool and
 * server-everything): the worker decodes the headers, the host checks them against the tool
 * list it caches per instance, and a mismatch is refused -32020 with HTTP 400 before the server
 * sees the call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingServer, fixtureServer } from '../support/paths.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { modernPost } from './modern-client.ts';

let stack: Stack;
const regional = (args: Record<string, unknown>, headers: Record<string, string>) =>
  modernPost(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!, 'tools/call', { name: 'regional', arguments: args }, { headers });
const textOf = (answer: { response: Record<string, any> }): string => answer.response.result?.content?.[0]?.text;

beforeAll(async () => {
  stack = await startStack({ servers: { modern: fixtureServer('modern-echo-server.mjs'), everything: everythingServer() } });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe('Mcp-Param-* headers', () => {
  it('accepts headers that match the arguments: plain, Base64-encoded, an integer written as a decimal', async () => {
    expect(textOf(await regional({ region: 'us-west1', count: 3 }, { 'Mcp-Param-Region': 'us-west1', 'mcp-param-count': '3.0' }))).toBe('Region us-west1, count 3');
    const answer = await regional({ region: 'Hello, 世界' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8sIOS4lueVjA==?=' });
    expect(answer.status).toBe(200);
    expect(textOf(answer)).toBe('Region Hello, 世界, count undefined');
  });

  it('refuses a missing header, a different value and a header without its argument with 400, -32020 and the id', async () => {
    for (const [args, headers] of [
      [{ region: 'us' }, {}],
      [{ region: 'us' }, { 'Mcp-Param-Region': 'eu' }],
      [{ region: 'us', count: 2 }, { 'Mcp-Param-Region': 'us', 'Mcp-Param-Count': '3' }],
      [{ region: 'us' }, { 'Mcp-Param-Region': 'us', 'Mcp-Param-Count': '3' }],
    ] as const) {
      const answer = await modernPost(`${stack.url}/servers/modern/mcp`, stack.tokens.alice!, 'tools/call', { name: 'regional', arguments: args }, { id: 'p-1', headers });
      expect(answer.status).toBe(400);
      expect(answer.response).toMatchObject({ id: 'p-1', error: { code: -32020, message: expect.stringContaining('Mcp-Param-'), data: { reason: 'invalid-request' } } });
    }
  });

  it('refuses a malformed Base64 value at the worker, with 400 and -32020', async () => {
    const answer = await regional({ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8?=' });
    expect(answer.status).toBe(400);
    expect(answer.response.error).toMatchObject({ code: -32020, message: expect.stringContaining('not valid Base64') });
  });

  it('ignores headers no annotation names, on a legacy server too', async () => {
    const answer = await modernPost(`${stack.url}/servers/everything/mcp`, stack.tokens.alice!, 'tools/call', { name: 'echo', arguments: { message: 'hi' } }, { headers: { 'Mcp-Param-Unrelated': 'x' } });
    expect(textOf(answer)).toBe('Echo: hi');
  });
});
