import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { closeInfoOf, createInMemoryChannelPair } from '../../../shared/channel-transport.ts';
import { bridgeChannels } from './channel-relay.ts';

const ping = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'ping' });

/** agent ⇄ [relay end | link end] ⇄ host: the two middle ends bridged as the host's object does. */
function bridged() {
  const [agent, relayEnd] = createInMemoryChannelPair();
  const [linkEnd, host] = createInMemoryChannelPair();
  let ended = 0;
  bridgeChannels(relayEnd, linkEnd, () => ended++);
  return { agent, host, ended: () => ended };
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
});
