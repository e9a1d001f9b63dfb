/**
 * Security properties of the running stack (worker under Deno, sidecar CLI, real bubblewrap):
 *
 * - no agent route answers without a valid agent token, whatever the method or the credential
 *   tried (none, malformed, a host secret, the admin token, the stored hash itself);
 * - credentials do not cross roles: a host secret is no agent token, an agent token no host secret;
 * - host B's link (a rogue client) neither receives host A's traffic nor can answer for it;
 * - a contained server cannot reach the worker's port or any other loopback service of the host,
 *   and the sidecar has no listening port at all;
 * - no credential used in this file, right or wrong, appears in any worker or sidecar log.
 */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { REPO } from '../support/paths.ts';
import { Figures, SLOW_MS } from './figures.ts';
import { msg } from '../support/line-log.ts';
import { exchange } from './raw-client.ts';
import { RogueLink } from './rogue-link.ts';
import { listeningPorts } from './proc-stats.ts';
import { randomCredential } from '../support/configs.ts';
import { HOST_A, HOST_B, startStack, type Stack } from '../support/stack.ts';

const figures = new Figures('security');
const WRONG = { token: randomCredential('wrong-token'), secret: randomCredential('wrong-secret') };
const fixture = (name: string) => ({ command: process.execPath, args: [join(REPO, 'test/fixtures', name)] });
let stack: Stack;
let listener: Server;
let listenerPort: number;

beforeAll(async () => {
  stack = await startStack({
    servers: { echo: fixture('raw-echo-server.mjs'), probe: fixture('port-probe-server.mjs') },
    profiles: { 'no-network': { 'network-capabilities': [] }, 'loopback-only': { 'network-capabilities': ['loopback'] } },
    agents: [
      { name: 'boxed', servers: ['probe'], trust: { ref: 'no-network', containment: 'required' } },
      { name: 'loopy', servers: ['probe'], trust: { ref: 'loopback-only', containment: 'required' } },
    ],
    logLevel: 'debug',
  });
  // A stand-in for any other service on the host's loopback (a database, a dev server, …).
  listener = createServer((socket) => socket.on('error', () => {}).end('host service\n'));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  listenerPort = (listener.address() as { port: number }).port;
});

afterAll(async () => {
  figures.report();
  await stack?.stop();
  await new Promise((resolve) => listener?.close(resolve));
});

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };

describe('authentication and roles', { timeout: SLOW_MS }, () => {
  it('no agent route answers without a valid agent token', async () => {
    const spawned = stack.serverPids().length;
    const hashOfAlice = (await import('../../worker/auth/agent-auth.ts')).sha256Hex(stack.tokens.alice!);
    const credentials: Array<string | undefined> = [
      undefined, '', 'Bearer', 'Bearer ', `Basic ${Buffer.from(`alice:${stack.tokens.alice}`).toString('base64')}`, `Bearer ${WRONG.token}`,
      `Bearer ${stack.hostSecrets.a}`, `Bearer ${stack.hostSecrets.b}`, `Bearer ${stack.tokens.admin}`, `Bearer ${await hashOfAlice}`, `Bearer ${stack.tokens.alice} extra`,
    ];
    for (const path of ['/mcp', '/servers/echo/mcp', '/servers/probe/mcp', '/servers/offline/mcp', '/servers/no-such/mcp']) {
      for (const method of ['GET', 'POST', 'DELETE', 'PUT']) {
        for (const authorization of credentials) {
          const answer = await exchange(`${stack.url}${path}`, {
            method,
            headers: { ...(authorization !== undefined ? { authorization } : {}), 'mcp-session-id': 'guess', 'mcp-protocol-version': '2025-06-18' },
            ...(method === 'POST' ? { body: INIT } : {}),
          });
          figures.inputs++;
          expect([path, method, authorization, answer.status]).toEqual([path, method, authorization, 401]);
          expect(JSON.parse(answer.body)).toMatchObject({ error: { reason: 'unauthorized' } });
          expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="switchyard"/);
        }
      }
    }
    expect(stack.serverPids().length).toBe(spawned);
  });

  it('/healthz says only "ok" without a token, 401 with a wrong one, and only its own to an agent; / holds no data', async () => {
    const health = (authorization?: string) => exchange(`${stack.url}/healthz`, { method: 'GET', headers: authorization ? { authorization } : {} });
    expect(JSON.parse((await health()).body)).toEqual({ ok: true });
    for (const wrong of [`Bearer ${WRONG.token}`, `Bearer ${stack.hostSecrets.a}`, 'Bearer']) expect((await health(wrong)).status).toBe(401);
    const boxed = JSON.parse((await health(`Bearer ${stack.tokens.boxed}`)).body) as { servers: Array<{ name: string }>; hosts: unknown[] };
    expect(boxed.servers.map((s) => s.name)).toEqual(['probe']);
    const page = await exchange(`${stack.url}/`, { method: 'GET', headers: {} });
    expect(page.status).toBe(200);
    for (const name of [HOST_A, HOST_B, 'alice', 'boxed', 'loopy', ...stack.secrets]) expect(page.body).not.toContain(name);
    // The same page for the admin: it holds no data of its own, whoever asks (only the nonce differs).
    const admin = await exchange(`${stack.url}/`, { method: 'GET', headers: { authorization: `Bearer ${stack.tokens.admin}` } });
    const withoutNonce = (html: string) => html.replace(/nonce(-|=")[A-Za-z0-9_-]{16,}/g, "NONCE");
    expect(withoutNonce(admin.body)).toBe(withoutNonce(page.body));
    figures.inputs += 5;
  });

  it('a host secret is no agent token, and an agent token is no host secret', async () => {
    for (const secret of [stack.hostSecrets.a, stack.hostSecrets.b]) {
      const answer = await exchange(`${stack.url}/servers/echo/mcp`, { headers: { authorization: `Bearer ${secret}` }, body: INIT });
      expect(answer.status).toBe(401);
    }
    for (const [entity, secret] of [[HOST_A, stack.tokens.alice!], [HOST_A, stack.tokens.admin!], [HOST_A, stack.hostSecrets.b], [HOST_B, stack.hostSecrets.a], [HOST_A, WRONG.secret]] as const) {
      const error = (await RogueLink.connect(stack.url, entity, secret).catch((e: unknown) => e)) as { status?: number; body?: string };
      figures.inputs++;
      expect(error.status).toBe(401);
      expect(JSON.parse(error.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', message: 'Host credential refused: unknown entity id or wrong secret' } });
    }
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === HOST_A)?.linked).toBe(true); // the real sidecar kept its link
  });

  it('host B neither receives host A\'s traffic nor can answer for it; host A never sees host B\'s channels', async () => {
    const rogue = await RogueLink.connect(stack.url, HOST_B, stack.hostSecrets.b);
    const client = await connectClient(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!);
    figures.sessions++;
    for (let i = 0; i < 20; i++) {
      // Forged answers for every request id the agent uses, on every channel id host A's link may use.
      for (let channel = 1; channel <= 32; channel++) rogue.send(JSON.stringify({ v: 1, type: 'channel-message', channel, message: { jsonrpc: '2.0', id: i + 1, result: { content: [{ type: 'text', text: 'forged' }] } } }));
      expect(await client.callTool({ name: 'echo', arguments: { message: `genuine-${i}` } })).toEqual({ content: [{ type: 'text', text: `Echo: genuine-${i}` }] });
      figures.calls++;
      figures.inputs += 32;
    }
    expect(rogue.traffic()).toEqual([]);
    await closeClient(client);

    // A server bound to host B goes to host B's link only, never to host A's sidecar.
    const opening = connectClient(`${stack.url}/servers/offline/mcp`, stack.tokens.alice!).catch((e: unknown) => e);
    await expect.poll(() => rogue.traffic().find((f) => f.type === 'channel-open')).toMatchObject({ request: { type: 'mcp', connection: { 'server-name': 'offline', agent: 'alice' } } });
    await rogue.close();
    expect(String(await opening)).toMatch(/host-offline/);
    expect(stack.sidecar.err.filter((l) => l.text.includes('offline') && l.json.msg !== 'Link closed')).toEqual([]);
    figures.sessions++;
  });
});

describe('containment', { timeout: SLOW_MS }, () => {
  it('a contained server cannot reach the worker\'s port or another loopback service; the sidecar listens on none', async () => {
    expect(listeningPorts(stack.sidecar.pid)).toEqual([]);
    expect(listeningPorts(stack.worker.pid)).toEqual([stack.port]);
    const probe = async (agent: string): Promise<string[]> => {
      const before = stack.serverPids().length;
      const client = await connectClient(`${stack.url}/servers/probe/mcp`, stack.tokens[agent]!);
      figures.sessions++;
      const outcomes = [];
      for (const port of [stack.port, listenerPort]) {
        const result = await client.callTool({ name: 'probe', arguments: { port } });
        figures.calls++;
        outcomes.push((result.content as Array<{ text: string }>)[0]!.text);
      }
      const spawned = stack.sidecar.err.filter(msg('Server spawned')).at(-1)!;
      expect(stack.serverPids().length).toBe(before + 1);
      outcomes.push(spawned.json.backend as string);
      await closeClient(client);
      return outcomes;
    };
    expect(await probe('alice')).toEqual(['connected', 'connected', 'none']); // the control: uncontained, it can
    for (const agent of ['boxed', 'loopy']) {
      const [worker, other, backend] = await probe(agent);
      expect([agent, backend]).toEqual([agent, 'bubblewrap']);
      expect([agent, worker]).toEqual([agent, expect.stringMatching(/^failed: /)]);
      expect([agent, other]).toEqual([agent, expect.stringMatching(/^failed: /)]);
      figures.note(`contained probe (${agent})`, String(worker));
    }
  });

  it('no credential used in this file, right or wrong, reached a log', () => {
    const text = stack.history.map((p) => `${p.process.stdout()}\n${p.process.stderr()}`).join('\n');
    const leaked = [...stack.secrets, WRONG.token, WRONG.secret].filter((secret) => text.includes(secret));
    figures.failures += leaked.length;
    figures.note('log bytes scanned', text.length);
    expect(leaked).toEqual([]);
    expect(stack.leakedSecrets()).toEqual([]);
  });
});
