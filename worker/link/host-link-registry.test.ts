import { afterEach, describe, expect, it } from 'vitest';
import { closeInfoOf } from '../../shared/channel-transport.ts';
import { type ChannelOpenHandler, LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { type EndedLink, InMemoryHostLinkRegistry } from './host-link-registry.ts';
import { attachInMemoryHost, type InMemoryHost } from './link-route.ts';
import { LINK_FEATURES } from '../../shared/link/link-features.ts';
import type { HostRoster } from '../../shared/link/host-roster.ts';

const hosts: InMemoryHost[] = [];
afterEach(() => {
  for (const host of hosts.splice(0)) host.close();
});

const echo: ChannelOpenHandler = async (_request, channel) => {
  channel.onmessage = (m) => void channel.send(m);
  void channel.start();
};

function attach(registry: InMemoryHostLinkRegistry, entityId: string, onOpen = echo) {
  const host = attachInMemoryHost(registry, entityId, onOpen);
  hosts.push(host);
  return host;
}

const closeOf = closeInfoOf;

describe('InMemoryHostLinkRegistry', () => {
  it('fails at once with host-offline for a host without a live link', async () => {
    const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop'] });
    await expect(registry.openChannel('alice-laptop', {})).rejects.toMatchObject({ reason: 'host-offline', message: expect.stringContaining('alice-laptop') });
    await expect(registry.openChannel('nobody', {})).rejects.toMatchObject({ reason: 'host-offline' });
  });

  it('opens channels on the live link of the named host', async () => {
    const registry = new InMemoryHostLinkRegistry();
    attach(registry, 'alice-laptop');
    const channel = await registry.openChannel('alice-laptop', { type: 'mcp' });
    const reply = new Promise((resolve) => (channel.onmessage = resolve));
    void channel.start();
    await channel.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await reply).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping' });
  });

  it('a new link from the same host replaces the old one, whose channels fail host-offline', async () => {
    const registry = new InMemoryHostLinkRegistry();
    const first = attach(registry, 'alice-laptop');
    const oldChannel = await registry.openChannel('alice-laptop', {});
    const oldClosed = closeOf(oldChannel);
    void oldChannel.start();
    const second = attach(registry, 'alice-laptop');
    expect(await oldClosed).toMatchObject({ reason: 'host-offline' });
    expect(await first.sidecar.whenClosed).toMatchObject({ reason: 'host-offline', message: expect.stringContaining('Replaced by a newer link') });
    expect(second.worker.closed).toBe(false);
    const channel = await registry.openChannel('alice-laptop', {});
    expect(channel.closed).toBe(false);
    expect(registry.status()).toEqual([{ 'entity-id': 'alice-laptop', linked: true, since: expect.any(String), channels: 1, roundTripMs: null }]);
  });

  it('reports configured, linked and dropped hosts for /healthz', async () => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop', 'bob-desktop'], now: () => new Date((t += 1000)) });
    expect(registry.status()).toEqual([
      { 'entity-id': 'alice-laptop', linked: false, since: null, channels: 0, roundTripMs: null },
      { 'entity-id': 'bob-desktop', linked: false, since: null, channels: 0, roundTripMs: null },
    ]);
    const alice = attach(registry, 'alice-laptop');
    await registry.openChannel('alice-laptop', {});
    expect(registry.status()[0]).toEqual({ 'entity-id': 'alice-laptop', linked: true, since: '2026-01-01T00:00:01.000Z', channels: 1, roundTripMs: null });
    alice.close();
    await alice.worker.whenClosed;
    expect(registry.status()[0]).toEqual({ 'entity-id': 'alice-laptop', linked: false, since: '2026-01-01T00:00:02.000Z', channels: 0, roundTripMs: null });
    await expect(registry.openChannel('alice-laptop', {})).rejects.toMatchObject({ reason: 'host-offline' });
  });

  it('reports a live link\'s shortest round trip, from its handshake, to 0.1 ms, and none once it is down', async () => {
    const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop'] });
    const alice = attachInMemoryHost(registry, 'alice-laptop', echo, { endpoint: { handshakeRttMs: 103.46 } });
    hosts.push(alice);
    expect(registry.status()[0]).toMatchObject({ linked: true, roundTripMs: 103.5 });
    alice.close();
    await alice.worker.whenClosed;
    expect(registry.status()[0]).toMatchObject({ linked: false, roundTripMs: null });
  });

  it('says, once a minute, that a host\'s links keep replacing each other: two sidecars with one key (QA s30)', async () => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    const warnings: Array<Record<string, unknown>> = [];
    const log = { info: () => {}, warn: (msg: string, fields?: Record<string, unknown>) => warnings.push({ msg, ...fields }) };
    const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop'], log, now: () => new Date((t += 1000)) });
    // A restart replaces the old link once: nothing to say.
    attach(registry, 'alice-laptop');
    attach(registry, 'alice-laptop');
    expect(warnings).toEqual([]);
    for (let i = 0; i < 10; i++) attach(registry, 'alice-laptop');
    expect(warnings).toEqual([expect.objectContaining({ 'entity-id': 'alice-laptop', replacements: 3, withinSeconds: 60, msg: expect.stringContaining('two sidecars are running with this host\'s key') })]);
    t += 60_000;
    for (let i = 0; i < 3; i++) attach(registry, 'alice-laptop');
    expect(warnings).toHaveLength(2);
    registry.close();
  });

  it('tells each host its roster as it links and, after a reload, only where the roster changed; not a link resumed after hibernation', async () => {
    let roster: Record<string, HostRoster> = { 'alice-laptop': [{ agent: 'alice', servers: ['files'] }], 'bob-desktop': [{ agent: 'bob', servers: ['notes'] }] };
    const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop', 'bob-desktop'], roster: (entityId) => roster[entityId] ?? [] });
    const told: Record<string, HostRoster[]> = { 'alice-laptop': [], 'bob-desktop': [] };
    for (const entityId of ['alice-laptop', 'bob-desktop']) {
      const host = attachInMemoryHost(registry, entityId, echo, { endpoint: { onRoster: (r) => told[entityId]!.push(r) } });
      hosts.push(host);
    }
    await new Promise((r) => setTimeout(r, 0));
    expect(told).toEqual({ 'alice-laptop': [[{ agent: 'alice', servers: ['files'] }]], 'bob-desktop': [[{ agent: 'bob', servers: ['notes'] }]] });
    roster = { ...roster, 'alice-laptop': [] };
    registry.tellRosters();
    await new Promise((r) => setTimeout(r, 0));
    expect(told['alice-laptop']).toEqual([[{ agent: 'alice', servers: ['files'] }], []]);
    expect(told['bob-desktop']).toHaveLength(1);

    const [workerSocket, sidecarSocket] = createFrameSocketPair();
    const resumed: HostRoster[] = [];
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'bob-desktop', peerFeatures: new Set(LINK_FEATURES) });
    const sidecar = new LinkEndpoint(sidecarSocket, { role: 'sidecar', peer: 'worker', onOpen: echo, onRoster: (r) => resumed.push(r) });
    registry.attach('bob-desktop', worker, { linkedAt: new Date(), resumed: true });
    await new Promise((r) => setTimeout(r, 0));
    expect(resumed).toEqual([]);
    registry.close();
    sidecar.close();
  });

  describe('tells of each link that ends, why and after how long', () => {
    function recording() {
      let t = Date.parse('2026-01-01T00:00:00Z');
      const ended: EndedLink[] = [];
      const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop'], now: () => new Date((t += 1000)), onEnded: (link) => ended.push(link) });
      return { registry, ended };
    }

    it('the host closing it, a newer link, a config change and the worker stopping', async () => {
      const { registry, ended } = recording();
      const first = attach(registry, 'alice-laptop');
      const second = attach(registry, 'alice-laptop');
      await first.worker.whenClosed;
      expect(ended).toEqual([{ entityId: 'alice-laptop', ended: 'replaced', linkedForMs: 2000 }]);
      second.sidecar.close({ message: 'Sidecar stopping' });
      await second.worker.whenClosed;
      expect(ended[1]).toEqual({ entityId: 'alice-laptop', ended: 'closed', linkedForMs: 2000 });
      const third = attach(registry, 'alice-laptop');
      registry.setHosts(['alice-laptop'], ['alice-laptop']);
      await third.worker.whenClosed;
      const fourth = attach(registry, 'alice-laptop');
      registry.close();
      await fourth.worker.whenClosed;
      expect(ended.slice(2).map((link) => link.ended)).toEqual(['config-changed', 'shutdown']);
      expect(await fourth.sidecar.whenClosed).toMatchObject({ reason: 'host-offline', by: 'peer', message: 'The worker is stopping' });
    });

    it('the socket lost, the host silent, and frames the worker refused', async () => {
      const { registry, ended } = recording();
      const lost = attach(registry, 'alice-laptop');
      lost.sidecar.closeAsDead(20_000); // drops the socket pair: the worker end sees it go, no link-close
      expect(await lost.worker.whenClosed).toMatchObject({ by: 'socket' });
      const dead = attach(registry, 'alice-laptop');
      dead.worker.closeAsDead(20_000);
      const refused = attach(registry, 'alice-laptop');
      refused.worker.close({ reason: 'invalid-request', message: 'Link frames are text: a binary frame was refused' });
      await Promise.all([dead.worker.whenClosed, refused.worker.whenClosed]);
      expect(ended.map((link) => link.ended)).toEqual(['lost', 'dead', 'invalid-request']);
    });

    it('counts from when the host linked where that came before the registry (a woken Durable Object)', async () => {
      const { registry, ended } = recording();
      const [workerSocket, sidecarSocket] = createFrameSocketPair();
      const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'alice-laptop' });
      new LinkEndpoint(sidecarSocket, { role: 'sidecar', peer: 'worker', onOpen: echo });
      registry.attach('alice-laptop', worker, { linkedAt: new Date('2025-12-31T23:00:00Z') });
      worker.close();
      await worker.whenClosed;
      expect(ended).toEqual([{ entityId: 'alice-laptop', ended: 'closed', linkedForMs: 3_600_000 + 2000 }]);
    });

    it('tells nothing of a link refused as it attached', async () => {
      const { registry, ended } = recording();
      registry.setHosts(['alice-laptop'], ['alice-laptop']);
      const [workerSocket] = createFrameSocketPair();
      const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'alice-laptop' });
      expect(registry.attach('alice-laptop', worker, { since: 0 })).toBe(false);
      await worker.whenClosed;
      expect(ended).toEqual([]);
    });
  });
});
