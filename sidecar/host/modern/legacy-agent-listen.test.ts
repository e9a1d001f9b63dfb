import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { LegacyAgentListen } from './legacy-agent-listen.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const SUB = 'io.modelcontextprotocol/subscriptionId';

function rig(capabilities: Record<string, unknown>) {
  const toServer: Array<Record<string, any>> = [];
  const toAgent: Array<Record<string, any>> = [];
  const listen = new LegacyAgentListen({ toServer: (m) => toServer.push(m), toAgent: (m) => toAgent.push(m), meta: () => META, capabilities });
  const from = (method: string, id: string, params: Record<string, unknown> = {}) => listen.fromServer({ jsonrpc: '2.0', method, params: { ...params, _meta: { [SUB]: id } } } as JSONRPCMessage);
  return { listen, toServer, toAgent, from };
}

describe('LegacyAgentListen', () => {
  it('listens for every kind the server announces and passes its notifications on untagged, the acknowledgement swallowed', () => {
    const { listen, toServer, toAgent, from } = rig({ tools: { listChanged: true }, prompts: {}, resources: { listChanged: true, subscribe: true } });
    listen.open();
    expect(toServer).toEqual([{ jsonrpc: '2.0', id: 'switchyard-listen-1', method: 'subscriptions/listen', params: { _meta: META, notifications: { toolsListChanged: true, resourcesListChanged: true } } }]);
    expect(from('notifications/subscriptions/acknowledged', 'switchyard-listen-1', { notifications: {} })).toBe(true);
    expect(from('notifications/tools/list_changed', 'switchyard-listen-1')).toBe(true);
    expect(toAgent).toEqual([{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);
    expect(from('notifications/tools/list_changed', 'someone-else')).toBe(false);
  });

  it("re-opens the listen with the agent's subscriptions, cancelling the old one and dropping what it still sends", () => {
    const { listen, toServer, toAgent, from } = rig({ resources: { subscribe: true } });
    listen.open();
    expect(toServer).toEqual([]);
    listen.watch('file:///a', true);
    listen.watch('file:///a', true);
    expect(toServer).toEqual([{ jsonrpc: '2.0', id: 'switchyard-listen-1', method: 'subscriptions/listen', params: { _meta: META, notifications: { resourceSubscriptions: ['file:///a'] } } }]);
    listen.watch('file:///b', true);
    expect(toServer.slice(1)).toEqual([
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'switchyard-listen-1', reason: expect.any(String) } },
      { jsonrpc: '2.0', id: 'switchyard-listen-2', method: 'subscriptions/listen', params: { _meta: META, notifications: { resourceSubscriptions: ['file:///a', 'file:///b'] } } },
    ]);
    expect(from('notifications/resources/updated', 'switchyard-listen-1', { uri: 'file:///a' })).toBe(true);
    expect(from('notifications/resources/updated', 'switchyard-listen-2', { uri: 'file:///b' })).toBe(true);
    expect(toAgent).toEqual([{ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///b' } }]);
    expect(listen.fromServer({ jsonrpc: '2.0', id: 'switchyard-listen-1', result: {} } as JSONRPCMessage)).toBe(true);
  });

  it('keeps the ids of the listen in force and of the few withdrawn last only, however often the agent re-subscribes (review s20)', () => {
    const { listen, from } = rig({ resources: { subscribe: true } });
    for (let n = 0; n < 50; n++) listen.watch(`file:///${n}`, true);
    // 50 listens were opened: the 8 withdrawn last (42 to 49) and the 50th are still the host's; the first ones are long gone.
    const taken = (n: number) => from('notifications/resources/updated', `switchyard-listen-${n}`);
    expect([taken(1), taken(41), taken(42), taken(49), taken(50)]).toEqual([false, false, true, true, true]);
  });

  it('refuses subscriptions to a server that offers none', () => {
    expect(rig({ resources: {} }).listen.subscribable).toBe(false);
  });
});
