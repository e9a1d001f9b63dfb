/**
 * The host's tool-schema cache for `Mcp-Param-*` checks, at the wire: a scripted legacy server
 * counts the `tools/list` requests it gets, so a test sees when the host reads the list again.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { silentLogger } from '../../log.ts';
import { LegacyInstance } from './legacy-instance.ts';
import { toolAnnotations, toolCallHeaderError } from './tool-schemas.ts';

const REGIONAL = { name: 'regional', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } };

async function scripted(tools: unknown[][]) {
  const [hostEnd, server] = createInMemoryChannelPair();
  let lists = 0;
  server.onmessage = (raw) => {
    const message = raw as { id?: number; method?: string };
    if (message.method === 'initialize') {
      void server.send({ jsonrpc: '2.0', id: message.id!, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'scripted', version: '1' } } });
    } else if (message.method === 'tools/list') {
      void server.send({ jsonrpc: '2.0', id: message.id!, result: { tools: tools[Math.min(lists, tools.length - 1)] } } as JSONRPCMessage);
      lists += 1;
    }
  };
  await server.start();
  const instance = await LegacyInstance.start({ server: 'scripted', transport: hostEnd, clientInfo: { name: 'agent', version: '1' }, log: silentLogger });
  return { instance, lists: () => lists, changed: () => server.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }) };
}

describe('tool schemas for Mcp-Param-* checks', () => {
  it("reads a legacy server's list once, and again after tools/list_changed or for a tool it did not name", async () => {
    const { instance, lists, changed } = await scripted([[REGIONAL], [REGIONAL, { name: 'fresh', inputSchema: { type: 'object' } }]]);
    expect(await toolAnnotations(instance, 'regional', silentLogger)).toEqual([{ header: 'region', path: ['region'], type: 'string' }]);
    expect(await toolAnnotations(instance, 'regional', silentLogger)).toHaveLength(1);
    expect(lists()).toBe(1);
    expect(await toolAnnotations(instance, 'fresh', silentLogger)).toEqual([]);
    expect(lists()).toBe(2);
    await changed();
    await new Promise((r) => setImmediate(r)); // the notification's delivery is a queued microtask
    await toolAnnotations(instance, 'regional', silentLogger);
    expect(lists()).toBe(3);
    await instance.close();
  });

  it('answers -32020 for a mismatch and nothing for a match, an unknown tool or one without annotations', async () => {
    const { instance } = await scripted([[REGIONAL, { name: 'plain', inputSchema: { type: 'object' } }]]);
    const call = (name: string, args: unknown, headers: Record<string, string>) => toolCallHeaderError(instance, { name, arguments: args }, headers, silentLogger);
    expect(await call('regional', { region: 'us' }, { region: 'eu' })).toEqual({ code: -32020, message: expect.stringContaining("'eu' does not match body value 'us'"), data: { reason: 'invalid-request' } });
    expect(await call('regional', { region: 'us' }, { region: 'us' })).toBeNull();
    expect(await call('plain', { region: 'us' }, {})).toBeNull();
    expect(await call('nowhere', {}, {})).toBeNull();
    await instance.close();
  });
});
