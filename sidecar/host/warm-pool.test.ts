import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../log.ts';
import { REFILL_MAX_DEFER_MS, sameInitialize, WarmPool, type WarmKey } from './warm-pool.ts';
import { WarmStartTransport, warmOrColdTransport } from './warm-start-transport.ts';

/** An in-memory server: answers `initialize`, records what it was sent, asks for roots once initialized. */
class FakeServer implements Transport {
  static made = 0;
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly n = ++FakeServer.made;
  readonly sent: JSONRPCMessage[] = [];
  started = false;
  closed = false;
  async start() {
    this.started = true;
  }
  async send(message: JSONRPCMessage) {
    this.sent.push(message);
    const m = message as { id?: string | number; method?: string };
    if (m.method === 'initialize') queueMicrotask(() => this.onmessage?.({ jsonrpc: '2.0', id: m.id!, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: `fake-${this.n}`, version: '1' } } }));
    if (m.method === 'notifications/initialized') queueMicrotask(() => this.onmessage?.({ jsonrpc: '2.0', id: 'roots-1', method: 'roots/list' }));
  }
  async close() {
    this.closed = true;
    this.onclose?.();
  }
}

const key: WarmKey = { agent: 'alice', server: 'files', revision: 'sha256:1' };
const params = { protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo: { name: 'agent', version: '1' } };
const initialize = (id: number, p: Record<string, unknown> = params) => ({ jsonrpc: '2.0', id, method: 'initialize', params: p }) as JSONRPCMessage;
const settle = () => new Promise((r) => setTimeout(r, 0));

/** A launcher of fake servers, and every server it made, in order. */
function recordedLaunches(): { made: FakeServer[]; launch: () => Promise<FakeServer> } {
  const made: FakeServer[] = [];
  return {
    made,
    launch: async () => {
      const server = new FakeServer();
      made.push(server);
      return server;
    },
  };
}

/** A pool that refills at once (no pause awaited), unless a test asks for one. */
function pool(size = 1, maxInstances = 4, refillQuietMs = 0) {
  return new WarmPool({ size, maxInstances, idleMs: 60_000, log: silentLogger, refillQuietMs });
}

/** A pool that waits 100 ms of quiet before refilling, under fake timers, with its launches counted. */
async function quietPool(size: number, run: (p: WarmPool, launched: () => number) => Promise<void>): Promise<void> {
  vi.useFakeTimers();
  try {
    const p = pool(size, 8, 100);
    let launched = 0;
    p.learn(key, params, async () => {
      launched++;
      return new FakeServer();
    });
    expect(launched).toBe(0);
    await vi.advanceTimersByTimeAsync(100);
    await vi.advanceTimersByTimeAsync(0);
    expect(p.size).toBe(size);
    await run(p, () => launched);
    await p.dispose();
  } finally {
    vi.useRealTimers();
  }
}

describe('WarmPool', () => {
  it('fills a key once it has learnt how, hands each instance out once, and refills', async () => {
    const p = pool(2);
    expect(p.take(key)).toBeUndefined();
    p.learn(key, params, async () => new FakeServer());
    await settle();
    expect(p.size).toBe(2);
    const a = p.take(key)!;
    const b = p.take(key)!;
    expect(a.transport).not.toBe(b.transport);
    expect((a.transport as FakeServer).sent.map((m) => (m as { method?: string }).method)).toEqual(['initialize', 'notifications/initialized']);
    // What the server asked while pooled waits for the session.
    expect(a.pending).toEqual([{ jsonrpc: '2.0', id: 'roots-1', method: 'roots/list' }]);
    await settle();
    expect(p.size).toBe(2);
    expect(p.take({ ...key, agent: 'bob' })).toBeUndefined();
    await p.dispose();
  });

  it('keeps within max-instances over every key, drops an old revision and ends everything on dispose', async () => {
    const p = pool(3, 4);
    const { made, launch } = recordedLaunches();
    p.learn(key, params, launch);
    p.learn({ ...key, agent: 'bob' }, params, launch);
    await settle();
    expect(p.size).toBe(4);
    p.learn({ ...key, revision: 'sha256:2' }, params, launch);
    await settle();
    expect(made.slice(0, 3).every((s) => s.closed)).toBe(true);
    await p.dispose();
    expect(made.every((s) => s.closed)).toBe(true);
    expect(p.size).toBe(0);
  });

  it('clear() ends every instance and forgets every key, and takes no lesson from a session that read its config before it', async () => {
    const p = pool(1);
    const { made, launch } = recordedLaunches();
    const before = p.generation;
    p.learn(key, params, launch, before);
    await settle();
    expect(p.size).toBe(1);
    await p.clear();
    expect(made[0]!.closed).toBe(true);
    expect([p.size, p.take(key)]).toEqual([0, undefined]);
    // A session opened before the clear teaches the old config: not taken.
    p.learn(key, params, launch, before);
    await settle();
    expect(made).toHaveLength(1);
    // One opened since is; the pool still fills.
    p.learn(key, params, launch, p.generation);
    await settle();
    expect([p.size, made.length]).toEqual([1, 2]);
    await p.dispose();
  });

  it('makes room for a key used more recently by ending an instance of the key used longest ago', async () => {
    const p = pool(2, 2);
    const { made, launch } = recordedLaunches();
    p.learn(key, params, launch);
    await settle();
    expect(p.size).toBe(2);
    const bob = { ...key, agent: 'bob' };
    p.learn(bob, params, launch);
    await settle();
    await settle();
    expect(p.size).toBe(2);
    expect(made.slice(0, 2).every((s) => s.closed)).toBe(true);
    expect(p.take(bob)).toBeDefined();
    expect(p.take(key)).toBeUndefined();
    await p.dispose();
  });

  it('refills only once no session is opening and sessions have paused, so a burst is served without spawns beside it', () =>
    quietPool(3, async (p, launched) => {
      // A burst: one take every 50 ms, each inside the previous one's quiet window.
      for (let i = 0; i < 3; i++) {
        expect(p.take(key)).toBeDefined();
        await vi.advanceTimersByTimeAsync(50);
      }
      expect(p.take(key)).toBeUndefined();
      // Past the quiet window, but the three sessions are still opening.
      await vi.advanceTimersByTimeAsync(200);
      expect(launched()).toBe(3);
      for (let i = 0; i < 3; i++) p.opened();
      await vi.advanceTimersByTimeAsync(99);
      expect(launched()).toBe(3);
      await vi.advanceTimersByTimeAsync(1);
      await vi.advanceTimersByTimeAsync(0);
      expect(launched()).toBe(6);
      expect(p.size).toBe(3);
    }));

  it('refills a steady stream of sessions after REFILL_MAX_DEFER_MS even without a pause', () =>
    quietPool(1, async (p, launched) => {
      for (let t = 0; t < REFILL_MAX_DEFER_MS - 100; t += 50) {
        if (p.take(key) !== undefined) p.opened();
        await vi.advanceTimersByTimeAsync(50);
      }
      expect(launched()).toBe(1);
      for (let t = 0; t < 200; t += 50) {
        p.take(key);
        await vi.advanceTimersByTimeAsync(50);
      }
      expect(launched()).toBeGreaterThan(1);
    }));

  it('stops counting a session that never reported its opening after REFILL_MAX_DEFER_MS', () =>
    quietPool(2, async (p, launched) => {
      expect(p.take(key)).toBeDefined();
      await vi.advanceTimersByTimeAsync(REFILL_MAX_DEFER_MS);
      await vi.advanceTimersByTimeAsync(0);
      expect(launched()).toBe(3);
      // The first session never said it opened; the next one does, and its refill waits only the pause.
      expect(p.take(key)).toBeDefined();
      p.opened();
      await vi.advanceTimersByTimeAsync(100);
      await vi.advanceTimersByTimeAsync(0);
      expect(launched()).toBe(4);
    }));

  it('keepOnly() ends the spares of the agents and servers the worker no longer routes here, and keeps none still starting', async () => {
    const p = pool(1, 8);
    const { made, launch } = recordedLaunches();
    let hold: (() => void) | undefined;
    p.learn(key, params, launch);
    p.learn({ ...key, agent: 'bob' }, params, launch);
    await settle();
    // Carol's spare is still starting when the roster comes.
    p.learn({ ...key, agent: 'carol' }, params, async () => {
      await new Promise<void>((resolve) => (hold = resolve));
      return launch();
    });
    await settle();
    expect(p.size).toBe(3);
    // The roster before named all three; this one bob alone.
    expect(p.keepOnly((agent, server) => agent === 'bob' && server === 'files', (agent) => agent === 'alice' || agent === 'carol')).toBe(1);
    expect(made[0]!.closed).toBe(true);
    expect(made[1]!.closed).toBe(false);
    expect(p.size).toBe(1);
    hold!();
    await settle();
    await settle();
    expect(made[2]!.closed).toBe(true);
    expect(p.size).toBe(1);
    // A session of a pair the roster removed, that overtook it, teaches nothing…
    p.learn(key, params, launch);
    await settle();
    expect(made).toHaveLength(3);
    expect(p.size).toBe(1);
    // …where one of a pair no roster named yet (just added, its roster still on its way) does…
    p.learn({ ...key, agent: 'dave' }, params, launch);
    await vi.waitFor(() => expect(p.size).toBe(2));
    // …and, the link that told it ended, so does the removed one.
    p.forgetRoster();
    p.learn(key, params, launch);
    await vi.waitFor(() => expect(p.size).toBe(3));
    // Each up and ready (`size` counts those starting too).
    for (const agent of ['bob', 'dave', 'alice']) await vi.waitFor(() => expect(p.take({ ...key, agent })).toBeDefined());
    await p.dispose();
  });

  it('is disabled at size 0', async () => {
    const p = pool(0);
    p.learn(key, params, async () => new FakeServer());
    await settle();
    expect(p.size).toBe(0);
    expect(p.enabled).toBe(false);
  });

  it('compares initialize params without their _meta and key order', () => {
    expect(sameInitialize({ a: 1, b: { c: 2, d: 3 }, _meta: { x: 1 } }, { b: { d: 3, c: 2 }, a: 1 })).toBe(true);
    expect(sameInitialize({ a: 1 }, { a: 2 })).toBe(false);
  });
});

describe('WarmStartTransport', () => {
  it('answers a matching initialize from the warm instance and then delivers what the server said while pooled', async () => {
    const p = pool(1);
    p.learn(key, params, async () => new FakeServer());
    await settle();
    const transport = await warmOrColdTransport({ pool: p, key, cold: async () => new FakeServer(), spare: async () => new FakeServer() });
    expect(transport).toBeInstanceOf(WarmStartTransport);
    expect((transport as WarmStartTransport).warm).toBe(true);
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (m) => received.push(m);
    await transport.start();
    await transport.send(initialize(7));
    await settle();
    expect(received[0]).toMatchObject({ id: 7, result: { serverInfo: { name: expect.stringMatching(/^fake-/) } } });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
    expect(received[1]).toEqual({ jsonrpc: '2.0', id: 'roots-1', method: 'roots/list' });
    await transport.send({ jsonrpc: '2.0', id: 8, method: 'tools/list' } as JSONRPCMessage);
    await p.dispose();
  });

  it('holds the pool\'s refill while a session handed a warm instance is opening, and only then', () =>
    quietPool(1, async (p, launched) => {
      const transport = await warmOrColdTransport({ pool: p, key, cold: async () => new FakeServer(), spare: async () => new FakeServer() });
      await transport.start();
      await transport.send(initialize(7));
      await vi.advanceTimersByTimeAsync(500);
      expect(launched()).toBe(1);
      await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' } as JSONRPCMessage);
      await vi.advanceTimersByTimeAsync(100);
      await vi.advanceTimersByTimeAsync(0);
      expect(launched()).toBe(2);
      // Closing afterwards does not count the session's opening twice.
      await transport.close();
      expect(p.take(key)).toBeDefined();
      await vi.advanceTimersByTimeAsync(200);
      expect(launched()).toBe(2);
      p.opened();
      await vi.advanceTimersByTimeAsync(100);
      await vi.advanceTimersByTimeAsync(0);
      expect(launched()).toBe(3);
    }));

  it('goes cold when the agent initializes differently, and the pool learns from a cold session', async () => {
    const p = pool(1);
    p.learn(key, params, async () => new FakeServer());
    await settle();
    const cold: FakeServer[] = [];
    const transport = await warmOrColdTransport({
      pool: p,
      key,
      cold: async () => {
        const s = new FakeServer();
        cold.push(s);
        return s;
      },
      spare: async () => new FakeServer(),
    });
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (m) => received.push(m);
    await transport.start();
    const other = { ...params, clientInfo: { name: 'another-client', version: '2' } };
    await transport.send(initialize(1, other));
    await settle();
    expect((transport as WarmStartTransport).warm).toBe(false);
    expect(cold).toHaveLength(1);
    expect(cold[0]!.sent[0]).toEqual(initialize(1, other));
    expect(received[0]).toMatchObject({ id: 1, result: { serverInfo: { name: `fake-${cold[0]!.n}` } } });
    // Learnt the new params: the pool's next instance is initialized like this session.
    await settle();
    const next = p.take(key)!;
    expect(next.params).toEqual(other);
    await p.dispose();
  });

  it('closes a cold instance that finished launching after its session closed, before close resolves (review s19)', async () => {
    const p = pool(1);
    p.learn(key, params, async () => new FakeServer());
    await settle();
    let launched!: () => void;
    const cold: FakeServer[] = [];
    const transport = await warmOrColdTransport({
      pool: p,
      key,
      // A launch that waits (a contained server's policy compiles first).
      cold: () => new Promise<FakeServer>((resolve) => (launched = () => resolve(cold[cold.push(new FakeServer()) - 1]!))),
      spare: async () => new FakeServer(),
    });
    await transport.start();
    const sending = transport.send(initialize(1, { ...params, clientInfo: { name: 'another-client', version: '2' } }));
    const closing = transport.close();
    launched();
    await expect(sending).rejects.toMatchObject({ reason: 'server-exited' });
    await closing;
    expect(cold).toHaveLength(1);
    expect([cold[0]!.started, cold[0]!.closed]).toEqual([false, true]);
    await p.dispose();
  });

  it('tells the bridge the session is over, with why, when the cold instance it went to cannot launch', async () => {
    const p = pool(1);
    p.learn(key, params, async () => new FakeServer());
    await settle();
    const refused = Object.assign(new Error('no room'), { reason: 'limit-reached' });
    const transport = await warmOrColdTransport({ pool: p, key, cold: async () => Promise.reject(refused), spare: async () => new FakeServer() });
    const told: string[] = [];
    transport.onerror = (error) => told.push(`error ${error.message}`);
    transport.onclose = () => told.push('close');
    await transport.start();
    await expect(transport.send(initialize(1, { ...params, clientInfo: { name: 'another-client', version: '2' } }))).rejects.toBe(refused);
    expect(told).toEqual(['error no room', 'close']);
    await p.dispose();
  });

  it('holds the server a session uses, the cold one once a warm one gave way to it', async () => {
    const p = pool(1);
    const held = new Map<FakeServer, number>();
    const holdable = () => {
      const s = new FakeServer();
      Object.assign(s, { holdReading: () => (held.set(s, (held.get(s) ?? 0) + 1), () => void held.set(s, held.get(s)! - 1)) });
      return s;
    };
    p.learn(key, params, async () => holdable());
    await settle();
    let cold: FakeServer | undefined;
    const transport = (await warmOrColdTransport({ pool: p, key, cold: async () => (cold = holdable()), spare: async () => holdable() })) as WarmStartTransport;
    await transport.start();
    const first = transport.holdReading();
    const second = transport.holdReading();
    const heldWarm = [...held.entries()].find(([, n]) => n === 1)?.[0]; // the warm instance it was handed
    expect(heldWarm).toBeDefined();
    await transport.send(initialize(1, { ...params, clientInfo: { name: 'another-client', version: '2' } }));
    expect(transport.warm).toBe(false);
    expect(held.get(heldWarm!)).toBe(0); // ended with the warm instance
    expect(held.get(cold!)).toBe(1);
    first();
    expect(held.get(cold!)).toBe(1);
    second();
    second();
    expect(held.get(cold!)).toBe(0);
    await p.dispose();
  });

  it('is the cold transport itself when there is no pool or no agent', async () => {
    const server = new FakeServer();
    expect(await warmOrColdTransport({ pool: undefined, key, cold: async () => server, spare: async () => new FakeServer() })).toBe(server);
    expect(await warmOrColdTransport({ pool: pool(1), key: null, cold: async () => server, spare: async () => new FakeServer() })).toBe(server);
  });
});
