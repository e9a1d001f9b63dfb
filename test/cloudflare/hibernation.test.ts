/**
 * Hibernation under workerd: a linked host's Durable Object left idle is taken out of memory by
 * the runtime (workerd evicts an object after 10 s without an event; the sidecar's keepalives,
 * answered by the auto-response, are not events), its link socket staying open. The next agent
 * request wakes it: the object rebuilds the link from the socket's attachment, without a new
 * handshake, with the link features the host announced when it dialled, and the call is served
 * by the same sidecar over the same link.
 *
 * A listen stream, one server's (held by its host's object) or the aggregate's (held by the edge),
 * is a request in flight: it keeps its objects in memory, writes a keepalive comment while quiet,
 * and still carries the next change after a wait past that eviction.
 *
 * The wait is the runtime's own inactivity timeout; nothing can shorten it from outside, so the
 * test asks `/healthz` (whose status read is itself an event) only every 11 s, until the object
 * reports having woken.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { fixtureServer } from '../support/paths.ts';
import { startWorkerdStack, type WorkerdStack } from '../support/workerd-stack.ts';
import { openListen } from '../modern/listen-client.ts';
import { modernPost } from '../modern/modern-client.ts';

const INACTIVITY_MS = 11_000;

let stack: WorkerdStack;
beforeAll(async () => {
  stack = await startWorkerdStack({
    servers: { a: { 'pid-a': fixtureServer('pid-server.mjs'), 'modern-a': fixtureServer('modern-echo-server.mjs') }, b: { 'pid-b': fixtureServer('pid-server.mjs') } },
    // Kept across eviction, as Cloudflare keeps it: what an object saved for its next instance.
    lastingStorage: true,
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

type HostLine = { 'entity-id': string; linked: boolean; since: string | null; roundTripMs?: number | null; wakes?: number; features?: string[] };

async function hostLine(entityId: string): Promise<HostLine> {
  return (await stack.health()).hosts.find((h) => h['entity-id'] === entityId) as unknown as HostLine;
}

async function recentErrors(): Promise<Array<{ server: string | null; reason: string }>> {
  const response = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.tokens.admin!}` } });
  return ((await response.json()) as { recentErrors: Array<{ server: string | null; reason: string }> }).recentErrors;
}

describe('a host link on a hibernating Durable Object', () => {
  it('wakes for the next agent request and serves it over the same link', async () => {
    const entityId = stack.entityId('a');
    const linksBefore = stack.sidecar('a').lines().filter((l) => l.msg === 'Linked to the worker').length;
    const before = await hostLine(entityId);
    // The sidecar announced open-first, open-reply, host-answers, paced and roster when it dialled (`link-features.ts`),
    // and was told its roster once linked.
    expect(before).toMatchObject({ linked: true, wakes: 0, features: ['open-first', 'open-reply', 'host-answers', 'paced', 'roster'] });

    // A server that dies under its session: a failure the host's object keeps, and reports with its state.
    const doomed = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    process.kill(Number(((await doomed.callTool({ name: 'pid' })) as { content: Array<{ text: string }> }).content[0]!.text), 'SIGKILL');
    const exited = async () => (await recentErrors()).filter((e) => e.server === 'pid-a' && e.reason === 'server-exited').length;
    await expect.poll(exited, { timeout: 10_000 }).toBe(1);
    await closeClient(doomed).catch(() => {});

    let line: HostLine | undefined;
    for (let tries = 0; tries < 5 && (line?.wakes ?? 0) === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, INACTIVITY_MS));
      line = await hostLine(entityId);
    }
    expect(line).toMatchObject({ linked: true, wakes: expect.any(Number) });
    expect(line!.wakes).toBeGreaterThan(0);
    // The failure outlived the instance that kept it (review s33: an evicted object reported none).
    expect(await exited()).toBe(1);
    // Still the time the host linked, not the time the object woke, and the features it announced
    // then: the endpoint rebuilt around the socket still puts a modern request in the open frame
    // and asks for its answer in one reply frame.
    expect(line!.since).toBe(before.since);
    expect(line!.features).toEqual(['open-first', 'open-reply', 'host-answers', 'paced', 'roster']);
    // The link's round trip, which sizes its window, is kept through hibernation (the handshake's, in the attachment).
    expect(before.roundTripMs).toEqual(expect.any(Number));
    expect(line!.roundTripMs).toEqual(expect.any(Number));

    const client = await connectClient(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!);
    const pid = Number(((await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> }).content[0]!.text);
    await closeClient(client);
    expect(stack.serverPids('a')).toContain(pid);
    const modern = await modernPost(`${stack.url}/servers/pid-a/mcp`, stack.tokens.alice!, 'tools/call', { name: 'pid', arguments: {} });
    expect(modern.status).toBe(200);
    // Served over the link made before hibernating: the sidecar never dialled again, and was not
    // told its roster again by the woken object.
    expect(stack.sidecar('a').lines().filter((l) => l.msg === 'Linked to the worker')).toHaveLength(linksBefore);
    const rosters = stack.sidecar('a').lines().filter((l) => l.msg === 'Roster from the worker');
    expect(rosters).toHaveLength(linksBefore);
    expect(rosters[0]).toMatchObject({ agents: 1, endedSpares: 0, endedInstances: 0 });
  }, 90_000);

  it('keeps an idle legacy session: its object, holding open relays, is not evicted while the session lives', async () => {
    const client = await connectClient(`${stack.url}/servers/pid-b/mcp`, stack.tokens.alice!);
    try {
      const pid = Number(((await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> }).content[0]!.text);
      // Past the runtime's inactivity eviction, with no request in between.
      await new Promise((resolve) => setTimeout(resolve, INACTIVITY_MS + 4_000));
      const again = Number(((await client.callTool({ name: 'pid' })) as { content: Array<{ text: string }> }).content[0]!.text);
      expect(again).toBe(pid);
      expect(stack.serverPids('b')).toContain(pid);
    } finally {
      await closeClient(client);
    }
  }, 60_000);

  it('keeps quiet listen streams open past the inactivity eviction: a keepalive on each, then the next change still arrives', async () => {
    const token = stack.tokens.alice!;
    const linksBefore = stack.sidecar('a').lines().filter((l) => l.msg === 'Linked to the worker').length;
    const one = await openListen(`${stack.url}/servers/modern-a/mcp`, token, 'quiet-one', { toolsListChanged: true });
    const all = await openListen(`${stack.url}/mcp`, token, 'quiet-all', { toolsListChanged: true });
    try {
      expect((await one.next()).method).toBe('notifications/subscriptions/acknowledged');
      expect((await all.next()).method).toBe('notifications/subscriptions/acknowledged');
      // The keepalive interval (15 s) is past the runtime's 10 s eviction: nothing else happens meanwhile.
      await Promise.all([one.keepalive(), all.keepalive()]);
      const touched = await modernPost(`${stack.url}/servers/modern-a/mcp`, token, 'tools/call', { name: 'touch-tools', arguments: {} });
      expect(touched.response.result.content[0].text).toBe('Notified 2');
      const changed = (id: string) => ({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': id } } });
      expect(await one.next()).toEqual(changed('quiet-one'));
      expect(await all.next()).toEqual(changed('quiet-all'));
      expect(stack.sidecar('a').lines().filter((l) => l.msg === 'Linked to the worker')).toHaveLength(linksBefore);
    } finally {
      await one.close();
      await all.close();
    }
  }, 60_000);

  it('finds a host gone silent while its object slept: /healthz says host-offline and a request is refused at once, not after its deadline (review s20)', async () => {
    const entityId = stack.entityId('b');
    const sidecar = stack.sidecar('b');
    // Frozen, its socket still open: no keepalive, no close, as a laptop put to sleep.
    process.kill(sidecar.pid, 'SIGSTOP');
    try {
      let line: HostLine | undefined;
      // Each look wakes the object, which took its waking moment for the host's last word.
      for (let tries = 0; tries < 6 && line?.linked !== false; tries++) {
        await new Promise((resolve) => setTimeout(resolve, INACTIVITY_MS));
        line = await hostLine(entityId);
      }
      expect(line?.linked).toBe(false);
      // At once: a link taken for alive would hold it until its 60 s deadline, then request-timeout.
      const refused = await modernPost(`${stack.url}/servers/pid-b/mcp`, stack.tokens.alice!, 'tools/call', { name: 'pid', arguments: {} });
      expect(refused.response.error.data.reason).toBe('host-offline');
    } finally {
      process.kill(sidecar.pid, 'SIGCONT');
    }
    await stack.waitLinked('b');
  }, 120_000);
});
