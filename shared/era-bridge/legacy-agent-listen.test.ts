import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LegacyAgentListen, MAX_WATCHED_URI_LENGTH, MAX_WATCHED_URIS, REOPEN_EVERY_MS, TORN_DOWN_BACKOFF_CAP_MS } from './legacy-agent-listen.ts';

// Re-opens wait on a timer (one per REOPEN_EVERY_MS): the tests move the clock.
beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
afterEach(() => vi.useRealTimers());
const soon = () => vi.advanceTimersByTime(REOPEN_EVERY_MS);

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
    soon();
    expect(toServer).toEqual([{ jsonrpc: '2.0', id: 'switchyard-listen-1', method: 'subscriptions/listen', params: { _meta: META, notifications: { resourceSubscriptions: ['file:///a'] } } }]);
    listen.watch('file:///b', true);
    soon();
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
    for (let n = 0; n < 50; n++) {
      listen.watch(`file:///${n}`, true);
      soon();
    }
    // 50 listens were opened: the 8 withdrawn last (42 to 49) and the 50th are still the host's; the first ones are long gone.
    const taken = (n: number) => from('notifications/resources/updated', `switchyard-listen-${n}`);
    expect([taken(1), taken(41), taken(42), taken(49), taken(50)]).toEqual([false, false, true, true, true]);
  });

  it('re-opens once for a burst of subscribes, at most once per interval, and never after the session closed (review s23)', () => {
    const { listen, toServer } = rig({ resources: { subscribe: true } });
    for (let n = 0; n < 100; n++) listen.watch(`file:///${n}`, true);
    expect(toServer).toEqual([]);
    vi.advanceTimersByTime(0);
    expect(toServer.map((m) => m.method)).toEqual(['subscriptions/listen']);
    expect(toServer[0]!.params.notifications.resourceSubscriptions).toHaveLength(100);
    listen.watch('file:///x', true);
    vi.advanceTimersByTime(REOPEN_EVERY_MS - 1);
    expect(toServer).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(toServer.map((m) => m.method)).toEqual(['subscriptions/listen', 'notifications/cancelled', 'subscriptions/listen']);
    listen.watch('file:///y', true);
    listen.close();
    soon();
    expect(toServer).toHaveLength(3);
  });

  it('refuses a subscribe past the modern filter\'s bounds: too many URIs, or one too long; an unsubscribe always passes', () => {
    const { listen } = rig({ resources: { subscribe: true } });
    expect(listen.watch(`file:///${'a'.repeat(MAX_WATCHED_URI_LENGTH)}`, true)).toBe(`the URI is longer than ${MAX_WATCHED_URI_LENGTH} characters`);
    for (let n = 0; n < MAX_WATCHED_URIS; n++) expect(listen.watch(`file:///${n}`, true)).toBeNull();
    expect(listen.watch('file:///one-more', true)).toBe(`the session watches ${MAX_WATCHED_URIS} URIs already, the most it may: unsubscribe from one first`);
    expect(listen.watch('file:///0', true)).toBeNull(); // already watched
    expect(listen.watch('file:///0', false)).toBeNull();
    expect(listen.watch('file:///one-more', true)).toBeNull();
  });

  it('opens the listen again when the server tears it down, and passes the agent nothing of it (review s23)', () => {
    const { listen, toServer, toAgent } = rig({ tools: { listChanged: true } });
    listen.open();
    expect(listen.fromServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'switchyard-listen-1', reason: 'restarting' } } as JSONRPCMessage)).toBe(true);
    soon();
    expect(toServer.map((m) => [m.method, m.id])).toEqual([['subscriptions/listen', 'switchyard-listen-1'], ['subscriptions/listen', 'switchyard-listen-2']]);
    expect(toAgent).toEqual([]);
    // A cancel naming the agent's own request is the agent's business, not the host's.
    expect(listen.fromServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } } as JSONRPCMessage)).toBe(false);
  });

  it('waits twice as long each time a server tears the listen down again soon, and not after one that lived long (review of s23)', () => {
    const { listen, toServer, from } = rig({ tools: { listChanged: true } });
    listen.open();
    const tearDown = (n: number) => listen.fromServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: `switchyard-listen-${n}` } } as JSONRPCMessage);
    const listens = () => toServer.filter((m) => m.method === 'subscriptions/listen').length;
    tearDown(1);
    vi.advanceTimersByTime(REOPEN_EVERY_MS);
    expect(listens()).toBe(2);
    tearDown(2);
    vi.advanceTimersByTime(2 * REOPEN_EVERY_MS - 1);
    expect(listens()).toBe(2);
    vi.advanceTimersByTime(1);
    expect(listens()).toBe(3);
    // A notification is no sign of health: a server that ends each listen after one is still waited for longer.
    from('notifications/tools/list_changed', 'switchyard-listen-3');
    tearDown(3);
    vi.advanceTimersByTime(4 * REOPEN_EVERY_MS - 1);
    expect(listens()).toBe(3);
    vi.advanceTimersByTime(1);
    expect(listens()).toBe(4);
    // One that lived as long as the longest wait was cut on a schedule (a proxy's), not flapping.
    vi.advanceTimersByTime(TORN_DOWN_BACKOFF_CAP_MS);
    tearDown(4);
    vi.advanceTimersByTime(REOPEN_EVERY_MS);
    expect(listens()).toBe(5);
  });

  it('opens the listen again when its answer comes (the server ended it) or its stream broke off, and not when the server refused it', () => {
    const { listen, toServer, toAgent } = rig({ tools: { listChanged: true } });
    const listens = () => toServer.filter((m) => m.method === 'subscriptions/listen').map((m) => m.id);
    listen.open();
    expect(listen.fromServer({ jsonrpc: '2.0', id: 'switchyard-listen-1', result: {} } as JSONRPCMessage)).toBe(true);
    soon();
    expect(listens()).toEqual(['switchyard-listen-1', 'switchyard-listen-2']);
    // The transport's word that an HTTP stream broke (a proxy's idle timeout).
    expect(listen.fromServer({ jsonrpc: '2.0', id: 'switchyard-listen-2', error: { code: -32009, message: 'The HTTP server ended its answer to subscriptions/listen without one', data: { reason: 'server-exited' } } } as JSONRPCMessage)).toBe(true);
    vi.advanceTimersByTime(2 * REOPEN_EVERY_MS);
    expect(listens()).toEqual(['switchyard-listen-1', 'switchyard-listen-2', 'switchyard-listen-3']);
    // A late answer to a listen no longer in force changes nothing.
    listen.fromServer({ jsonrpc: '2.0', id: 'switchyard-listen-1', result: {} } as JSONRPCMessage);
    // The server's own refusal is not asked again: a JSON-RPC error of its own, or an HTTP 4xx.
    expect(listen.fromServer({ jsonrpc: '2.0', id: 'switchyard-listen-3', error: { code: -32601, message: 'Method not found' } } as JSONRPCMessage)).toBe(true);
    vi.advanceTimersByTime(2 * TORN_DOWN_BACKOFF_CAP_MS);
    expect(listens()).toHaveLength(3);
    const refusedOnHttp = rig({ tools: { listChanged: true } });
    refusedOnHttp.listen.open();
    refusedOnHttp.listen.fromServer({ jsonrpc: '2.0', id: 'switchyard-listen-1', error: { code: -32009, message: 'The HTTP server answered subscriptions/listen with HTTP 404 and no modern error', data: { reason: 'server-exited', status: 404 } } } as JSONRPCMessage);
    vi.advanceTimersByTime(2 * TORN_DOWN_BACKOFF_CAP_MS);
    expect(refusedOnHttp.toServer).toHaveLength(1);
    expect(toAgent).toEqual([]);
  });

  it('refuses subscriptions to a server that offers none', () => {
    expect(rig({ resources: {} }).listen.subscribable).toBe(false);
  });
});
