import { afterEach, describe, expect, it } from 'vitest';
import { createFrameSocketPair } from './frame-socket.ts';
import { LinkEndpoint, type LinkEndpointOptions } from './link-endpoint.ts';
import { LINK_FEATURES, type LinkFeature } from './link-features.ts';
import type { HostRoster } from './host-roster.ts';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

function link(peerFeatures: ReadonlySet<LinkFeature>, sidecarOptions: Partial<LinkEndpointOptions> = {}) {
  const [workerSocket, sidecarSocket] = createFrameSocketPair();
  const rosters: HostRoster[] = [];
  const frames: string[] = [];
  const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'test-host', peerFeatures, liveness: false });
  worker.onFrame = (direction, text) => direction === 'out' && frames.push(JSON.parse(text).type);
  const sidecar = new LinkEndpoint(sidecarSocket, { role: 'sidecar', onOpen: async () => {}, onRoster: (roster) => rosters.push(roster), liveness: false, ...sidecarOptions });
  endpoints.push(worker, sidecar);
  return { worker, sidecar, rosters, frames };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('LinkEndpoint roster', () => {
  it('tells a host that reads rosters each roster that differs from the last one it was told', async () => {
    const { worker, rosters, frames } = link(new Set(LINK_FEATURES));
    const first: HostRoster = [{ agent: 'alice', servers: ['files'] }];
    expect(worker.tellRoster(first)).toBe(true);
    expect(worker.tellRoster([{ agent: 'alice', servers: ['files'] }])).toBe(false);
    expect(worker.tellRoster([])).toBe(true);
    await settle();
    expect(rosters).toEqual([first, []]);
    expect(frames).toEqual(['link-roster', 'link-roster']);
  });

  it('tells an older host nothing: its strict frame schema would refuse the frame', async () => {
    const { worker, sidecar, rosters, frames } = link(new Set(['open-first', 'open-reply', 'host-answers', 'paced'] as const));
    expect(worker.tellRoster([{ agent: 'alice', servers: ['files'] }])).toBe(false);
    await settle();
    expect(rosters).toEqual([]);
    expect(frames).toEqual([]);
    expect(sidecar.closed).toBe(false);
  });

  it('keeps the link working when the roster\'s handler throws, and says so (review s32)', async () => {
    const [workerSocket, sidecarSocket] = createFrameSocketPair();
    const warnings: Array<[string, Record<string, unknown> | undefined]> = [];
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'test-host', peerFeatures: new Set(LINK_FEATURES), paced: true, liveness: false, acks: { everyChars: 1, delayMs: 1 } });
    const sidecar = new LinkEndpoint(sidecarSocket, {
      role: 'sidecar',
      paced: true,
      liveness: false,
      acks: { everyChars: 1, delayMs: 1 },
      log: { info: () => {}, warn: (msg, fields) => void warnings.push([msg, fields]) },
      onRoster: () => {
        throw new Error('pool gone');
      },
      onOpen: async (_request, channel) => {
        channel.onmessage = (message) => void channel.send(message);
        await channel.start();
      },
    });
    endpoints.push(worker, sidecar);
    expect(worker.tellRoster([{ agent: 'alice', servers: ['files'] }])).toBe(true);
    const channel = await worker.openChannel({ type: 'mcp' });
    const echoed = new Promise((resolve) => (channel.onmessage = resolve));
    await channel.start();
    await channel.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await echoed).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(warnings).toEqual([['Roster from the worker not applied', { peer: 'worker', error: 'pool gone' }]]);
  });

  it('ignores a roster from a host, counting it malformed, and sends none from one', async () => {
    const [workerSocket, raw] = createFrameSocketPair();
    const worker = new LinkEndpoint(workerSocket, { role: 'worker', peer: 'raw', liveness: false });
    endpoints.push(worker);
    raw.send(JSON.stringify({ v: 1, type: 'link-roster', agents: [] }));
    await settle();
    expect(worker.stats.malformedFrames).toBe(1);
    expect(worker.closed).toBe(false);
    const { sidecar } = link(new Set(LINK_FEATURES));
    expect(sidecar.tellRoster([])).toBe(false);
  });
});
