/**
 * A server answering with JSON nested deeper than 128 levels: the caller gets an `invalid-request`
 * error for that request, promptly, and the server keeps serving. Before, the SDK's line reader
 * accepted the line, the link's `JSON.stringify` overflowed on it, and the request never ended.
 */
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../log.ts';
import { ProcessExecutorBackedClientTransport } from './process-backed-transport.ts';
import { ProcessExecutor } from './process-executor.ts';

const DEEP_SERVER = join(resolve(import.meta.dirname, '../..'), 'test/fixtures/deep-result-server.mjs');
const executor = new ProcessExecutor({ termGraceMs: 300 });
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  await executor.disposeAll();
});

async function connected(): Promise<{ client: Client; errors: Error[] }> {
  const transport = new ProcessExecutorBackedClientTransport('deep', { command: process.execPath, args: [DEEP_SERVER], env: {}, policy: null }, executor, { logger: silentLogger });
  const client = new Client({ name: 'test', version: '1.0.0' });
  clients.push(client);
  const errors: Error[] = [];
  await client.connect(transport);
  transport.onerror = (error) => errors.push(error);
  return { client, errors };
}

describe('server output nested too deep', () => {
  it.each([100_000, 129])('answers a %i-level result with invalid-request for that request, and the server keeps serving', async (depth) => {
    const { client, errors } = await connected();
    const refused = await client.request({ method: 'tools/call', params: { name: 'deep', arguments: { depth } } }, (await import('@modelcontextprotocol/sdk/types.js')).ResultSchema).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(McpError);
    expect(refused).toMatchObject({ code: -32600, message: expect.stringContaining('Server output nested deeper than 128 levels'), data: { reason: 'invalid-request', server: 'deep' } });
    expect(errors.map((e) => e.message)).toEqual(['Server "deep" wrote a message nested deeper than 128 levels: refused']);
    expect(await client.callTool({ name: 'echo', arguments: { message: 'after' } })).toMatchObject({ content: [{ type: 'text', text: 'Echo: after' }] });
  });

  it('passes a result of 128 levels (the structured content 126, inside result and the message)', async () => {
    const { client } = await connected();
    const result = await client.request({ method: 'tools/call', params: { name: 'deep', arguments: { depth: 126 } } }, (await import('@modelcontextprotocol/sdk/types.js')).ResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'deep' }]);
  });
});
