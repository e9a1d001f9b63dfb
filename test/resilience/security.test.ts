/**
 * Security properties of the running stack (worker under Deno, sidecar CLI, real bubblewrap):
 *
 * - no agent route answers without a valid agent token, whatever the method or the credential
 *   tried (none, malformed, a host's key, the admin token, the stored hash itself);
 * - credentials do not cross roles: a host's key is no agent token, one host's key links no other;
 * - host B's link (a rogue client) neither receives host A's traffic nor can answer for it;
 * - link identity is a key pair: a rogue worker the real sidecar dials gets a signature good for
 *   nothing (replayed or relayed, the real worker refuses it), a wrong key or a replayed proof is
 *   refused with nothing registered, and the worker config's public keys prove nothing; host A's
 *   real link is never replaced;
 * - a contained server cannot reach the worker's port or any other loopback service of the host,
 *   and the sidecar has no listening port at all;
 * - no credential used in this file, right or wrong, appears in any worker or sidecar log.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeClient, connectClient } from '../support/clients.ts';
import { REPO } from '../support/paths.ts';
import { Figures, SLOW_MS } from './figures.ts';
import { msg } from '../support/line-log.ts';
import { exchange } from './raw-client.ts';
import { RogueLink, type LinkRefusal } from './rogue-link.ts';
import { listeningPorts } from './proc-stats.ts';
import { encodeBase64Url } from '../../shared/base64url.ts';
import { createNonce, importPublicKey, parsePublicKey, verifyLinkProof } from '../../shared/link/link-identity.ts';
import { LINK_PROOF_HEADER } from '../../shared/link/link-upgrade-proof.ts';
import { credentialTexts, hostCredential, hostSigner, randomCredential, writeSidecarDir } from '../support/configs.ts';
import { ProcessSet } from '../support/processes.ts';
import { startSidecar as startSidecarProcess } from '../support/sidecar-process.ts';
import { RogueWorker } from './rogue-worker.ts';
import { HOST_A, HOST_B, startStack, type Stack } from '../support/stack.ts';
import { writeFileSync } from 'node:fs';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { TrustProfileStore } from '../../sidecar/trust/profile-store.ts';

const figures = new Figures('security');
const WRONG = { token: randomCredential('wrong-token') };
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
      `Bearer ${stack.hostKeys.a.publicKey}`, `Bearer ${credentialTexts(stack.hostKeys.b)[0]}`, `Bearer ${stack.tokens.admin}`, `Bearer ${await hashOfAlice}`, `Bearer ${stack.tokens.alice} extra`,
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
    for (const wrong of [`Bearer ${WRONG.token}`, `Bearer ${stack.hostKeys.a.publicKey}`, 'Bearer']) expect((await health(wrong)).status).toBe(401);
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

  it('a host\'s key is no agent token, and one host\'s key links no other host', async () => {
    for (const host of [stack.hostKeys.a, stack.hostKeys.b]) {
      for (const text of [host.publicKey, ...credentialTexts(host)]) {
        const answer = await exchange(`${stack.url}/servers/echo/mcp`, { headers: { authorization: `Bearer ${text}` }, body: INIT });
        expect(answer.status).toBe(401);
      }
    }
    for (const [entity, key] of [[HOST_A, stack.hostKeys.b], [HOST_B, stack.hostKeys.a]] as const) {
      // Refused before the upgrade: the upgrade proof is signed by the other host's key.
      const error = (await RogueLink.connect(stack.url, entity, key).catch((e: unknown) => e)) as LinkRefusal;
      figures.inputs++;
      expect(error.status).toBe(401);
      expect(JSON.parse(error.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', check: 'bad-signature', message: `The worker does not know this host's key (entity "${entity}"): if this host made a new key, give the worker config the line \`sidecar host-entry\` prints on it (switchyard host add --rekey)` } });
    }
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === HOST_A)?.linked).toBe(true); // the real sidecar kept its link
  });

  it('host B neither receives host A\'s traffic nor can answer for it; host A never sees host B\'s channels', async () => {
    const rogue = await RogueLink.connect(stack.url, HOST_B, stack.hostKeys.b);
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

describe('link identity: a key pair, nothing reusable', { timeout: SLOW_MS }, () => {
  const probeKey = async (publicKey: string) => importPublicKey(parsePublicKey(publicKey));
  const hostALinks = () => stack.worker.err.filter(msg('Host linked', { 'entity-id': HOST_A })).length;

  it('a rogue worker the real sidecar dials gets a signature the real worker refuses, replayed or relayed; host A keeps its link and sessions', async () => {
    const session = await connectClient(`${stack.url}/servers/echo/mcp`, stack.tokens.alice!);
    figures.sessions++;
    const linksBefore = hostALinks();
    const rogue = await RogueWorker.start();
    const procs = new ProcessSet();
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-rogue-worker-'));
    try {
      // Host A's own sidecar (its CLI, its key), pointed at the rogue instead of the real worker.
      writeSidecarDir(dir, { worker: rogue.url, host: stack.hostKeys.a, servers: {} });
      startSidecarProcess(procs, dir);

      // Replay: the rogue gets a genuine signature by host A for its own challenge...
      const first = await rogue.nextDial();
      expect(first.entityId).toBe(HOST_A);
      const ownNonce = createNonce();
      first.send({ v: 1, type: 'link-challenge', nonce: ownNonce });
      const recorded = await first.next('link-proof');
      expect(await verifyLinkProof(await probeKey(stack.hostKeys.a.publicKey), { origin: rogue.origin, entityId: HOST_A, nonce: ownNonce }, String(recorded.signature))).toBe(true);
      first.close();
      // All it was given: no credential in the upgrade request, nothing of the key in any frame.
      expect(first.headers.authorization).toBeUndefined();
      const given = JSON.stringify([first.headers, first.received]);
      for (const text of credentialTexts(stack.hostKeys.a)) expect(given).not.toContain(text);
      // Its upgrade proof names the rogue's origin: copied to the real worker, it opens no socket.
      const copied = (await RogueLink.dial(stack.url, HOST_A, { headers: { [LINK_PROOF_HEADER]: String(first.headers[LINK_PROOF_HEADER.toLowerCase()]) } }).catch((e: unknown) => e)) as LinkRefusal;
      expect(copied.status).toBe(401);
      expect(JSON.parse(copied.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', check: 'relayed', message: expect.stringContaining(`signed this link request for worker "${rogue.origin}"`) } });
      figures.inputs++;
      // ...which the real worker refuses: its challenge was another nonce, for another origin.
      const replay = await RogueLink.dial(stack.url, HOST_A, { key: stack.hostKeys.a });
      await replay.next('link-challenge');
      replay.send(JSON.stringify(recorded));
      const replayed = (await replay.next('link-accepted').catch((e: unknown) => e)) as LinkRefusal;
      expect(replayed.linkClose).toMatchObject({ reason: 'unauthorized' });
      figures.inputs++;

      // Relay: the real worker's challenge, passed to the sidecar, comes back signed for the rogue.
      const relay = await RogueLink.dial(stack.url, HOST_A, { key: stack.hostKeys.a });
      const realChallenge = await relay.next('link-challenge');
      const second = await rogue.nextDial();
      second.send(realChallenge);
      const relayed = await second.next('link-proof');
      expect(relayed.origin).toBe(rogue.origin);
      relay.send(JSON.stringify(relayed));
      const refused = (await relay.next('link-accepted').catch((e: unknown) => e)) as LinkRefusal;
      expect(refused.linkClose).toMatchObject({ reason: 'unauthorized', message: expect.stringContaining(`signed this challenge for worker "${rogue.origin}", but this worker is "127.0.0.1:${stack.port}"`) });
      figures.inputs++;
      second.close();

      // Relay with Host forged to the rogue's own origin: the worker does not take it for its own.
      const forged = (await RogueLink.dial(stack.url, HOST_A, { key: stack.hostKeys.a, headers: { host: rogue.origin } }).catch((e: unknown) => e)) as LinkRefusal;
      expect(forged.status).toBe(401);
      expect(JSON.parse(forged.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', message: expect.stringContaining(`is not this worker's address (it listens on port ${stack.port})`) } });
      figures.inputs++;
    } finally {
      await procs.stopAll();
      await rogue.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    // Never replaced: the same link, the same session.
    expect(hostALinks()).toBe(linksBefore);
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === HOST_A)).toMatchObject({ linked: true });
    expect(await session.callTool({ name: 'echo', arguments: { message: 'still here' } })).toEqual({ content: [{ type: 'text', text: 'Echo: still here' }] });
    figures.calls++;
    await closeClient(session);
  });

  it('a wrong key is refused with unauthorized and what to do, and nothing is registered', async () => {
    const wrong = hostCredential(HOST_B);
    const linksOfB = () => stack.worker.err.filter(msg('Host linked', { 'entity-id': HOST_B })).length;
    const before = linksOfB();
    const error = (await RogueLink.connect(stack.url, HOST_B, wrong).catch((e: unknown) => e)) as LinkRefusal;
    figures.inputs++;
    expect(error.status).toBe(401);
    expect(JSON.parse(error.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', message: expect.stringContaining('if this host made a new key, give the worker config the line `sidecar host-entry` prints on it (switchyard host add --rekey)') } });
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === HOST_B)).toMatchObject({ linked: false });
    expect(linksOfB()).toBe(before);
  });

  it('a proof replayed on a second connection is refused; on its own connection it links', async () => {
    const sign = await hostSigner(stack.hostKeys.b);
    const origin = `127.0.0.1:${stack.port}`;
    const first = await RogueLink.dial(stack.url, HOST_B, { key: stack.hostKeys.b });
    const { nonce } = await first.next('link-challenge');
    const proof = JSON.stringify({ v: 1, type: 'link-proof', origin, signature: await sign({ origin, entityId: HOST_B, nonce: String(nonce) }) });
    const second = await RogueLink.dial(stack.url, HOST_B, { key: stack.hostKeys.b });
    await second.next('link-challenge');
    second.send(proof);
    expect(((await second.next('link-accepted').catch((e: unknown) => e)) as LinkRefusal).linkClose).toMatchObject({ reason: 'unauthorized' });
    first.send(proof);
    await first.next('link-accepted');
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === HOST_B)).toMatchObject({ linked: true });
    await first.close();
    await expect.poll(async () => (await stack.health()).hosts.find((h) => h['entity-id'] === HOST_B)?.linked).toBe(false);
    figures.inputs += 2;
  });

  it('the worker config holds nothing to impersonate a host with: its public keys, as proof, prove nothing', async () => {
    const linksBefore = hostALinks();
    const config = JSON.parse(readFileSync(stack.worker.configFile, 'utf8')) as { hosts: Array<Record<string, string>> };
    expect(config.hosts.map((h) => Object.keys(h).sort())).toEqual([['entity-id', 'public-key'], ['entity-id', 'public-key']]);
    const origin = `127.0.0.1:${stack.port}`;
    for (const host of config.hosts) {
      const raw = parsePublicKey(host['public-key']!);
      const key = host['entity-id'] === HOST_A ? stack.hostKeys.a : stack.hostKeys.b;
      for (const signature of [encodeBase64Url(new Uint8Array([...raw, ...raw])), encodeBase64Url(new Uint8Array(64))]) {
        // As the upgrade proof: no socket at all.
        const upgrade = `v1;t=${Math.floor(Date.now() / 1000)};o=${origin};n=${createNonce()};s=${signature}`;
        const refused = (await RogueLink.dial(stack.url, host['entity-id']!, { headers: { [LINK_PROOF_HEADER]: upgrade } }).catch((e: unknown) => e)) as LinkRefusal;
        expect(refused.status).toBe(401);
        expect(JSON.parse(refused.body ?? '{}')).toMatchObject({ error: { reason: 'unauthorized', check: 'bad-signature' } });
        // As the challenge's proof, on a socket the host's own key opened.
        const link = await RogueLink.dial(stack.url, host['entity-id']!, { key });
        await link.next('link-challenge');
        link.send(JSON.stringify({ v: 1, type: 'link-proof', origin, signature }));
        expect(((await link.next('link-accepted').catch((e: unknown) => e)) as LinkRefusal).linkClose).toMatchObject({ reason: 'unauthorized' });
        figures.inputs += 2;
      }
    }
    expect(hostALinks()).toBe(linksBefore);
    expect((await stack.health()).hosts.find((h) => h['entity-id'] === HOST_A)).toMatchObject({ linked: true });
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
    const leaked = [...stack.secrets, WRONG.token].filter((secret) => text.includes(secret));
    figures.failures += leaked.length;
    figures.note('log bytes scanned', text.length);
    expect(leaked).toEqual([]);
    expect(stack.leakedSecrets()).toEqual([]);
  });
});

/**
 * The host holds the line (issue 13, findings 1, 6 and 7), on a stack of its own whose sidecar
 * names a floor and no uncontained launches: a session that names no profile runs under the
 * floor; a stale revision is refused without naming any revision to the worker; deep JSON from an
 * agent or a server gets `invalid-request` at once, never a hang, a misleading error or a dead
 * sidecar; a tool-call rule that throws denies the call and the sidecar keeps serving.
 */
describe('the host holds the line: its floor, deep JSON, hostile rules', { timeout: SLOW_MS }, () => {
  const LOOP = 'https://example.com/loop';
  let held: Stack;
  const nest = (n: number) => '{"next":'.repeat(n) + '{}' + '}'.repeat(n);
  const deepCall = (id: number, tool: string) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${tool}","arguments":{"message":${nest(100_000)}}}}`;
  const alive = () => held.sidecar.process.child.exitCode === null && held.sidecar.process.child.signalCode === null;
  const lastSpawn = () => held.sidecar.err.filter(msg('Server spawned')).at(-1)?.json.backend;

  beforeAll(async () => {
    held = await startStack({
      servers: { echo: fixture('raw-echo-server.mjs'), deep: fixture('deep-result-server.mjs') },
      profiles: {
        floor: { 'network-capabilities': [] },
        edited: { 'network-capabilities': [] },
        looping: { 'restricted-mcp-tool-call-schemas': [{ $id: LOOP, if: { properties: { toolName: { const: 'echo' } } }, then: { anyOf: [{ $ref: LOOP }] } }] },
      },
      agents: [
        { name: 'bob', servers: ['echo'] },
        { name: 'stale', servers: ['echo'], trust: { ref: 'edited' } },
        { name: 'looper', servers: ['echo'], trust: { ref: 'looping' } },
      ],
      sidecar: { 'trust-profile': 'floor', 'allow-uncontained': false },
    });
    // The host edits a profile after the worker config named its revision: that agent is now stale.
    writeFileSync(join(held.dir, 'sidecar', 'trust-profiles', 'edited.json'), JSON.stringify({ 'network-capabilities': ['loopback'] }));
  });
  afterAll(async () => {
    await held?.stop();
  });

  it('runs a session whose agent names no profile under the host floor: contained', async () => {
    const client = await connectClient(`${held.url}/servers/echo/mcp`, held.tokens.alice!);
    figures.sessions++;
    expect(await client.callTool({ name: 'echo', arguments: { message: 'floored' } })).toEqual({ content: [{ type: 'text', text: 'Echo: floored' }] });
    figures.calls++;
    expect(lastSpawn()).toBe('bubblewrap');
    await closeClient(client);
  });

  it('refuses a stale revision without naming any revision to the worker or the agent; the sidecar logs both at warn', async () => {
    const refused = await exchange(`${held.url}/servers/echo/mcp`, { headers: { authorization: `Bearer ${held.tokens.stale}` }, body: INIT });
    figures.inputs++;
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { data: { reason: 'trust-profile-stale' }, message: expect.stringContaining('sidecar host-entry') } });
    expect(refused.body).not.toMatch(/sha256:/);
    const current = (await new TrustProfileStore(join(held.dir, 'sidecar', 'trust-profiles')).load('edited')).revision;
    expect(held.worker.process.stderr()).not.toContain(current);
    const logged = held.sidecar.err.filter(msg('Trust profile revision differs from the one the worker sent: launch refused')).at(-1);
    expect(logged?.json).toMatchObject({ level: 'warn', ref: 'edited', current, expected: expect.stringMatching(/^sha256:/) });
  });

  it('answers a 100,000-level tools/call with invalid-request on both endpoints; that session, another agent\'s and the sidecar go on', async () => {
    for (const [path, tool] of [['/servers/echo/mcp', 'echo'], ['/mcp', 'echo__echo']] as const) {
      const client = await connectClient(`${held.url}${path}`, held.tokens.alice!);
      figures.sessions++;
      const transport = client.transport as unknown as { sessionId?: string; protocolVersion?: string };
      const headers = { authorization: `Bearer ${held.tokens.alice}`, 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': transport.protocolVersion ?? '2025-06-18' };
      const answer = await exchange(`${held.url}${path}`, { headers, body: deepCall(77, tool) });
      figures.inputs++;
      figures.faults++;
      expect([path, answer.status]).toEqual([path, 400]);
      expect(JSON.parse(answer.body)).toEqual({ jsonrpc: '2.0', id: 77, error: { code: -32600, message: 'Request nested deeper than 128 levels', data: { reason: 'invalid-request' } } });
      expect(await client.callTool({ name: tool, arguments: { message: 'same session' } })).toMatchObject({ content: [{ type: 'text', text: 'Echo: same session' }] });
      const other = await connectClient(`${held.url}/servers/echo/mcp`, held.tokens.bob!);
      figures.sessions++;
      expect(await other.callTool({ name: 'echo', arguments: { message: 'another agent' } })).toEqual({ content: [{ type: 'text', text: 'Echo: another agent' }] });
      figures.calls += 2;
      await closeClient(other);
      await closeClient(client);
    }
    expect(alive()).toBe(true);
  });

  it('answers a deep server result with a clear error for that call, on the passthrough and on /mcp against its recursive outputSchema, never a hang', async () => {
    for (const [path, tool, echo] of [['/servers/deep/mcp', 'deep', 'echo'], ['/mcp', 'deep__deep', 'deep__echo']] as const) {
      const client = await connectClient(`${held.url}${path}`, held.tokens.alice!);
      figures.sessions++;
      await client.listTools(); // the agent's SDK client now validates structuredContent against the recursive schema
      for (const depth of [100_000, 129]) {
        const error = await client.callTool({ name: tool, arguments: { depth } }).catch((e: unknown) => e);
        figures.calls++;
        figures.faults++;
        expect([path, depth, error instanceof McpError]).toEqual([path, depth, true]);
        expect(error).toMatchObject({ code: -32600, message: expect.stringContaining('Server output nested deeper than 128 levels'), data: { reason: 'invalid-request' } });
      }
      // Within the limit the same tool answers, and its structured content validates.
      expect(await client.callTool({ name: tool, arguments: { depth: 100 } })).toMatchObject({ content: [{ type: 'text', text: 'deep' }], structuredContent: { next: { next: {} } } });
      expect(await client.callTool({ name: echo, arguments: { message: 'after' } })).toMatchObject({ content: [{ type: 'text', text: 'Echo: after' }] });
      figures.calls += 2;
      await closeClient(client);
    }
    expect(alive()).toBe(true);
  });

  it('gives a compromised worker that names no profile the host floor, and answers its 100,000-level frame with invalid-request; the sidecar lives', async () => {
    const rogue = await RogueWorker.start();
    const procs = new ProcessSet();
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-compromised-worker-'));
    try {
      // A natural recursive deny rule (calls whose message is a nest of objects), the kind a 100,000-level call used to overflow.
      const nested = { $defs: { n: { type: 'object', properties: { next: { $ref: '#/$defs/n' } } } }, properties: { input: { properties: { message: { $ref: '#/$defs/n' } }, required: ['message'] } }, required: ['input'] };
      writeSidecarDir(dir, {
        worker: rogue.url,
        host: held.hostKeys.a,
        servers: { echo: fixture('raw-echo-server.mjs') },
        profiles: { floor: { 'network-capabilities': [], 'restricted-mcp-tool-call-schemas': [nested] } },
        sidecar: { 'trust-profile': 'floor', 'allow-uncontained': false },
      });
      const sidecar = startSidecarProcess(procs, dir);
      const dial = await rogue.nextDial();
      dial.send({ v: 1, type: 'link-challenge', nonce: createNonce() });
      await dial.next('link-proof');
      dial.send({ v: 1, type: 'link-accepted' });
      // What the issue's fake worker did: open a server naming no trust profile at all.
      dial.send({ v: 1, type: 'channel-open', channel: 1, request: { type: 'mcp', connection: { 'server-name': 'echo' } } });
      await dial.next('channel-open-ack');
      figures.sessions++;
      const answer = (id: number) => expect.poll(() => dial.received.find((f) => f.type === 'channel-message' && (f.message as { id?: unknown }).id === id)?.message, { timeout: SLOW_MS });
      const call = (id: number, message: unknown) => dial.send({ v: 1, type: 'channel-message', channel: 1, message: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } } });
      dial.send({ v: 1, type: 'channel-message', channel: 1, message: INIT });
      await answer(1).toMatchObject({ result: { serverInfo: { name: 'raw-echo' } } });
      call(2, 'under the floor');
      await answer(2).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: under the floor' }] } });
      expect(sidecar.err.filter(msg('Server spawned')).map((l) => l.json.backend)).toEqual(['bubblewrap']);

      dial.sendText(`{"v":1,"type":"channel-message","channel":1,"message":${deepCall(3, 'echo')}}`);
      figures.faults++;
      await answer(3).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Request nested deeper than 128 levels', data: { reason: 'invalid-request' } } });
      call(4, { next: { next: {} } }); // the deny rule itself still decides within the limit
      await answer(4).toMatchObject({ error: { data: { reason: 'denied-by-policy' } } });
      call(5, 'still serving');
      await answer(5).toMatchObject({ result: { content: [{ type: 'text', text: 'Echo: still serving' }] } });
      figures.calls += 4;
      expect(sidecar.process.child.exitCode).toBeNull();
    } finally {
      await procs.stopAll();
      await rogue.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('denies a tool call whose profile rule throws (a schema that recurses forever); the sidecar keeps serving everyone', async () => {
    const looper = await connectClient(`${held.url}/servers/echo/mcp`, held.tokens.looper!);
    figures.sessions++;
    const denied = await looper.callTool({ name: 'echo', arguments: { message: 'loops' } }).catch((e: unknown) => e);
    figures.calls++;
    figures.faults++;
    expect(denied).toMatchObject({ data: { reason: 'denied-by-policy', tool: 'echo' } });
    const bob = await connectClient(`${held.url}/servers/echo/mcp`, held.tokens.bob!);
    figures.sessions++;
    expect(await bob.callTool({ name: 'echo', arguments: { message: 'still here' } })).toEqual({ content: [{ type: 'text', text: 'Echo: still here' }] });
    figures.calls++;
    await closeClient(bob);
    await closeClient(looper);
    expect(alive()).toBe(true);
    expect(held.sidecar.err.filter((l) => l.json.level === 'error' && /Uncaught|Unhandled/.test(String(l.json.msg)))).toEqual([]);
    expect(held.leakedSecrets()).toEqual([]);
  });
});
