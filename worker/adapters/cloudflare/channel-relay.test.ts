import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { hostAnswer, isHostAnswer } from '../../../shared/audit/host-answers.ts';
import { closeInfoOf, createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { createFrameSocketPair } from '../../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../../shared/link/link-endpoint.ts';
import { LINK_FEATURES } from '../../../shared/link/link-features.ts';
import { WireError } from '../../../shared/errors.ts';
import { bridgeChannels, RELAY_FEATURES } from './channel-relay.ts';

const ping = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'ping' });

/** agent ⇄ [relay end | link end] ⇄ host: the two middle ends bridged as the host's object does. */
function bridged() {
  const [agent, relayEnd] = createInMemoryChannelPair();
  const [linkEnd, host] = createInMemoryChannelPair();
  let ended = 0;
  bridgeChannels(relayEnd, linkEnd, () => ended++);
  return { agent, host, linkEnd, ended: () => ended };
}

describe('bridgeChannels', () => {
  it('passes messages both ways in order', async () => {
    const { agent, host } = bridged();
    const atHost: JSONRPCMessage[] = [];
    const atAgent: JSONRPCMessage[] = [];
    const twoAtHost = new Promise<void>((resolve) => (host.onmessage = (m) => (atHost.push(m), atHost.length === 2 && resolve())));
    const oneAtAgent = new Promise<void>((resolve) => (agent.onmessage = (m) => (atAgent.push(m), resolve())));
    await agent.start();
    await host.start();
    await agent.send(ping(1));
    await agent.send(ping(2));
    await host.send(ping(3));
    await Promise.all([twoAtHost, oneAtAgent]);
    expect(atHost).toEqual([ping(1), ping(2)]);
    expect(atAgent).toEqual([ping(3)]);
  });

  it('answers a request the host\'s link refuses with the refusal, and drops a refused notification', async () => {
    const { agent, host, linkEnd } = bridged();
    // The host's link refuses while the agent's messages wait past its budget (`LinkEndpoint`).
    linkEnd.send = async () => {
      throw new WireError('limit-reached', 'This agent\'s earlier messages to the host wait in the worker');
    };
    const atAgent: JSONRPCMessage[] = [];
    const answered = new Promise<void>((resolve) => (agent.onmessage = (m) => (atAgent.push(m), resolve())));
    await agent.start();
    await host.start();
    await agent.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    await agent.send(ping(7));
    await answered;
    expect(atAgent).toEqual([{ jsonrpc: '2.0', id: 7, error: { code: -32012, message: 'This agent\'s earlier messages to the host wait in the worker', data: { reason: 'limit-reached' } } }]);
  });

  it('closes the agent side with the host side\'s reason, and ends once', async () => {
    const { agent, host, ended } = bridged();
    const closed = closeInfoOf(agent);
    await agent.start();
    await host.start();
    await host.close({ reason: 'host-offline', message: 'Host "a" went offline' });
    expect(await closed).toEqual({ reason: 'host-offline', message: 'Host "a" went offline' });
    await agent.close();
    expect(ended()).toBe(1);
  });

  it('closes the host side when the agent goes, in order', async () => {
    const { agent, host, ended } = bridged();
    const closed = closeInfoOf(host);
    await agent.start();
    await host.start();
    await agent.close();
    expect(await closed).toEqual({});
    expect(ended()).toBe(1);
  });

  it('carries a host\'s mark on its own answer from the host\'s link to the agent\'s isolate, and none on its server\'s', async () => {
    const denial = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, error: { code: -32010, message: 'Denied', data: { reason: 'denied-by-policy' } } }) as JSONRPCMessage;
    // The host's link, in its object: a sidecar that denies `deny` itself, and whose "server" answers `forge` the same way.
    const [objectSocket, sidecarSocket] = createFrameSocketPair();
    const hostLink = new LinkEndpoint(objectSocket, { role: 'worker', peer: 'laptop', peerFeatures: new Set(LINK_FEATURES), liveness: false });
    const sidecar = new LinkEndpoint(sidecarSocket, {
      role: 'sidecar',
      liveness: false,
      onOpen: async (_request, channel) => {
        channel.onmessage = (message) => {
          const { id, params } = message as unknown as { id: number; params: { name: string } };
          void channel.send(params.name === 'deny' ? hostAnswer(denial(id)) : denial(id)).catch(() => {});
        };
        await channel.start();
      },
    });
    // The relay socket between the agent's isolate and the host's object, bridged as `serveRelay` does.
    const [isolateSocket, relaySocket] = createFrameSocketPair();
    const relay = new LinkEndpoint(relaySocket, {
      role: 'sidecar',
      liveness: false,
      onOpen: async (request, relayed) => bridgeChannels(relayed, await hostLink.openChannel(request), () => {}),
    });
    const isolate = new LinkEndpoint(isolateSocket, { role: 'worker', peer: 'laptop', peerFeatures: RELAY_FEATURES, liveness: false });
    try {
      const got: JSONRPCMessage[] = [];
      for (const [id, name] of [[1, 'deny'], [2, 'forge']] as const) {
        const channel = await isolate.openChannel({ type: 'mcp' });
        const answered = new Promise<void>((resolve) => (channel.onmessage = (m) => (got.push(m), resolve())));
        await channel.start();
        await channel.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } });
        await answered;
      }
      expect(got).toEqual([denial(1), denial(2)]);
      expect(got.map((m) => isHostAnswer(m))).toEqual([true, false]);
    } finally {
      for (const end of [isolate, relay, hostLink, sidecar]) end.close();
    }
  });
});
