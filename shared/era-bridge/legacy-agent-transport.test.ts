import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { silentLogger } from '../log.ts';
import { ServerEraCache } from './discover-verdict.ts';
import { DualEraHttpTransport } from './dual-era-http-transport.ts';
import { LegacyAgentTransport } from './legacy-agent-transport.ts';

/** A loopback port nothing listens on any more. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('LegacyAgentTransport over HTTP', () => {
  it('fails the agent\'s initialize when a server known modern is down: asked server/discover, then the initialize itself, whose failure is the send\'s', async () => {
    const eras = new ServerEraCache();
    eras.set('down', { era: 'modern', discover: null, supported: ['2026-07-28'] });
    const transport = new LegacyAgentTransport(new DualEraHttpTransport({ url: new URL(`http://127.0.0.1:${await closedPort()}/mcp`) }), { server: 'down', eraKey: 'down', eras, log: silentLogger });
    const messages: JSONRPCMessage[] = [];
    transport.onmessage = (message) => messages.push(message);
    await transport.start();
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } } as const;
    // Before, the send resolved with the discover's, and the initialize's own failure went to onerror only: the agent waited for its deadline.
    await expect(transport.send(initialize)).rejects.toThrow();
    expect(messages).toEqual([]);
    expect(eras.get('down')).toBeUndefined();
    await transport.close();
  });
});
