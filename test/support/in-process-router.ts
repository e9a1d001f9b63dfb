/**
 * A router double for route tests: each open connects a fresh in-process MCP server over an
 * in-memory channel pair, records the request, and lets a test fail a server with a chosen
 * `WireError` or close its channel later (as a host going offline would).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpConnection } from '../../shared/connection-request.ts';
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import { WireError } from '../../shared/errors.ts';
import { createInMemoryChannelPair, type ChannelTransport } from '../../shared/channel-transport.ts';
import type { ChannelRouter, ChannelTrust } from '../../worker/routing/channel-router.ts';

export interface OpenRecord {
  descriptor: ConnectionDescriptor;
  connection: McpConnection;
  trust: ChannelTrust;
  /** The worker's end of the channel. */
  channel: ChannelTransport;
  /** The server's end: close it to simulate the server or its host going away. */
  serverEnd: ChannelTransport;
  server: McpServer;
}

export class InProcessRouter implements ChannelRouter {
  readonly opened: OpenRecord[] = [];
  readonly failures = new Map<string, WireError>();
  readonly #factories: Record<string, (name: string) => McpServer>;

  constructor(factories: Record<string, (name: string) => McpServer>) {
    this.#factories = factories;
  }

  async open(descriptor: ConnectionDescriptor, connection: McpConnection, trust: ChannelTrust): Promise<ChannelTransport> {
    const name = connection['server-name'];
    const failure = this.failures.get(name);
    if (failure !== undefined) throw failure;
    const factory = this.#factories[name];
    if (factory === undefined) throw new WireError('host-offline', `No in-process server "${name}"`);
    const [channel, serverEnd] = createInMemoryChannelPair();
    const server = factory(name);
    await server.connect(serverEnd);
    this.opened.push({ descriptor, connection, trust, channel, serverEnd, server });
    return channel;
  }

  /** Channels still open, worker side. */
  openChannels(): number {
    return this.opened.filter((o) => !o.channel.closed).length;
  }
}
