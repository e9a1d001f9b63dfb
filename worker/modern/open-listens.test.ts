/**
 * A config reload ends the modern listen streams it would no longer allow (review s19: a listen is
 * no session, and an agent that lost a server kept its notifications and its host's listener).
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createInMemoryChannelPair, type ChannelTransport } from '../../shared/channel-transport.ts';
import { sha256Hex } from '../auth/agent-auth.ts';
import { composeWorker } from '../compose.ts';
import { parseWorkerConfig } from '../config/worker-config.ts';
import { OpenListens } from './open-listens.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('OpenListens', () => {
  it('aborts the listens a reason is given for, once, and forgets those done', () => {
    const listens = new OpenListens();
    const files = listens.add('alice', ['files']);
    const docs = listens.add('alice', ['docs']);
    const gone = listens.add('bob', ['files']);
    gone.done();
    const next = {};
    expect(listens.endWhere(next, (l) => (l.servers.includes('files') ? 'server "files" removed' : null))).toBe(1);
    expect([files.signal.aborted, files.signal.reason, docs.signal.aborted, gone.signal.aborted]).toEqual([true, 'server "files" removed', false, false]);
    expect(listens.endWhere(next, () => 'again')).toBe(1);
    expect(listens.size).toBe(0);
  });

  it('ends at once a listen allowed by a config a reload replaced while it opened (review s19)', () => {
    const listens = new OpenListens();
    const first = {};
    // Before any reload, the config a listen names is the one in force.
    expect(listens.add('alice', ['files'], first).signal.aborted).toBe(false);
    const second = {};
    listens.endWhere(second, () => null);
    const late = listens.add('alice', ['files'], first);
    expect([late.signal.aborted, late.signal.reason]).toEqual([true, 'the config changed while it opened']);
    expect(listens.add('alice', ['files'], second).signal.aborted).toBe(false);
    expect(listens.size).toBe(2);
  });
});

describe('a config reload and the listen streams open', () => {
  async function setup() {
    const config = async (servers: string[]) =>
      parseWorkerConfig(
        { agents: [{ name: 'alice', 'token-sha256': await sha256Hex('alice-token'), servers }], hosts: [], servers: { files: { executor: { type: 'local' } }, other: { executor: { type: 'local' } } } },
        { runtime: 'node' },
      );
    const hosts: ChannelTransport[] = [];
    const worker = composeWorker({
      config: await config(['files', 'other']),
      localHost: async () => {
        const [channel, host] = createInMemoryChannelPair();
        host.onmessage = (message) => {
          const m = message as { id?: string | number; method?: string };
          if (m.method === 'subscriptions/listen') void host.send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': m.id } } } as JSONRPCMessage);
        };
        await host.start();
        hosts.push(host);
        return channel;
      },
    });
    const listen = (path: string) =>
      worker.fetch(
        new Request(`http://localhost:8787${path}`, {
          method: 'POST',
          headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: META } }),
        }),
      );
    return { worker, hosts, config, listen };
  }

  /** Reads `body` to its end, returning what it said. */
  async function rest(body: ReadableStream<Uint8Array>): Promise<string> {
    return new Response(body).text();
  }

  it('ends a listen on a server the agent lost, and a /mcp listen that merged it, closing their host channels; one on a server it keeps goes on', async () => {
    const { worker, hosts, config, listen } = await setup();
    const onFiles = await listen('/servers/files/mcp');
    const onOther = await listen('/servers/other/mcp');
    const merged = await listen('/mcp');
    expect([onFiles.status, onOther.status, merged.status]).toEqual([200, 200, 200]);
    expect(hosts).toHaveLength(4);
    await worker.reload(await config(['other']));
    expect(await rest(onFiles.body!)).toContain('acknowledged');
    expect(await rest(merged.body!)).toContain('acknowledged');
    const open = hosts.map((h) => !h.closed);
    // files alone, other alone, then /mcp's two parts: only the listen on other is still open.
    expect(open).toEqual([false, true, false, false]);
    await onOther.body!.cancel();
  });
});
