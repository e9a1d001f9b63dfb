/**
 * `/healthz` on Workers says a server is `failing` as every runtime does, though its opens happen
 * in Durable Objects (a legacy session's relay through the host's object, a modern request in the
 * host's object itself), not in the edge isolate that answers `/healthz`: the host's object keeps
 * the outcomes, and the edge reads them with the host's status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureServer } from '../support/paths.ts';
import { startWorkerdStack, type WorkerdStack } from '../support/workerd-stack.ts';
import { modernPost } from '../modern/modern-client.ts';
import { closeClient, connectClient } from '../support/clients.ts';

let stack: WorkerdStack;

beforeAll(async () => {
  stack = await startWorkerdStack({
    servers: {
      a: {
        'pid-a': fixtureServer('pid-server.mjs'),
        'broken-a': { command: '/nonexistent/mcp-server' },
        // Starts, and exits at its first message: its channel fails after its open.
        'dies-a': { command: process.execPath, args: ['-e', "process.stdin.once('data', () => process.exit(3))"] },
      },
      b: {},
    },
    agents: [{ name: 'bob', servers: ['pid-a', 'broken-a'] }],
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

interface ServerState {
  name: string;
  state: string;
  failure?: { reason: string; agent?: string };
}

async function servers(token: string): Promise<ServerState[]> {
  const response = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { servers: ServerState[] }).servers;
}

const stateOf = async (token: string, name: string) => (await servers(token)).find((s) => s.name === name);

describe('server states on /healthz under workerd', () => {
  it('says a server whose opens fail in the host\'s object is failing, for the agent whose open it was and for the admin', async () => {
    await stack.waitLinked('a');
    expect(await stateOf(stack.tokens.admin!, 'broken-a')).toMatchObject({ state: 'available' });

    // Alice's legacy session: its object relays the open through the host's object, which fails it.
    const legacy = await fetch(`${stack.url}/servers/broken-a/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.alice!}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    const refused = (await legacy.json()) as { error?: { data?: { reason?: string } } };
    expect(refused.error?.data?.reason).toBe('launch-failed');
    expect(await stateOf(stack.tokens.alice!, 'broken-a')).toMatchObject({ state: 'failing', failure: { reason: 'launch-failed' } });
    expect(await stateOf(stack.tokens.admin!, 'broken-a')).toMatchObject({ state: 'failing', failure: { reason: 'launch-failed', agent: 'alice' } });
    // Bob opened nothing: his view is his own.
    expect(await stateOf(stack.tokens.bob!, 'broken-a')).toMatchObject({ state: 'available' });

    // Bob's modern request, served in the host's object itself.
    const modern = await modernPost(`${stack.url}/servers/broken-a/mcp`, stack.tokens.bob!, 'tools/list', {});
    expect((modern.response as { error?: { data?: { reason?: string } } }).error?.data?.reason).toBe('launch-failed');
    expect(await stateOf(stack.tokens.bob!, 'broken-a')).toMatchObject({ state: 'failing', failure: { reason: 'launch-failed' } });
    expect(await stateOf(stack.tokens.admin!, 'broken-a')).toMatchObject({ state: 'failing', failure: { agent: 'bob' } });

    // Each failure is a recent error too, from the host's object: the admin sees both, each agent its own.
    const recent = async (token: string) => {
      const response = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${token}` } });
      return ((await response.json()) as { recentErrors: Array<{ reason: string; server: string; agent: string }> }).recentErrors.filter((e) => e.server === 'broken-a');
    };
    expect((await recent(stack.tokens.admin!)).map((e) => [e.agent, e.reason]).toSorted()).toEqual([['alice', 'launch-failed'], ['bob', 'launch-failed']]);
    expect((await recent(stack.tokens.bob!)).map((e) => e.agent)).toEqual(['bob']);
    // Bob's modern request on /mcp, which the edge serves, asking each of his servers: the failure is
    // kept there, once, and shown as one entry with the one his request on /servers met (review s33).
    const everyServer = await modernPost(`${stack.url}/mcp`, stack.tokens.bob!, 'tools/list', {});
    expect(everyServer.status).toBe(200);
    expect(await recent(stack.tokens.bob!)).toEqual([expect.objectContaining({ agent: 'bob', reason: 'launch-failed', count: 2 })]);

    // A server that serves stays available beside it.
    const served = await modernPost(`${stack.url}/servers/pid-a/mcp`, stack.tokens.bob!, 'tools/call', { name: 'pid', arguments: {} });
    expect(served.status).toBe(200);
    expect(await stateOf(stack.tokens.admin!, 'pid-a')).toMatchObject({ state: 'available' });
  }, 60_000);

  it('says a server that starts and then dies is failing, though its open was taken (review s33)', async () => {
    const answer = await fetch(`${stack.url}/servers/dies-a/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tokens.alice!}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    await answer.text();
    await expect.poll(async () => (await stateOf(stack.tokens.admin!, 'dies-a'))?.state).toBe('failing');
    expect(await stateOf(stack.tokens.admin!, 'dies-a')).toMatchObject({ failure: { reason: 'server-exited', agent: 'alice' } });
  }, 60_000);

  it('counts each agent\'s sessions, which live in objects of their own, for the admin and for that agent', async () => {
    const count = async (token: string) => {
      const response = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${token}` } });
      return ((await response.json()) as { sessions: number }).sessions;
    };
    const before = await count(stack.tokens.admin!);
    const client = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    try {
      expect([await count(stack.tokens.admin!), await count(stack.tokens.alice!), await count(stack.tokens.bob!)]).toEqual([before + 1, 1, 0]);
    } finally {
      await closeClient(client);
    }
    // Closed (DELETE): its slot is given back before the answer.
    expect([await count(stack.tokens.admin!), await count(stack.tokens.alice!)]).toEqual([before, 0]);
  }, 60_000);
});
