import { afterEach, describe, expect, it, vi } from 'vitest';
import { advanceBy, useFakeClock } from '../../test/support/fake-clock.ts';
import { PRE_AUTH_MAX_FRAME_BYTES } from '../../shared/link/link-handshake.ts';
import { PENDING_HANDSHAKE_LIMITS } from './pending-handshakes.ts';
import { WSContext, defineWebSocketHelper, type WSEvents } from 'hono/ws';
import { createFrameSocketPair, type CallbackFrameSocket } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { answerChallenge } from '../../shared/link/link-handshake.ts';
import { ENTITY_ID_HEADER, LINK_PROBE_HEADER, REFUSAL_HEADER } from '../../shared/link/link-types.ts';
import { canonicalOrigin } from '../../shared/link/link-identity.ts';
import { createLinkProofHeader, LINK_PROOF_HEADER } from '../../shared/link/link-upgrade-proof.ts';
import { LINK_FEATURES_HEADER } from '../../shared/link/link-features.ts';
import { hostCredential, hostSigner, type HostCredential } from '../../test/support/configs.ts';
import { InMemoryHostLinkRegistry } from './host-link-registry.ts';
import type { HostExpectations } from '../../shared/link/host-expectations.ts';
import { createLinkRoute, type LinkRouteOptions } from './link-route.ts';
import { notePeer } from './peer-address.ts';

const ALICE = hostCredential('alice-laptop');
const ORIGIN = '127.0.0.1:8787';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
  vi.useRealTimers();
});

/**
 * A stand-in for a runtime's upgrade helper: it "upgrades" by wiring the route's events to one
 * end of an in-memory socket pair; the other end (`sidecars`) is the dialling host's, for the test
 * to drive.
 */
function fakeUpgrade(opens = true) {
  const sidecars: CallbackFrameSocket[] = [];
  const upgradeWebSocket = defineWebSocketHelper<unknown, never>(async (_c, events: WSEvents<unknown>) => {
    // A dialler gone before the upgrade completed: the route is told nothing.
    if (!opens) return new Response(null, { status: 200 });
    const [serverSide, clientSide] = createFrameSocketPair();
    const ws = new WSContext<unknown>({ send: (data) => serverSide.send(String(data)), close: (code, reason) => serverSide.close(code, reason), readyState: 1 });
    serverSide.onmessage = (text) => events.onMessage?.(new MessageEvent('message', { data: text }), ws);
    // Node 20 has no CloseEvent; the route reads only code and reason.
    serverSide.onclose = (info) => events.onClose?.({ code: info.code ?? 1000, reason: info.reason ?? '' } as CloseEvent, ws);
    sidecars.push(buffered(clientSide));
    events.onOpen?.(new Event('open'), ws);
    return new Response(null, { status: 200 }); // as @hono/node-server answers after handing off the socket
  });
  return { upgradeWebSocket, sidecars };
}

/** Holds frames that arrive before the test sets `onmessage`, and hands them over once it does. */
function buffered(socket: CallbackFrameSocket): CallbackFrameSocket {
  const early: string[] = [];
  let handler: ((text: string) => void) | undefined;
  Object.defineProperty(socket, 'onmessage', {
    get: () => handler ?? ((text: string) => early.push(text)),
    set: (next: ((text: string) => void) | undefined) => {
      handler = next;
      queueMicrotask(() => {
        for (const text of early.splice(0)) handler?.(text);
      });
    },
  });
  return socket;
}

function setup(options: Partial<LinkRouteOptions> = {}, opens = true) {
  const logs: { msg: string; fields?: Record<string, unknown> }[] = [];
  const log = { info: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }), warn: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }) };
  const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop'], log });
  const { upgradeWebSocket, sidecars } = fakeUpgrade(opens);
  const app = createLinkRoute({ upgradeWebSocket, registry, hosts: [{ 'entity-id': 'alice-laptop', 'public-key': ALICE.publicKey }], log, ...options });
  return { app, registry, sidecars, logs };
}

/** Hosts whose keys the tests sign with, by entity id (ALICE's key for any other). */
const KEYS = new Map<string, HostCredential>([['alice-laptop', ALICE]]);

/** An upgrade request as the link client sends it: no proof. */
const bareHeaders = (entity: string, host = ORIGIN): Record<string, string> => ({ upgrade: 'websocket', connection: 'Upgrade', host, [ENTITY_ID_HEADER]: entity });

/** An upgrade request as the link client sends it: the host's proof, signed for the origin it dialled (`host` by default). */
async function upgradeHeaders(entity: string, host = ORIGIN, options: { key?: HostCredential; origin?: string; nowMs?: number } = {}): Promise<Record<string, string>> {
  const sign = await hostSigner(options.key ?? KEYS.get(entity) ?? ALICE);
  const proof = await createLinkProofHeader(sign, { origin: options.origin ?? canonicalOrigin(host), entityId: entity, ...(options.nowMs !== undefined ? { nowMs: options.nowMs } : {}) });
  return { ...bareHeaders(entity, host), [LINK_PROOF_HEADER]: proof };
}

/** Answers the worker's challenge on `socket` as its sidecar would, signing with `key` for `origin`. */
async function answer(socket: CallbackFrameSocket, key: HostCredential, origin = ORIGIN, entityId = 'alice-laptop', onExpects?: (expects: HostExpectations) => void) {
  const sign = await hostSigner(key);
  return answerChallenge(socket, {
    prove: async (nonce) => ({ origin, signature: await sign({ origin, entityId, nonce }) }),
    ...(onExpects !== undefined ? { onExpects } : {}),
    accept: () => {
      const endpoint = new LinkEndpoint(socket, {
        role: 'sidecar',
        onOpen: async (_request, channel) => {
          channel.onmessage = (m) => void channel.send(m);
          void channel.start();
        },
      });
      endpoints.push(endpoint);
      return endpoint;
    },
  });
}

async function echoes(registry: InMemoryHostLinkRegistry): Promise<unknown> {
  const channel = await registry.openChannel('alice-laptop', { type: 'mcp' });
  const reply = new Promise((resolve) => (channel.onmessage = resolve));
  void channel.start();
  await channel.send({ jsonrpc: '2.0', id: 7, method: 'ping' });
  return reply;
}

describe('link route', () => {
  it('answers a plain GET with 426 and never upgrades', async () => {
    const { app, sidecars } = setup();
    const response = await app.request('/link');
    expect(response.status).toBe(426);
    expect(await response.json()).toMatchObject({ error: { reason: 'invalid-request' } });
    expect(sidecars).toEqual([]);
  });

  it('tells a verified probe, and only a probe, what the worker expects of the host', async () => {
    const expects: HostExpectations = { servers: ['files'], 'trust-profiles': [{ ref: 'workspace', revision: `sha256:${'a'.repeat(64)}`, agents: ['alice'] }] };
    const asked: string[] = [];
    const { app, sidecars } = setup({ expectations: (entityId) => (asked.push(entityId), expects) });
    const told: HostExpectations[] = [];
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await answer(sidecars[0]!, ALICE, ORIGIN, 'alice-laptop', (e) => told.push(e));
    expect(told).toEqual([]);
    await app.request('/link', { headers: { ...(await upgradeHeaders('alice-laptop')), [LINK_PROBE_HEADER]: '1' } });
    await answer(sidecars[1]!, ALICE, ORIGIN, 'alice-laptop', (e) => told.push(e));
    expect(told).toEqual([expects]);
    expect(asked).toEqual(['alice-laptop']);
  });

  it('challenges the host, verifies its signature, and only then registers its link', async () => {
    const { app, registry, sidecars } = setup();
    const response = await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    expect(response.status).toBe(200);
    expect(registry.status()[0]).toMatchObject({ linked: false }); // upgraded, not yet proven
    await answer(sidecars[0]!, ALICE);
    expect(registry.status()[0]).toMatchObject({ 'entity-id': 'alice-laptop', linked: true });
    expect(await echoes(registry)).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });
  });

  it('attaches no link whose handshake began before a reload replaced or removed its host\'s entry; others link as ever (review s19)', async () => {
    for (const [hosts, unlink] of [[['alice-laptop'], ['alice-laptop']], [[], ['alice-laptop']]] as const) {
      const { app, registry, sidecars, logs } = setup();
      await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
      // The reload re-keys (or removes) the host while the old key's holder waits to answer.
      registry.setHosts([...hosts], [...unlink]);
      const endpoint = await answer(sidecars[0]!, ALICE);
      await endpoint.whenClosed;
      expect(registry.status().filter((s) => s.linked)).toEqual([]);
      expect(logs.map((l) => l.msg)).toContain("Host link refused: the worker config changed this host's entry while it linked");
    }
    // A reload that leaves the host's entry as it was takes nothing from its handshake.
    const { app, registry, sidecars } = setup();
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    registry.setHosts(['alice-laptop'], []);
    await answer(sidecars[0]!, ALICE);
    expect(registry.status()[0]).toMatchObject({ linked: true });
  });

  it('puts a first message in the channel-open frame only for a host whose upgrade announced open-first', async () => {
    for (const [extra, expected] of [
      [{ [LINK_FEATURES_HEADER]: 'open-first' }, [['channel-open', true]]],
      [{}, [['channel-open', false], ['channel-message', false]]],
    ] as const) {
      const { app, registry, sidecars } = setup();
      await app.request('/link', { headers: { ...(await upgradeHeaders('alice-laptop')), ...extra } });
      const endpoint = await answer(sidecars[0]!, ALICE);
      const seen: Array<[string, boolean]> = [];
      endpoint.onFrame = (direction, text) => {
        const frame = JSON.parse(text) as { type: string };
        if (direction === 'in') seen.push([frame.type, 'first' in frame]);
      };
      const ping = { jsonrpc: '2.0' as const, id: 7, method: 'ping' };
      const channel = await registry.openChannel('alice-laptop', { type: 'mcp' }, { first: ping });
      const reply = new Promise((resolve) => (channel.onmessage = resolve));
      void channel.start();
      expect(await reply).toEqual(ping);
      expect(seen).toEqual(expected);
    }
  });

  it('asks on each open for the host\'s own answers marked only of a host whose upgrade announced host-answers, and works with either', async () => {
    for (const [features, asked] of [['open-first,open-reply,host-answers', true], ['open-first,open-reply', false], [undefined, false]] as const) {
      const { app, registry, sidecars } = setup();
      await app.request('/link', { headers: { ...(await upgradeHeaders('alice-laptop')), ...(features !== undefined ? { [LINK_FEATURES_HEADER]: features } : {}) } });
      const endpoint = await answer(sidecars[0]!, ALICE);
      const opens: boolean[] = [];
      endpoint.onFrame = (direction, text) => {
        const frame = JSON.parse(text) as { type: string };
        if (direction === 'in' && frame.type === 'channel-open') opens.push('own' in frame);
      };
      expect(await echoes(registry)).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });
      expect(opens).toEqual([asked]);
    }
  });

  it('refuses a wrong key with unauthorized and what to do, registers nothing, and leaves the live link alone', async () => {
    const { app, registry, sidecars, logs } = setup();
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await answer(sidecars[0]!, ALICE);
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    const refusal = await answer(sidecars[1]!, hostCredential('alice-laptop')).catch((e: unknown) => e);
    expect(refusal).toMatchObject({
      reason: 'unauthorized',
      message: 'The worker does not know this host\'s key (entity "alice-laptop"): if this host made a new key, give the worker config the line `sidecar host-entry` prints on it (switchyard host add --rekey)',
    });
    expect(sidecars[1]!.closed).toBe(true);
    expect(logs.filter((l) => l.msg === 'Host linked')).toEqual([{ msg: 'Host linked', fields: { 'entity-id': 'alice-laptop', replaced: false } }]);
    expect(logs.find((l) => l.msg === 'Refused a host link')?.fields).toMatchObject({ 'entity-id': 'alice-laptop', reason: 'unauthorized' });
    expect(await echoes(registry)).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });
  });

  it('verifies a probe (switchyard doctor) like any link, then closes it without replacing the live link', async () => {
    const { app, registry, sidecars, logs } = setup();
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await answer(sidecars[0]!, ALICE);
    await app.request('/link', { headers: { ...(await upgradeHeaders('alice-laptop')), [LINK_PROBE_HEADER]: '1' } });
    await answer(sidecars[1]!, ALICE);
    await vi.waitFor(() => expect(sidecars[1]!.closed).toBe(true));
    expect(logs.filter((l) => l.msg === 'Host linked')).toHaveLength(1);
    expect(logs.some((l) => l.msg === 'Verified a host link probe')).toBe(true);
    expect(await echoes(registry)).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });

    // A probe with the wrong key is refused like any link.
    await app.request('/link', { headers: { ...(await upgradeHeaders('alice-laptop')), [LINK_PROBE_HEADER]: '1' } });
    await expect(answer(sidecars[2]!, hostCredential('alice-laptop'))).rejects.toMatchObject({ reason: 'unauthorized' });
  });

  it('refuses a signature replayed on a second connection: each challenge is fresh', async () => {
    const { app, registry, sidecars } = setup();
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    const sign = await hostSigner(ALICE);
    const first = sidecars[0]!;
    const challenges: Array<Record<string, unknown>> = [];
    first.onmessage = (text) => challenges.push(JSON.parse(text) as Record<string, unknown>);
    while (challenges.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    const proof = { v: 1, type: 'link-proof', origin: ORIGIN, signature: await sign({ origin: ORIGIN, entityId: 'alice-laptop', nonce: String(challenges[0]!.nonce) }) };
    first.close(); // the first connection never uses it

    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    const second = sidecars[1]!;
    const frames: Array<Record<string, unknown>> = [];
    second.onmessage = (text) => frames.push(JSON.parse(text) as Record<string, unknown>);
    second.send(JSON.stringify(proof));
    while (!second.closed) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(frames.map((f) => f.type)).toEqual(['link-challenge', 'link-close']);
    expect(frames[0]!.nonce).not.toBe(challenges[0]!.nonce);
    expect(frames[1]).toMatchObject({ reason: 'unauthorized' });
    expect(registry.status()[0]!.linked).toBe(false);
  });

  it('refuses, before upgrading, an entity id that is malformed, missing or unknown, logging only a bounded prefix of it', async () => {
    const { app, sidecars, logs } = setup();
    const hostile = `x${'A'.repeat(5000)}\u0007`;
    const cases: Array<[Record<string, string>, RegExp]> = [
      [bareHeaders(hostile), /^Send X-Switchyard-Entity-Id: <entity id>, the host's "entity-id": "xA+…" must be 1-128 letters/],
      [bareHeaders('../etc'), /^Send X-Switchyard-Entity-Id: .*"\.\.\/etc" must be 1-128/],
      [{ upgrade: 'websocket', host: ORIGIN }, /the header is missing$/],
      [await upgradeHeaders('mallory'), /^The worker does not know host "mallory": add this host to the worker config with the line `sidecar host-entry` prints on that host \(switchyard host add\)$/],
    ];
    for (const [headers, message] of cases) {
      const response = await app.request('/link', { headers });
      expect(response.status).toBe(401);
      expect((await response.json()) as unknown).toMatchObject({ error: { reason: 'unauthorized', message: expect.stringMatching(message) } });
    }
    expect(sidecars).toEqual([]);
    expect(JSON.stringify(logs).length).toBeLessThan(2000);
    expect(logs[0]!.fields!['entity-id']).toBe(`"x${'A'.repeat(63)}…"`);
  });

  it('puts every link request on the record: each refusal with the test it failed, each host that proved its key', async () => {
    const records: unknown[][] = [];
    const audit = { linkRefused: (...a: unknown[]) => void records.push(['refused', ...a]), linkAccepted: (...a: unknown[]) => void records.push(['accepted', ...a]) };
    const { app, sidecars } = setup({ audit });
    await app.request('/link', { headers: bareHeaders(`x${'A'.repeat(500)}`) });
    await app.request('/link', { headers: await upgradeHeaders('mallory') });
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop', ORIGIN, { key: hostCredential('alice-laptop') }) });
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await answer(sidecars[0]!, ALICE);
    await app.request('/link', { headers: { ...(await upgradeHeaders('alice-laptop')), [LINK_PROBE_HEADER]: '1' } });
    await answer(sidecars[1]!, ALICE);
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await expect(answer(sidecars[2]!, hostCredential('alice-laptop'))).rejects.toMatchObject({ reason: 'unauthorized' });
    await vi.waitFor(() => expect(records).toHaveLength(6));
    // A dialler that hangs up before answering, or ends the handshake itself with a reason of its
    // choosing, was refused nothing: no line.
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    sidecars[3]!.close();
    await vi.waitFor(() => expect(sidecars[3]!.closed).toBe(true));
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    sidecars[4]!.send(JSON.stringify({ v: 1, type: 'link-close', reason: 'unauthorized', message: 'Not signing for you' }));
    await vi.waitFor(() => expect(sidecars[4]!.closed).toBe(true));
    expect(records).toEqual([
      // The dialler's text that is no entity id stays out of the record.
      ['refused', null, 'unauthorized', 'entity-id', undefined],
      // A name no config lists is kept apart from the hosts that are.
      ['refused', null, 'unauthorized', 'unknown-host', 'mallory'],
      ['refused', 'alice-laptop', 'unauthorized', 'bad-signature', undefined],
      ['accepted', 'alice-laptop', false],
      ['accepted', 'alice-laptop', true],
      ['refused', 'alice-laptop', 'unauthorized', 'challenge'],
    ]);
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await expect(answer(sidecars[5]!, hostCredential('alice-laptop'))).rejects.toMatchObject({ reason: 'unauthorized' });
    await vi.waitFor(() => expect(records.length).toBeGreaterThanOrEqual(7));
    expect(records.slice(6)).toEqual([['refused', 'alice-laptop', 'unauthorized', 'challenge']]);
  });

  it('binds the proof to this worker: a Host it does not answer to, or a proof for another origin, is refused', async () => {
    const { app, registry, sidecars } = setup({ listenPort: () => 8787 });
    for (const host of ['evil.example:8787', '127.0.0.1:9999', '127.0.0.1']) {
      const response = await app.request('/link', { headers: await upgradeHeaders('alice-laptop', host) });
      expect([host, response.status]).toEqual([host, 401]);
      expect(await response.json()).toMatchObject({ error: { reason: 'unauthorized', message: expect.stringContaining('set "public-url" in the worker config') } });
    }
    expect(sidecars).toEqual([]);
    // The host signed for the worker it dialled, which is not this one: a relayed challenge.
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
    await expect(answer(sidecars[0]!, ALICE, '127.0.0.1:4444')).rejects.toMatchObject({
      reason: 'unauthorized',
      message: expect.stringMatching(/^Host "alice-laptop" signed this challenge for worker "127.0.0.1:4444", but this worker is "127.0.0.1:8787": a link relayed through another worker is refused/),
    });
    expect(registry.status()[0]!.linked).toBe(false);
  });

  it('with public-url, the proof must name that origin whatever Host says (a proxy that rewrites it)', async () => {
    const { app, registry, sidecars } = setup({ publicUrl: 'https://Yard.example.com/', listenPort: () => 8787 });
    // Signed for the Host the worker saw rather than the public origin: refused before the upgrade.
    const relayed = await app.request('/link', { headers: await upgradeHeaders('alice-laptop', 'internal:3000') });
    expect(relayed.status).toBe(401);
    expect(await relayed.json()).toMatchObject({ error: { reason: 'unauthorized', check: 'relayed', message: expect.stringContaining('but this worker is "yard.example.com"') } });
    expect(sidecars).toEqual([]);
    // The upgrade proof names the public origin, the challenge's proof another: the challenge refuses it.
    const dialled = { origin: 'yard.example.com' };
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop', 'internal:3000', dialled) });
    await expect(answer(sidecars[0]!, ALICE, 'internal:3000')).rejects.toMatchObject({ reason: 'unauthorized' });
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop', 'internal:3000', dialled) });
    await answer(sidecars[1]!, ALICE, 'yard.example.com');
    expect(registry.status()[0]!.linked).toBe(true);
  });

  it('with public-url, a sidecar on the worker\'s own machine may still dial it on loopback, at the port it listens on, from a loopback peer, and no other Host', async () => {
    const { app, registry, sidecars } = setup({ publicUrl: 'https://yard.example.com', linkOnLoopback: true, listenPort: () => 8787 });
    // Another port on loopback, or a name that is not loopback: only the public origin counts there.
    for (const host of ['127.0.0.1:9999', 'evil.example:8787']) {
      const response = await app.request('/link', { headers: await upgradeHeaders('alice-laptop', host) });
      expect(await response.json()).toMatchObject({ error: { reason: 'unauthorized', check: 'relayed', message: expect.stringContaining('but this worker is "yard.example.com"') } });
    }
    expect(sidecars).toEqual([]);
    // A proxy on this machine that rewrites Host to the loopback address: the public origin still links.
    await app.request('/link', { headers: await upgradeHeaders('alice-laptop', '127.0.0.1:8787', { origin: 'yard.example.com' }) });
    await answer(sidecars.at(-1)!, ALICE, 'yard.example.com');
    expect(registry.status()[0]!.linked).toBe(true);
    // The sidecar beside the worker (switchyard start --public-url) signs for the loopback address
    // it dialled, and the runtime saw it come from this machine.
    const fromPeer = async (peer: string | undefined) => {
      const request = new Request('http://localhost:8787/link', { headers: await upgradeHeaders('alice-laptop', 'localhost:8787') });
      notePeer(request, peer);
      return app.fetch(request);
    };
    await fromPeer('::ffff:127.0.0.1');
    await answer(sidecars.at(-1)!, ALICE, 'localhost:8787');
    expect(registry.status()[0]!.linked).toBe(true);
    // The same request from another machine (a proxy here sending every request with a loopback
    // Host), or with no peer the runtime told: only the public origin counts.
    for (const peer of ['203.0.113.9', undefined]) {
      expect(await (await fromPeer(peer)).json()).toMatchObject({ error: { reason: 'unauthorized', check: 'relayed', message: expect.stringContaining('but this worker is "yard.example.com"') } });
    }
  });
  it('with public-url alone, takes no proof signed for the loopback address, even from a loopback peer: a proxy on this machine connects from there', async () => {
    const { app, sidecars } = setup({ publicUrl: 'https://yard.example.com', listenPort: () => 8787 });
    const request = new Request('http://127.0.0.1:8787/link', { headers: await upgradeHeaders('alice-laptop', '127.0.0.1:8787') });
    notePeer(request, '127.0.0.1');
    expect(await (await app.fetch(request)).json()).toMatchObject({ error: { reason: 'unauthorized', check: 'relayed', message: expect.stringContaining('but this worker is "yard.example.com"') } });
    expect(sidecars).toEqual([]);
  });

  describe('before the upgrade: the host proves its key in the request', () => {
    const refusalOf = async (response: Response) => ({ status: response.status, refusal: response.headers.get(REFUSAL_HEADER), body: (await response.json()) as { error: Record<string, unknown> } });

    it('refuses an upgrade with no proof (a sidecar older than the worker) with 401 telling to update it, and never upgrades', async () => {
      const { app, sidecars, logs } = setup();
      const { status, refusal, body } = await refusalOf(await app.request('/link', { headers: bareHeaders('alice-laptop') }));
      const message = 'A link request naming host "alice-laptop" carries no X-Switchyard-Link-Proof: a sidecar older than this worker sends none, and this worker upgrades only a link request signed with the host key; update Switchyard on that host and restart its sidecar';
      expect({ status, refusal, body }).toEqual({ status: 401, refusal: message, body: { error: { reason: 'unauthorized', check: 'no-proof', message } } });
      expect(sidecars).toEqual([]);
      expect(logs.at(-1)).toEqual({ msg: 'Refused a host link', fields: { 'entity-id': 'alice-laptop', reason: 'unauthorized', check: 'no-proof', problem: message } });
    });

    it('refuses a proof by another key, a malformed one, or one whose nonce was already used, and never upgrades', async () => {
      const { app, registry, sidecars, logs } = setup();
      const byMallory = await refusalOf(await app.request('/link', { headers: await upgradeHeaders('alice-laptop', ORIGIN, { key: hostCredential('alice-laptop') }) }));
      expect(byMallory).toMatchObject({ status: 401, body: { error: { reason: 'unauthorized', check: 'bad-signature', message: expect.stringMatching(/^The worker does not know this host's key \(entity "alice-laptop"\): if this host made a new key/) } } });
      const good = await upgradeHeaders('alice-laptop');
      const proof = good[LINK_PROOF_HEADER]!;
      for (const bad of ['v2;' + proof.slice(3), proof.replace(/;s=.*/, ';s=AAAA'), proof.replace(/;o=[^;]*/, ';o=Evil Host'), 'x'.repeat(5000)]) {
        const response = await refusalOf(await app.request('/link', { headers: { ...good, [LINK_PROOF_HEADER]: bad } }));
        expect(response).toMatchObject({ status: 401, body: { error: { reason: 'unauthorized', check: 'malformed-proof', message: expect.stringMatching(/^Malformed X-Switchyard-Link-Proof: /) } } });
      }
      expect(sidecars).toEqual([]);
      // The good proof upgrades once; copied into a second request it is refused before the upgrade.
      expect((await app.request('/link', { headers: good })).status).toBe(200);
      const replayed = await refusalOf(await app.request('/link', { headers: good }));
      expect(replayed).toMatchObject({ status: 401, body: { error: { reason: 'unauthorized', check: 'replayed' } } });
      expect(sidecars).toHaveLength(1);
      await answer(sidecars[0]!, ALICE);
      expect(registry.status()[0]!.linked).toBe(true);
      // Nothing of a proof reaches the log.
      expect(JSON.stringify(logs)).not.toContain(proof.slice(-86));
      expect(JSON.stringify(logs)).not.toContain('x'.repeat(100));
    });

    it('refuses a proof whose time is more than 5 minutes from the worker\'s clock, saying by how much, and takes one within', async () => {
      const now = Date.UTC(2030, 0, 1, 12, 0, 0);
      const { app, registry, sidecars } = setup({ now: () => now });
      for (const [offset, words] of [[-412, 'is 412 s behind'], [301, 'is 301 s ahead of']] as const) {
        const { status, body } = await refusalOf(await app.request('/link', { headers: await upgradeHeaders('alice-laptop', ORIGIN, { nowMs: now + offset * 1000 }) }));
        expect({ status, body }).toEqual({
          status: 401,
          body: { error: { reason: 'unauthorized', check: 'clock-skew', 'skew-seconds': offset, message: `The clock of host "alice-laptop" ${words} the worker's (2030-01-01T12:00:00Z; at most 300 s apart): set that host's clock right (NTP) and it links again` } },
        });
      }
      expect(sidecars).toEqual([]);
      for (const offset of [-300, 300]) expect((await app.request('/link', { headers: await upgradeHeaders('alice-laptop', ORIGIN, { nowMs: now + offset * 1000 }) })).status).toBe(200);
      await answer(sidecars[1]!, ALICE);
      expect(registry.status()[0]!.linked).toBe(true);
    });
    it('refuses a used proof for as long as its time passes the check, to its last millisecond', async () => {
      const signedAt = Date.UTC(2030, 0, 1, 12, 0, 0);
      let now = signedAt - 300_000;
      const { app } = setup({ now: () => now });
      const headers = await upgradeHeaders('alice-laptop', ORIGIN, { nowMs: signedAt });
      expect((await app.request('/link', { headers })).status).toBe(200);
      now = signedAt + 300_999;
      expect(await refusalOf(await app.request('/link', { headers }))).toMatchObject({ status: 401, body: { error: { check: 'replayed' } } });
      now = signedAt + 301_000;
      expect(await refusalOf(await app.request('/link', { headers }))).toMatchObject({ status: 401, body: { error: { check: 'clock-skew' } } });
    });
  });

  describe('before the proof', () => {
    for (const id of ['bob-desk', 'carol-box']) KEYS.set(id, hostCredential(id));
    const others = ['bob-desk', 'carol-box'].map((id) => ({ 'entity-id': id, 'public-key': KEYS.get(id)!.publicKey }));
    const hosts = [{ 'entity-id': 'alice-laptop', 'public-key': ALICE.publicKey }, ...others];
    const dial = async (app: ReturnType<typeof setup>['app'], entity: string) => {
      const response = await app.request('/link', { headers: await upgradeHeaders(entity) });
      return { status: response.status, body: response.status === 200 ? null : ((await response.json()) as unknown), retryAfter: response.headers.get('retry-after') };
    };

    it('gives a new handshake for a host with its slots full the place of its oldest, which is closed; past the total, 429 before upgrading', async () => {
      const { app, sidecars, logs } = setup({ hosts, pendingLimits: { total: 3, perEntity: 2 } });
      expect([await dial(app, 'alice-laptop'), await dial(app, 'alice-laptop')].map((d) => d.status)).toEqual([200, 200]);
      // Refusing here would let a host's own abandoned attempts (or a stolen key's silent sockets) lock it out.
      expect((await dial(app, 'alice-laptop')).status).toBe(200);
      await vi.waitFor(() => expect(sidecars[0]!.closed).toBe(true));
      expect([sidecars[1]!.closed, sidecars[2]!.closed]).toEqual([false, false]);
      expect((await dial(app, 'bob-desk')).status).toBe(200);
      expect(await dial(app, 'carol-box')).toEqual({
        status: 429,
        retryAfter: '5',
        body: { error: { reason: 'limit-reached', 'entity-id': 'carol-box', limit: 'total', max: 3, message: 'This worker already has 3 link handshakes pending: retry in a few seconds' } },
      });
      expect(sidecars).toHaveLength(4);
      // One line when a limit fills, not one per refusal.
      expect(logs.filter((l) => l.fields?.reason === 'limit-reached')).toHaveLength(1);
    });

    it('frees a slot the moment a handshake verifies, is refused, or its socket closes', async () => {
      const { app, registry, sidecars } = setup({ hosts, pendingLimits: { total: 2, perEntity: 2 } });
      await dial(app, 'alice-laptop');
      await dial(app, 'alice-laptop');
      expect((await dial(app, 'bob-desk')).status).toBe(429);
      await answer(sidecars[0]!, ALICE);
      expect(registry.status()[0]).toMatchObject({ linked: true });
      expect((await dial(app, 'bob-desk')).status).toBe(200);
      // Refused: a proof by another key.
      await expect(answer(sidecars[1]!, hostCredential('alice-laptop'))).rejects.toMatchObject({ reason: 'unauthorized' });
      expect((await dial(app, 'carol-box')).status).toBe(200);
      expect((await dial(app, 'carol-box')).status).toBe(429);
      sidecars[2]!.close();
      await vi.waitFor(() => expect(sidecars[2]!.closed).toBe(true));
      expect((await dial(app, 'carol-box')).status).toBe(200);
      // The verified link holds no slot all along.
      expect(await echoes(registry)).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });
    });

    it('frees the slot of a silent dialler at the 5 s deadline, and of an upgrade that never opened soon after', async () => {
      useFakeClock();
      const { app, sidecars } = setup({ hosts, pendingLimits: { total: 1, perEntity: 1 } });
      await dial(app, 'alice-laptop');
      expect((await dial(app, 'bob-desk')).status).toBe(429);
      await advanceBy(4_900);
      expect(sidecars[0]!.closed).toBe(false);
      await advanceBy(200);
      expect(sidecars[0]!.closed).toBe(true);
      expect((await dial(app, 'bob-desk')).status).toBe(200);

      const never = setup({ hosts, pendingLimits: { total: 1, perEntity: 1 } }, false);
      expect((await dial(never.app, 'bob-desk')).status).toBe(200);
      expect((await dial(never.app, 'carol-box')).status).toBe(429);
      await advanceBy(6_100);
      expect((await dial(never.app, 'carol-box')).status).toBe(200);
    });

    it('by default takes 4 handshakes pending per host and 64 in all', async () => {
      expect(PENDING_HANDSHAKE_LIMITS).toEqual({ total: 64, perEntity: 4 });
      const many = Array.from({ length: 17 }, (_, i) => ({ 'entity-id': `host-${i}`, 'public-key': ALICE.publicKey }));
      const { app, sidecars } = setup({ hosts: many });
      const statuses: number[] = [];
      // A fifth for one host takes its oldest's place: 16 hosts × 5 dials leave 64 pending.
      for (const { 'entity-id': id } of many.slice(0, 16)) for (let i = 0; i < 5; i++) statuses.push((await dial(app, id)).status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(80);
      await vi.waitFor(() => expect(sidecars.filter((s) => s.closed)).toHaveLength(16));
      expect((await dial(app, 'host-16')).body).toMatchObject({ error: { reason: 'limit-reached', limit: 'total', max: 64 } });
      for (const sidecar of sidecars) sidecar.close();
    });

    it('refuses a frame over 8 KiB with 1009 and a link-close before parsing it, registering nothing', async () => {
      const { app, registry, sidecars, logs } = setup();
      await app.request('/link', { headers: await upgradeHeaders('alice-laptop') });
      const sidecar = sidecars[0]!;
      const frames: Array<Record<string, unknown>> = [];
      sidecar.onmessage = (text) => frames.push(JSON.parse(text) as Record<string, unknown>);
      const closed = new Promise<unknown>((resolve) => (sidecar.onclose = resolve));
      sidecar.send(JSON.stringify({ v: 1, type: 'link-proof', origin: 'o'.repeat(1024 * 1024), signature: 'A'.repeat(86) }));
      expect(await closed).toMatchObject({ code: 1009 });
      expect(frames.map((f) => f.type)).toEqual(['link-challenge', 'link-close']);
      expect(frames[1]).toMatchObject({ reason: 'invalid-request', message: `Incoming link frame exceeds the ${PRE_AUTH_MAX_FRAME_BYTES} byte limit before the host is verified` });
      expect(registry.status()[0]!.linked).toBe(false);
      expect(logs.find((l) => l.msg === 'Refused a host link')?.fields).toMatchObject({ 'entity-id': 'alice-laptop', reason: 'invalid-request' });
    });
  });
});
