import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpConnectionRequest } from '../../shared/connection-request.ts';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { ExecutorTargetRouter } from './executor-target-router.ts';
import type { HostLinkRegistry } from '../link/host-link-registry.ts';

/** A registry that records what the router asks of it and hands back an in-memory channel. */
function recordingRegistry() {
  const opened: { entityId: string; request: unknown; signal?: AbortSignal | undefined }[] = [];
  const registry: HostLinkRegistry = {
    async openChannel(entityId, request, options) {
      opened.push({ entityId, request, ...(options?.signal !== undefined ? { signal: options.signal } : {}) });
      return createInMemoryChannelPair()[0];
    },
    attach: () => true,
    status: () => [],
  };
  return { registry, opened };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A real Streamable HTTP MCP server on 127.0.0.1 that counts the requests it gets. */
async function httpMcpServer() {
  let hits = 0;
  const server = createServer(async (req, res) => {
    hits++;
    const mcp = new McpServer({ name: 'edge-direct', version: '1.0.0' });
    mcp.registerTool('where', { description: 'Says where it runs' }, async () => ({ content: [{ type: 'text', text: 'at the edge' }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, hits: () => hits };
}

const connection = { 'server-name': 'files', 'trust-profile-ref': 'workspace', 'trust-profile-revision': `sha256:${'a'.repeat(64)}` };

describe('ExecutorTargetRouter', () => {
  it('routes reverse-http and user-computer-profile to the host link with references only', async () => {
    const { registry, opened } = recordingRegistry();
    const router = new ExecutorTargetRouter({ registry });
    await router.open({ type: 'reverse-http', 'entity-id': 'alice-laptop' }, connection);
    await router.open({ type: 'user-computer-profile', 'entity-id': 'alice-laptop', target: { type: 'local' } }, { ...connection, session: 's-1' });
    await router.open(
      { type: 'user-computer-profile', 'entity-id': 'bob-desktop', target: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'x-team': 'blue' } } },
      { 'server-name': 'docs' },
    );
    expect(opened).toEqual([
      { entityId: 'alice-laptop', request: { type: 'mcp', connection } },
      { entityId: 'alice-laptop', request: { type: 'mcp', connection: { ...connection, session: 's-1' } } },
      { entityId: 'bob-desktop', request: { type: 'mcp', connection: { 'server-name': 'docs', target: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'x-team': 'blue' } } } } },
    ]);
  });

  it('passes the caller\'s open deadline on to the host link', async () => {
    const { registry, opened } = recordingRegistry();
    const deadline = new AbortController();
    await new ExecutorTargetRouter({ registry }).open({ type: 'reverse-http', 'entity-id': 'alice-laptop' }, connection, {}, { signal: deadline.signal });
    expect(opened[0]?.signal).toBe(deadline.signal);
  });

  it('refuses a host descriptor nested inside a target, without contacting any host', async () => {
    const { registry, opened } = recordingRegistry();
    const router = new ExecutorTargetRouter({ registry });
    const nested = { type: 'user-computer-profile', 'entity-id': 'a', target: { type: 'reverse-http', 'entity-id': 'b' } } as const;
    await expect(router.open(nested, connection)).rejects.toMatchObject({ reason: 'invalid-request', message: expect.stringContaining('not supported yet') });
    expect(opened).toEqual([]);
  });

  it('CreateHttpTransport_ConstrainedProfile_ReturnsUnsupportedPolicy: no request leaves the worker', async () => {
    const upstream = await httpMcpServer();
    const router = new ExecutorTargetRouter({ registry: recordingRegistry().registry });
    await expect(router.open({ type: 'http', url: upstream.url }, connection, { containment: 'required' })).rejects.toMatchObject({
      reason: 'unsupported-policy',
    });
    expect(upstream.hits()).toBe(0);
  });

  it('proxies an unconstrained edge-direct HTTP server through a channel', async () => {
    const upstream = await httpMcpServer();
    const router = new ExecutorTargetRouter({ registry: recordingRegistry().registry });
    const channel = await router.open({ type: 'http', url: upstream.url }, { 'server-name': 'docs' }, { containment: 'none' });
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(channel);
    expect(await client.callTool({ name: 'where' })).toMatchObject({ content: [{ type: 'text', text: 'at the edge' }] });
    await client.close();
    expect(upstream.hits()).toBeGreaterThan(0);
  });

  it('sends local servers to the injected local host, and says what to do without one', async () => {
    const seen: McpConnectionRequest[] = [];
    const local = new ExecutorTargetRouter({
      registry: recordingRegistry().registry,
      localHost: async (request): Promise<Transport> => {
        seen.push(request);
        return createInMemoryChannelPair()[0];
      },
    });
    await local.open({ type: 'local' }, connection);
    expect(seen).toEqual([{ type: 'mcp', connection }]);
    const plain = new ExecutorTargetRouter({ registry: recordingRegistry().registry });
    await expect(plain.open({ type: 'local' }, connection)).rejects.toMatchObject({ reason: 'host-offline', message: expect.stringContaining('all-in-one') });
  });

  it('rejects a connection the host would refuse before sending it', async () => {
    const { registry, opened } = recordingRegistry();
    const router = new ExecutorTargetRouter({ registry });
    const bad = { 'server-name': 'files', 'trust-profile-ref': 'workspace' };
    await expect(router.open({ type: 'reverse-http', 'entity-id': 'alice-laptop' }, bad)).rejects.toMatchObject({ reason: 'invalid-request' });
    expect(opened).toEqual([]);
  });
});
