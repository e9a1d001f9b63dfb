import { afterEach, describe, expect, it } from 'vitest';
import { WireError } from '../../shared/errors.ts';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { createTestMcpServer } from '../../test/support/test-mcp-server.ts';
import { InProcessRouter } from '../../test/support/in-process-router.ts';
import { BASE, startInProcessApp, testConfig, type InProcessApp } from '../../test/support/in-process-app.ts';
import { sha256Hex } from '../auth/agent-auth.ts';
import { groupSessions, type StatusDetails } from './status-report.ts';

let harness: InProcessApp | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** An in-process router where `mute` opens a channel whose server hangs up at the first message. */
class RouterWithMuteServer extends InProcessRouter {
  override async open(...args: Parameters<InProcessRouter['open']>) {
    if (args[1]['server-name'] !== 'mute') return super.open(...args);
    const [worker, server] = createInMemoryChannelPair();
    server.onmessage = () => void server.close();
    await server.start();
    return worker;
  }
}

async function setup() {
  const router = new RouterWithMuteServer({ alpha: createTestMcpServer, beta: createTestMcpServer });
  const config = await testConfig(
    [{ name: 'alice', servers: ['alpha', 'gone', 'mute'] }, { name: 'bob', servers: ['beta'] }],
    ['alpha', 'beta', 'gone', 'mute'],
    { 'admin-token-sha256': await sha256Hex('admin-token') },
  );
  harness = startInProcessApp(config, router);
  return { router, harness };
}

async function report(h: InProcessApp, token: string): Promise<StatusDetails & { sessions: number }> {
  return (await (await h.fetch(`${BASE}/healthz`, { headers: { authorization: `Bearer ${token}` } })).json()) as StatusDetails & { sessions: number };
}

describe('/healthz status details', () => {
  it('gives the admin every session per agent and endpoint and every recent error', async () => {
    const { router, harness: h } = await setup();
    await h.client('/mcp', 'alice-token');
    await h.client('/servers/alpha/mcp', 'alice-token');
    await h.client('/servers/beta/mcp', 'bob-token');
    router.failures.set('beta', new WireError('trust-profile-stale', 'Trust profile "workspace" changed'));
    await expect(h.client('/servers/beta/mcp', 'bob-token')).rejects.toThrow();

    const admin = await report(h, 'admin-token');
    expect(admin.viewer).toEqual({ role: 'admin' });
    expect(admin.sessionGroups).toEqual([
      { agent: 'alice', endpoint: '/mcp', sessions: 1, channels: 1 },
      { agent: 'alice', endpoint: '/servers/alpha/mcp', sessions: 1, channels: 1 },
      { agent: 'bob', endpoint: '/servers/beta/mcp', sessions: 1, channels: 1 },
    ]);
    const [newest, ...older] = admin.recentErrors.map((e) => [e.reason, e.server, e.agent].join(' '));
    expect(newest).toBe('trust-profile-stale beta bob');
    // alice's two failures happened in parallel, while her /mcp session connected its upstreams.
    expect(older.sort()).toEqual(['host-offline gone alice', 'launch-failed mute alice']);
  });

  it('calls a server failing while the latest open of it failed, until one succeeds: an agent its own, the admin anyone\'s', async () => {
    const router = new InProcessRouter({ beta: createTestMcpServer });
    const config = await testConfig([{ name: 'bob', servers: ['beta'] }], { beta: { type: 'http', url: 'https://beta.example.com/mcp' } }, { 'admin-token-sha256': await sha256Hex('admin-token') });
    const h = (harness = startInProcessApp(config, router));
    const servers = async (token: string) => ((await (await h.fetch(`${BASE}/healthz`, { headers: { authorization: `Bearer ${token}` } })).json()) as { servers: Array<{ name: string; state: string; failure?: unknown }> }).servers.find((s) => s.name === 'beta');
    await h.client('/servers/beta/mcp', 'bob-token');
    expect(await servers('admin-token')).toEqual({ name: 'beta', binding: 'edge-direct', state: 'available' });
    router.failures.set('beta', new WireError('launch-failed', 'Cannot start process: spawn failed: ENOENT'));
    await expect(h.client('/servers/beta/mcp', 'bob-token')).rejects.toThrow();
    const failure = { reason: 'launch-failed', message: 'Cannot start process: spawn failed: ENOENT', time: expect.any(String) };
    expect(await servers('bob-token')).toEqual({ name: 'beta', binding: 'edge-direct', state: 'failing', failure });
    expect(await servers('admin-token')).toEqual({ name: 'beta', binding: 'edge-direct', state: 'failing', failure: { ...failure, agent: 'bob' } });
    router.failures.delete('beta');
    await h.client('/servers/beta/mcp', 'bob-token');
    expect(await servers('bob-token')).toEqual({ name: 'beta', binding: 'edge-direct', state: 'available' });
  });

  it('records an upstream of /mcp whose channel opened but whose initialize failed', async () => {
    const { harness: h } = await setup();
    await h.client('/mcp', 'alice-token');
    const mute = (await report(h, 'admin-token')).recentErrors.find((e) => e.server === 'mute');
    expect(mute).toMatchObject({ reason: 'launch-failed', agent: 'alice', count: 1 });
    expect(mute!.message).toMatch(/^Server "mute" did not initialize/);
  });

  it('records a channel that ends with a failure reason after it opened, on either endpoint', async () => {
    const { router, harness: h } = await setup();
    await h.client('/servers/alpha/mcp', 'alice-token');
    await h.client('/mcp', 'bob-token');
    const alpha = router.opened.find((o) => o.connection['server-name'] === 'alpha')!;
    const beta = router.opened.find((o) => o.connection['server-name'] === 'beta')!;
    await alpha.serverEnd.close({ reason: 'server-exited', message: 'Server "alpha" exited with code 1' });
    await beta.serverEnd.close({ reason: 'host-offline', message: 'Host "laptop" went offline' });
    await expect.poll(async () => (await report(h, 'admin-token')).recentErrors.length).toBe(2);
    const recorded = (await report(h, 'admin-token')).recentErrors;
    expect(recorded).toEqual(expect.arrayContaining([
      expect.objectContaining({ reason: 'server-exited', server: 'alpha', agent: 'alice', message: 'Server "alpha" exited with code 1', count: 1 }),
      expect.objectContaining({ reason: 'host-offline', server: 'beta', agent: 'bob', message: 'Host "laptop" went offline', count: 1 }),
    ]));
  });

  it('does not record an orderly close from either side', async () => {
    const { router, harness: h } = await setup();
    const ours = await h.client('/servers/alpha/mcp', 'alice-token');
    await (ours.transport as unknown as { terminateSession(): Promise<void> }).terminateSession();
    await h.client('/servers/beta/mcp', 'bob-token');
    const theirs = router.opened.find((o) => o.connection['server-name'] === 'beta')!;
    await theirs.serverEnd.close();
    await expect.poll(() => router.openChannels()).toBe(0);
    expect((await report(h, 'admin-token')).recentErrors).toEqual([]);
  });

  it('gives an agent only its own errors, its identity and no other agent\'s sessions', async () => {
    const { router, harness: h } = await setup();
    await h.client('/mcp', 'alice-token');
    router.failures.set('beta', new WireError('host-offline', 'Host "laptop" is offline'));
    await expect(h.client('/servers/beta/mcp', 'bob-token')).rejects.toThrow();

    const bob = await report(h, 'bob-token');
    expect(bob.viewer).toEqual({ role: 'agent', agent: 'bob' });
    expect(bob.sessionGroups).toBeUndefined();
    expect(bob.sessions).toBe(0);
    expect(bob.recentErrors.map((e) => [e.reason, e.server, e.agent])).toEqual([['host-offline', 'beta', 'bob']]);
    const alice = await report(h, 'alice-token');
    expect(alice.recentErrors.every((e) => e.agent === 'alice')).toBe(true);
    expect(alice.recentErrors.map((e) => e.server).sort()).toEqual(['gone', 'mute']);
  });

  it('says nothing of errors or sessions without a token', async () => {
    const { harness: h } = await setup();
    await h.client('/mcp', 'alice-token');
    expect(await (await h.fetch(`${BASE}/healthz`)).json()).toEqual({ ok: true });
  });
});

describe('groupSessions', () => {
  it('counts sessions and channels per agent and endpoint, in name order', () => {
    const base = { servers: [], lastSeen: 0 };
    expect(groupSessions([
      { ...base, id: '1', agent: 'bob', route: 'server:notes', channels: 1 },
      { ...base, id: '2', agent: 'alice', route: 'aggregate', channels: 3 },
      { ...base, id: '3', agent: 'alice', route: 'aggregate', channels: 2 },
      { ...base, id: '4', agent: 'alice', route: 'server:echo', channels: 0 },
    ])).toEqual([
      { agent: 'alice', endpoint: '/mcp', sessions: 2, channels: 5 },
      { agent: 'alice', endpoint: '/servers/echo/mcp', sessions: 1, channels: 0 },
      { agent: 'bob', endpoint: '/servers/notes/mcp', sessions: 1, channels: 1 },
    ]);
  });
});
