import { afterEach, describe, expect, it } from 'vitest';
import { WSContext, defineWebSocketHelper, type WSEvents } from 'hono/ws';
import { createFrameSocketPair } from '../../shared/link/frame-socket.ts';
import { LinkEndpoint } from '../../shared/link/link-endpoint.ts';
import { sha256Hex } from '../../shared/credentials.ts';
import { ENTITY_ID_HEADER } from '../../shared/link/link-types.ts';
import { InMemoryHostLinkRegistry } from './host-link-registry.ts';
import { createLinkRoute } from './link-route.ts';

const SECRET = 'route-secret-0123456789abcdef';

const endpoints: LinkEndpoint[] = [];
afterEach(() => {
  for (const endpoint of endpoints.splice(0)) endpoint.close();
});

/**
 * A stand-in for a runtime's upgrade helper: it "upgrades" by wiring the route's events to one
 * end of an in-memory socket pair, whose other end runs a sidecar endpoint.
 */
function fakeUpgrade() {
  const upgrades: string[] = [];
  const upgradeWebSocket = defineWebSocketHelper<unknown, never>(async (c, events: WSEvents<unknown>) => {
    upgrades.push(c.req.header(ENTITY_ID_HEADER) ?? '');
    const [serverSide, clientSide] = createFrameSocketPair();
    const ws = new WSContext<unknown>({ send: (data) => serverSide.send(String(data)), close: (code, reason) => serverSide.close(code, reason), readyState: 1 });
    serverSide.onmessage = (text) => events.onMessage?.(new MessageEvent('message', { data: text }), ws);
    // Node 20 has no CloseEvent; the route reads only code and reason.
    serverSide.onclose = (info) => events.onClose?.({ code: info.code ?? 1000, reason: info.reason ?? '' } as CloseEvent, ws);
    endpoints.push(
      new LinkEndpoint(clientSide, {
        role: 'sidecar',
        onOpen: async (_request, channel) => {
          channel.onmessage = (m) => void channel.send(m);
          void channel.start();
        },
      }),
    );
    events.onOpen?.(new Event('open'), ws);
    return new Response(null, { status: 200 }); // as @hono/node-server answers after handing off the socket
  });
  return { upgradeWebSocket, upgrades };
}

async function setup() {
  const logs: { msg: string; fields?: Record<string, unknown> }[] = [];
  const log = { info: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }), warn: (msg: string, fields?: Record<string, unknown>) => logs.push({ msg, fields }) };
  const registry = new InMemoryHostLinkRegistry({ hosts: ['alice-laptop'] });
  const { upgradeWebSocket, upgrades } = fakeUpgrade();
  const app = createLinkRoute({ upgradeWebSocket, registry, hosts: [{ 'entity-id': 'alice-laptop', 'secret-sha256': await sha256Hex(SECRET) }], log });
  return { app, registry, upgrades, logs };
}

const upgradeHeaders = (entity: string, secret: string) => ({ upgrade: 'websocket', connection: 'Upgrade', [ENTITY_ID_HEADER]: entity, authorization: `Bearer ${secret}` });

describe('link route', () => {
  it('answers a plain GET with 426 and never upgrades', async () => {
    const { app, upgrades } = await setup();
    const response = await app.request('/link');
    expect(response.status).toBe(426);
    expect(await response.json()).toMatchObject({ error: { reason: 'invalid-request' } });
    expect(upgrades).toEqual([]);
  });

  it('refuses a wrong credential with 401 unauthorized before upgrading, and logs it without the secret', async () => {
    const { app, upgrades, logs, registry } = await setup();
    const response = await app.request('/link', { headers: upgradeHeaders('alice-laptop', 'not-the-secret-xyz') });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { reason: 'unauthorized' } });
    expect(upgrades).toEqual([]);
    expect(logs).toEqual([{ msg: 'Refused a host link', fields: { 'entity-id': 'alice-laptop', problem: expect.any(String) } }]);
    expect(JSON.stringify(logs)).not.toContain('not-the-secret-xyz');
    expect(registry.status()[0]!.linked).toBe(false);
  });

  it('upgrades an authenticated host and registers its link', async () => {
    const { app, registry, upgrades } = await setup();
    const response = await app.request('/link', { headers: upgradeHeaders('alice-laptop', SECRET) });
    expect(response.status).toBe(200);
    expect(upgrades).toEqual(['alice-laptop']);
    expect(registry.status()[0]).toMatchObject({ 'entity-id': 'alice-laptop', linked: true });
    const channel = await registry.openChannel('alice-laptop', { type: 'mcp' });
    const reply = new Promise((resolve) => (channel.onmessage = resolve));
    void channel.start();
    await channel.send({ jsonrpc: '2.0', id: 7, method: 'ping' });
    expect(await reply).toEqual({ jsonrpc: '2.0', id: 7, method: 'ping' });
  });
});
