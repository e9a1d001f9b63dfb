import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort, isAlive } from '../../test/support/processes.ts';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeInfoOf, createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import type { ProcessLaunchRequest, SpawnAttempt } from '../process/process-executor.ts';
import type { ContainmentPolicy } from '../sandbox/index.ts';
import type { HostTrustPolicy } from '../trust/host-floor.ts';
import { createSidecarComposition, type SidecarComposition } from './composition.ts';
import { McpTransportListener } from './mcp-transport-listener.ts';
import { RemoteMcpHostHandler } from './remote-mcp-host-handler.ts';
import type { WireError } from '../../shared/errors.ts';
import { createLogger, silentLogger } from '../log.ts';
import { ProcessExecutor } from '../process/process-executor.ts';
import { PolicyCache } from '../sandbox/policy-cache.ts';
import { TrustProfileStore } from '../trust/profile-store.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = process.execPath;
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const ECHO = join(ROOT, 'test/fixtures/echo-server.mjs');
const EARLY_EXIT = join(ROOT, 'test/fixtures/early-exit-server.mjs');
const TOOL_LOG = join(ROOT, 'test/link/tool-log-server.mjs');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-host-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeJson(dir: string, path: string, value: unknown): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), JSON.stringify(value, null, 2));
}

/**
 * The production composition on `configDir`, recording every launch request and spawn. `trust`
 * is sidecar.json's floor and allow-uncontained; these tests run uncontained servers unless they
 * say otherwise.
 */
function composition(configDir: string, trust: HostTrustPolicy = { allowUncontained: true }): { sidecar: SidecarComposition; spawns: SpawnAttempt[]; launches: ProcessLaunchRequest[] } {
  const spawns: SpawnAttempt[] = [];
  const launches: ProcessLaunchRequest[] = [];
  const sidecar = createSidecarComposition({
    configDir,
    entityId: 'alice-laptop',
    user: 'alice',
    trust,
    executor: { onLaunch: (r) => launches.push(r), onSpawn: (s) => spawns.push(s), termGraceMs: 500 },
  });
  cleanups.push(() => sidecar.stop());
  return { sidecar, spawns, launches };
}

/** Opens `connection` on the sidecar's handler over an in-memory channel and connects an SDK client. */
async function host(sidecar: SidecarComposition, connection: Record<string, unknown>) {
  const [agentEnd, hostEnd] = createInMemoryChannelPair();
  const hosted = await sidecar.handler.open({ type: 'mcp', connection }, hostEnd);
  expect(hosted).not.toBeNull();
  const client = new Client({ name: 'agent', version: '1.0.0' });
  cleanups.push(() => client.close());
  await client.connect(agentEnd);
  return { client, hosted: hosted! };
}

async function waitFor(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

/** server-everything in its Streamable HTTP mode, on a free port of 127.0.0.1. */
async function everythingOverHttp(): Promise<string> {
  const port = await freePort();
  const child: ChildProcess = spawn(NODE, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  cleanups.push(() => {
    child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    let text = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited with code ${code}: ${text}`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

describe('RemoteMcpHostHandler', () => {
  it('OpenAsync_StdioConnection_HostsServer', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { everything: { command: NODE, args: [EVERYTHING, 'stdio'] } } });
    const { sidecar, spawns } = composition(dir);
    const { client } = await host(sidecar, { 'server-name': 'everything' });
    expect(client.getServerVersion()?.name).toMatch(/everything/i);
    const result = await client.callTool({ name: 'echo', arguments: { message: 'over stdio' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: over stdio' }]);
    expect(spawns.map((s) => s.backend)).toEqual(['none']);
  });

  it('OpenAsync_HttpConnection_HostsServer', async () => {
    const url = await everythingOverHttp();
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { 'everything-http': { type: 'streamable-http', url }, anything: { url } } });
    const { sidecar, spawns } = composition(dir);
    const configured = await host(sidecar, { 'server-name': 'everything-http' });
    expect((await configured.client.callTool({ name: 'echo', arguments: { message: 'configured url' } })).content).toEqual([{ type: 'text', text: 'Echo: configured url' }]);
    const inner = await host(sidecar, { 'server-name': 'anything', target: { type: 'http', url } });
    expect((await inner.client.callTool({ name: 'echo', arguments: { message: 'inner target' } })).content).toEqual([{ type: 'text', text: 'Echo: inner target' }]);
    expect(spawns).toEqual([]);
  });

  it('sends an inner http target the headers this host configures, whatever case the worker wrote its own in (review s20)', async () => {
    const seen: (string | undefined)[] = [];
    const server = createHttpServer((request, response) => {
      seen.push(request.headers.authorization);
      response.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { web: { url, headers: { Authorization: 'Bearer host-secret' } } } });
    const { sidecar } = composition(dir);
    // A modern request: its POSTs carry the configured headers merged with the standard ones.
    const [agentEnd, hostEnd] = createInMemoryChannelPair();
    const connection = { 'server-name': 'web', agent: 'alice', session: 'modern-1', era: 'modern', target: { type: 'http', url, headers: { authorization: 'Bearer from-the-worker' } } };
    await sidecar.handler.open({ type: 'mcp', connection }, hostEnd);
    await agentEnd.start();
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    await agentEnd.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } });
    await waitFor(() => seen.length > 0);
    expect(seen).toEqual(seen.map(() => 'Bearer host-secret'));
  });

  it('ends a session on an HTTP server whose headers this host\'s config changed (a rotated credential), and none when nothing changed (review s20)', async () => {
    const url = await everythingOverHttp();
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { web: { url, headers: { 'X-Api-Key': 'old-key' } } } });
    const { sidecar } = composition(dir);
    const { client } = await host(sidecar, { 'server-name': 'web', agent: 'alice', session: 'rotating' });
    expect((await client.callTool({ name: 'echo', arguments: { message: 'with the old key' } })).content).toEqual([{ type: 'text', text: 'Echo: with the old key' }]);
    expect(await sidecar.handler.reconfigure({ trust: { allowUncontained: true } })).toBe(0);
    const closed = closeInfoOf(client.transport!);
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { web: { url, headers: { 'X-Api-Key': 'new-key' } } } });
    expect(await sidecar.handler.reconfigure({ trust: { allowUncontained: true } })).toBe(1);
    expect(await closed).toMatchObject({ reason: 'server-exited' });
  });

  it('refuses an inner http target this host does not list for that server name', async () => {
    const url = await everythingOverHttp();
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { listed: { url }, local: { command: 'node' } } });
    const { sidecar } = composition(dir);
    const [, hostEnd] = createInMemoryChannelPair();
    const ask = (name: string, target: string) => sidecar.handler.open({ type: 'mcp', connection: { 'server-name': name, target: { type: 'http', url: target } } }, hostEnd);
    await expect(ask('listed', 'http://127.0.0.1:1/admin')).rejects.toMatchObject({ reason: 'denied-by-policy' });
    await expect(ask('unlisted', url)).rejects.toMatchObject({ reason: 'denied-by-policy' });
    await expect(ask('local', url)).rejects.toMatchObject({ reason: 'denied-by-policy' });
  });

  it('names a refused inner http target without its query or fragment, in the error sent back and in its own log', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { listed: { url: 'http://127.0.0.1:9/mcp' } } });
    const lines: string[] = [];
    const sidecar = createSidecarComposition({ configDir: dir, entityId: 'alice-laptop', user: 'alice', trust: { allowUncontained: true }, log: createLogger({ level: 'debug', write: (line) => lines.push(line) }) });
    cleanups.push(() => sidecar.stop());
    const [, hostEnd] = createInMemoryChannelPair();
    const ask = async (url: string): Promise<WireError> => {
      try {
        await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'listed', target: { type: 'http', url } } }, hostEnd);
      } catch (error) {
        return error as WireError;
      }
      throw new Error(`The host opened ${url}`);
    };

    const refused = await ask('https://mcp.example.com/v1?api_key=QUERY-SECRET#access_token=FRAGMENT-SECRET');
    expect(refused).toMatchObject({ reason: 'denied-by-policy' });
    expect(refused.message).toContain('https://mcp.example.com/v1?[redacted]#[redacted]');
    // A URL without credentials is quoted whole, as the hint the host's owner can paste.
    expect((await ask('https://mcp.example.com/v2')).message).toContain('add {"url": "https://mcp.example.com/v2"} under mcpServers.listed');
    // Whether the request's schema lets userinfo through or not, it is not sent back.
    const withUser = await ask('https://svc:USER-SECRET@mcp.example.com/v1');
    const sent = [refused, withUser].flatMap((e) => [e.message, JSON.stringify(e.toJsonRpcError())]).join('\n');
    const logged = lines.join('\n');
    expect(logged).toContain('Refused an inner http target this host does not list');
    for (const secret of ['QUERY-SECRET', 'FRAGMENT-SECRET', 'USER-SECRET']) {
      expect(sent).not.toContain(secret);
      expect(logged).not.toContain(secret);
    }
  });

  it('OpenAsync_UnknownConnection_ReturnsNull, and the listener refuses it with invalid-request', async () => {
    const { sidecar, spawns } = composition(tempDir());
    const [, hostEnd] = createInMemoryChannelPair();
    expect(await sidecar.handler.open({ type: 'chat-client', connection: {} }, hostEnd)).toBeNull();
    expect(await sidecar.handler.open('mcp', hostEnd)).toBeNull();
    await expect(sidecar.onOpen({ type: 'chat-client' }, hostEnd)).rejects.toMatchObject({ reason: 'invalid-request' });
    await expect(sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'x', 'compiled-policy': {} } }, hostEnd)).rejects.toMatchObject({
      reason: 'invalid-request',
      message: expect.stringContaining('compiled-policy'),
    });
    const declining = new McpTransportListener([async () => null]);
    await expect(declining.onOpen({ type: 'mcp', connection: { 'server-name': 'files' } }, hostEnd)).rejects.toMatchObject({ reason: 'server-not-found' });
    expect(spawns).toEqual([]);
  });

  it('OpenAsync_ResolvesToolConfig_WithMachinePrefixFirst', async () => {
    const dir = tempDir();
    writeJson(dir, 'machines/alice-laptop/mcp-servers/mcp.json', { mcpServers: { tools: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'users/alice/mcp-servers/mcp.json', { mcpServers: { tools: { command: NODE, args: [EARLY_EXIT] } } });
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { tools: { command: '/nonexistent/server' }, everything: { command: NODE, args: [EVERYTHING] } } });
    const { sidecar } = composition(dir);
    const { client } = await host(sidecar, { 'server-name': 'tools' });
    expect(client.getServerVersion()?.name).toBe('echo-fixture');
    const [, hostEnd] = createInMemoryChannelPair();
    await expect(sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'missing' } }, hostEnd)).rejects.toMatchObject({ reason: 'server-not-found' });
  });

  it('OpenAsync_DisposesOnChannelClose: the process is gone', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { everything: { command: NODE, args: [EVERYTHING, 'stdio'] } } });
    const { sidecar, spawns } = composition(dir);
    const { client, hosted } = await host(sidecar, { 'server-name': 'everything' });
    await client.listTools();
    const pid = spawns[0]!.pid!;
    expect(isAlive(pid)).toBe(true);
    await client.close();
    await hosted.closed;
    await waitFor(() => !isAlive(pid));
    expect(sidecar.listeners.mcp.hostedCount).toBe(0);
  });

  it('starts no server for an agent that left while the host was opening its channel (the close came before the ack)', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { everything: { command: NODE, args: [EVERYTHING, 'stdio'] } } });
    const { sidecar, spawns } = composition(dir);
    const [agentEnd, hostEnd] = createInMemoryChannelPair();
    const opening = sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'everything' } }, hostEnd);
    await agentEnd.close();
    const hosted = await opening;
    await hosted!.closed;
    expect(spawns).toEqual([]);
    expect(sidecar.handler.hostedCount).toBe(0);
  });

  it('closes the channel with server-exited and the exit code when the server exits', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { flaky: { command: NODE, args: [EARLY_EXIT] } } });
    const { sidecar } = composition(dir);
    const [agentEnd, hostEnd] = createInMemoryChannelPair();
    const closed = closeInfoOf(agentEnd);
    await agentEnd.start();
    await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'flaky' } }, hostEnd);
    expect(await closed).toMatchObject({ reason: 'server-exited', message: expect.stringContaining('code 3') });
  });

  it('RemoteStdio_StaleTrustProfileRevision_RejectsLaunch: no process is started', async () => {
    const dir = tempDir();
    const marker = join(dir, 'started');
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { marked: { command: NODE, args: [join(ROOT, 'test/fixtures/marker-server.mjs'), marker] } } });
    writeJson(dir, 'trust-profiles/workspace.json', { 'network-capabilities': [] });
    const { sidecar, spawns } = composition(dir);
    const [, hostEnd] = createInMemoryChannelPair();
    const stale = { 'server-name': 'marked', 'trust-profile-ref': 'workspace', 'trust-profile-revision': `sha256:${'0'.repeat(64)}` };
    await expect(sidecar.handler.open({ type: 'mcp', connection: stale }, hostEnd)).rejects.toMatchObject({ reason: 'trust-profile-stale' });
    const missing = { ...stale, 'trust-profile-ref': 'no-such-profile' };
    await expect(sidecar.handler.open({ type: 'mcp', connection: missing }, hostEnd)).rejects.toMatchObject({ reason: 'trust-profile-not-found' });
    expect(spawns).toEqual([]);
    expect(sidecar.executor.spawnCount).toBe(0);
    expect(existsSync(marker)).toBe(false);
  });

  it('RemoteStdio_ProfileReference_ResolvesAndCompilesOnLaunchHost', async () => {
    const dir = tempDir();
    const project = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'trust-profiles/workspace.json', {
      'filesystem-paths': [{ 'source-path': project, 'access-mode': 'read-write' }],
      'network-capabilities': [],
      environment: { inherit: ['PATH'] },
    });
    const { sidecar, spawns } = composition(dir);
    const { revision } = await sidecar.profiles.load('workspace');
    const { client } = await host(sidecar, { 'server-name': 'echo', 'trust-profile-ref': 'workspace', 'trust-profile-revision': revision, session: 'session-1' });
    expect((await client.callTool({ name: 'echo', arguments: { message: 'contained' } })).content).toEqual([{ type: 'text', text: 'Echo: contained' }]);
    expect(spawns.map((s) => s.backend)).toEqual(['bubblewrap']);
    expect(sidecar.policies.size).toBe(1);
    const policy = await sidecar.policies.getOrCompile({ sessionId: 'session-1', revision, server: 'echo' }, () => Promise.reject(new Error('not cached')));
    expect(policy).toMatchObject({ backend: 'bubblewrap', revision });
  });

  it('refuses an HTTP server under a profile that requires containment, before connecting', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { web: { url: 'http://127.0.0.1:9/mcp' } } });
    writeJson(dir, 'trust-profiles/workspace.json', { 'network-capabilities': [] });
    const { sidecar } = composition(dir);
    const { revision } = await sidecar.profiles.load('workspace');
    const [, hostEnd] = createInMemoryChannelPair();
    const trust = { 'trust-profile-ref': 'workspace', 'trust-profile-revision': revision };
    await expect(sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'web', ...trust } }, hostEnd)).rejects.toMatchObject({ reason: 'unsupported-policy' });
    const inner = { 'server-name': 'web', ...trust, target: { type: 'http', url: 'http://127.0.0.1:9/mcp' } };
    await expect(sidecar.handler.open({ type: 'mcp', connection: inner }, hostEnd)).rejects.toMatchObject({ reason: 'unsupported-policy' });
  });

  it('answers a denied tool call with denied-by-policy; the server never sees it', async () => {
    const dir = tempDir();
    const calls = join(dir, 'calls.log');
    writeFileSync(calls, '');
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { logged: { command: NODE, args: [TOOL_LOG, calls] } } });
    writeJson(dir, 'trust-profiles/no-echo.json', {
      'restricted-mcp-tool-call-schemas': [{ properties: { toolName: { const: 'echo' }, input: { properties: { message: { const: 'forbidden' } }, required: ['message'] } }, required: ['toolName', 'input'] }],
    });
    const { sidecar } = composition(dir);
    const { revision } = await sidecar.profiles.load('no-echo');
    const { client } = await host(sidecar, { 'server-name': 'logged', 'trust-profile-ref': 'no-echo', 'trust-profile-revision': revision });
    const denied = await client.callTool({ name: 'echo', arguments: { message: 'forbidden' } }).catch((e: unknown) => e);
    expect(denied).toMatchObject({ data: { reason: 'denied-by-policy', tool: 'echo' } });
    expect((await client.callTool({ name: 'echo', arguments: { message: 'fine' } })).content).toEqual([{ type: 'text', text: 'Echo: fine' }]);
    expect(readFileSync(calls, 'utf8')).toBe('echo\n');
  });
});

const FILE_PROBE = join(ROOT, 'test/fixtures/file-probe-server.mjs');
const STALE = `sha256:${'0'.repeat(64)}`;
const revisionOf = (launch: ProcessLaunchRequest) => (launch.policy as ContainmentPolicy | null)?.revision;

/** Calls one tool of a hosted server and returns its first text. */
async function text(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = await client.callTool({ name, arguments: args });
  return (result.content as Array<{ text: string }>)[0]!.text;
}

describe('the host holds the line: its own floor, whatever the worker asks', () => {
  it('runs a request that names no profile under the host floor: contained, with a compiled policy', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'trust-profiles/floor.json', { 'network-capabilities': [] });
    const { sidecar, spawns, launches } = composition(dir, { floor: 'floor' });
    const { client } = await host(sidecar, { 'server-name': 'echo', session: 'session-1' });
    expect(await text(client, 'echo', { message: 'under the floor' })).toBe('Echo: under the floor');
    expect(launches).toHaveLength(1);
    expect(launches[0]!.policy).not.toBeNull();
    expect(launches[0]!.policy).toMatchObject({ backend: 'bubblewrap', revision: (await sidecar.profiles.load('floor')).revision });
    expect(spawns.map((s) => s.backend)).toEqual(['bubblewrap']);
  });

  it('names in its log, once per server and trust revision, a package runner launched in a sandbox without internet, which cannot fetch its package', async () => {
    const dir = tempDir();
    // node under npx's name, outside the config dir: a runner the profile would starve, that still starts here.
    const npx = join(tempDir(), 'npx');
    symlinkSync(NODE, npx);
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { fetched: { command: npx, args: [ECHO] }, installed: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'trust-profiles/floor.json', { 'network-capabilities': [] });
    const lines: string[] = [];
    const sidecar = createSidecarComposition({ configDir: dir, entityId: 'alice-laptop', user: 'alice', trust: { floor: 'floor' }, log: createLogger({ level: 'info', write: (line) => lines.push(line) }) });
    cleanups.push(() => sidecar.stop());
    for (const session of ['session-1', 'session-2']) {
      for (const server of ['fetched', 'installed']) {
        const { client } = await host(sidecar, { 'server-name': server, session });
        expect(await text(client, 'echo', { message: server })).toBe(`Echo: ${server}`);
      }
    }
    const warned = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.level === 'warn');
    expect(warned).toEqual([
      expect.objectContaining({ msg: 'Server runs a package runner in a sandbox without internet: it cannot fetch its package', server: 'fetched', runner: 'npx', fix: expect.stringContaining('install the package on this host and name its own command in mcp.json, or grant "internet-client"') }),
    ]);
  });

  it('refuses a request with neither a floor nor an agent profile (denied-by-policy, saying how to allow it); nothing starts', async () => {
    const dir = tempDir();
    const marker = join(dir, 'started');
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { marked: { command: NODE, args: [join(ROOT, 'test/fixtures/marker-server.mjs'), marker] }, web: { url: 'http://127.0.0.1:9/mcp' } } });
    const { sidecar, spawns, launches } = composition(dir, {});
    const [, hostEnd] = createInMemoryChannelPair();
    for (const name of ['marked', 'web']) {
      await expect(sidecar.handler.open({ type: 'mcp', connection: { 'server-name': name } }, hostEnd)).rejects.toMatchObject({
        reason: 'denied-by-policy',
        message: expect.stringMatching(/set "trust-profile" in sidecar\.json.*"allow-uncontained": true/),
      });
    }
    expect([launches, spawns, existsSync(marker)]).toEqual([[], [], false]);
  });

  it('runs it uncontained only when sidecar.json says allow-uncontained', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    const { sidecar, spawns, launches } = composition(dir, { allowUncontained: true });
    const { client } = await host(sidecar, { 'server-name': 'echo' });
    expect(await text(client, 'echo', { message: 'uncontained' })).toBe('Echo: uncontained');
    expect(launches.map((l) => l.policy)).toEqual([null]);
    expect(spawns.map((s) => s.backend)).toEqual(['none']);
  });

  it('composes the agent\'s profile restrictively with the floor: a path only the agent grants is not granted', async () => {
    const dir = tempDir();
    const shared = tempDir();
    const agentOnly = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { files: { command: NODE, args: [FILE_PROBE] } } });
    writeJson(dir, 'trust-profiles/floor.json', { 'filesystem-paths': [{ 'source-path': shared, 'access-mode': 'read-write' }], 'network-capabilities': [] });
    writeJson(dir, 'trust-profiles/wide.json', {
      'filesystem-paths': [
        { 'source-path': shared, 'access-mode': 'read-write' },
        { 'source-path': agentOnly, 'access-mode': 'read-write' },
      ],
      'network-capabilities': ['internet-client'],
    });
    const { sidecar, launches } = composition(dir, { floor: 'floor', allowUncontained: true });
    const { revision } = await sidecar.profiles.load('wide');
    const { client } = await host(sidecar, { 'server-name': 'files', 'trust-profile-ref': 'wide', 'trust-profile-revision': revision, session: 's-1' });
    expect(await text(client, 'write', { path: join(shared, 'a.txt'), text: 'granted by both' })).toBe('wrote');
    expect(await text(client, 'write', { path: join(agentOnly, 'b.txt'), text: 'granted by the agent only' })).toMatch(/^failed: /);
    expect(readFileSync(join(shared, 'a.txt'), 'utf8')).toBe('granted by both');
    expect(existsSync(join(agentOnly, 'b.txt'))).toBe(false);
    // A revision is the digest of the effective policy: floor ∧ wide is exactly the floor here, so the
    // launch carries the floor's revision and not the wider profile's (a change to either that changes
    // the composed policy changes it, and compiles afresh).
    const composed = revisionOf(launches[0]!);
    expect(composed).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(composed).toBe((await sidecar.profiles.load('floor')).revision);
    expect(composed).not.toBe(revision);
    expect(sidecar.policies.size).toBe(1);
  });

  it('lets a server entry\'s own "trust-profile" win over the host-wide floor', async () => {
    const dir = tempDir();
    const project = tempDir();
    writeFileSync(join(project, 'notes.txt'), 'project notes');
    writeJson(dir, 'mcp-servers/mcp.json', {
      mcpServers: {
        'host-floor': { command: NODE, args: [FILE_PROBE] },
        'own-floor': { command: NODE, args: [FILE_PROBE], 'trust-profile': 'project' },
      },
    });
    writeJson(dir, 'trust-profiles/nothing.json', { 'network-capabilities': [] });
    writeJson(dir, 'trust-profiles/project.json', { 'filesystem-paths': [{ 'source-path': project, 'access-mode': 'read-only' }], 'network-capabilities': [] });
    const { sidecar, launches } = composition(dir, { floor: 'nothing' });
    const own = await host(sidecar, { 'server-name': 'own-floor' });
    expect(await text(own.client, 'read', { path: join(project, 'notes.txt') })).toBe('read: project notes');
    const hostWide = await host(sidecar, { 'server-name': 'host-floor' });
    expect(await text(hostWide.client, 'read', { path: join(project, 'notes.txt') })).toMatch(/^failed: /);
    const revisions = await Promise.all(['project', 'nothing'].map(async (ref) => (await sidecar.profiles.load(ref)).revision));
    expect(launches.map(revisionOf)).toEqual(revisions);
  });

  it('refuses a stale or unknown agent profile without telling the worker any revision; the sidecar logs both', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'trust-profiles/workspace.json', { 'network-capabilities': [] });
    const lines: string[] = [];
    const sidecar = createSidecarComposition({
      configDir: dir,
      entityId: 'alice-laptop',
      user: 'alice',
      trust: { floor: 'workspace' },
      log: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
    });
    cleanups.push(() => sidecar.stop());
    const { revision: current } = await sidecar.profiles.load('workspace');
    const [, hostEnd] = createInMemoryChannelPair();
    const stale = (await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'echo', 'trust-profile-ref': 'workspace', 'trust-profile-revision': STALE } }, hostEnd).catch((e: unknown) => e)) as WireError;
    expect(stale).toMatchObject({ reason: 'trust-profile-stale', message: expect.stringContaining('sidecar host-entry') });
    // What crosses the link: the channel-open-error's message, and for in-process hosts the whole error body.
    for (const sent of [stale.message, JSON.stringify(stale.detail), JSON.stringify(stale.toJsonRpcError()), JSON.stringify(stale.toHttpBody())]) {
      expect(sent).not.toContain(current);
      expect(sent).not.toMatch(/sha256:/);
    }
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.msg === 'Trust profile revision differs from the one the worker sent: launch refused');
    expect(logged).toMatchObject({ level: 'warn', ref: 'workspace', expected: STALE, current });
    const unknown = { 'server-name': 'echo', 'trust-profile-ref': 'no-such-profile', 'trust-profile-revision': current };
    await expect(sidecar.handler.open({ type: 'mcp', connection: unknown }, hostEnd)).rejects.toMatchObject({ reason: 'trust-profile-not-found' });
    expect(sidecar.executor.spawnCount).toBe(0);
  });

  it('fails closed when the host floor itself is missing: launch-failed, naming no profile to the worker', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    const { sidecar, spawns } = composition(dir, { floor: 'deleted-floor', allowUncontained: true });
    const [, hostEnd] = createInMemoryChannelPair();
    const error = (await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'echo' } }, hostEnd).catch((e: unknown) => e)) as WireError;
    expect(error).toMatchObject({ reason: 'launch-failed', message: 'Server "echo" cannot start: this host\'s trust floor is unusable, see the sidecar log' });
    expect(spawns).toEqual([]);
  });
});

describe('hostile tool calls', () => {
  it('denies a call the profile\'s rules throw on (a schema that recurses forever), never forwards it, and goes on serving', async () => {
    const dir = tempDir();
    const calls = join(dir, 'calls.log');
    writeFileSync(calls, '');
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { logged: { command: NODE, args: [TOOL_LOG, calls] } } });
    writeJson(dir, 'trust-profiles/looping.json', {
      'restricted-mcp-tool-call-schemas': [{ $id: 'https://example.com/loop', if: { properties: { toolName: { const: 'echo' } } }, then: { anyOf: [{ $ref: 'https://example.com/loop' }] } }],
    });
    const { sidecar } = composition(dir, { floor: 'looping' });
    const { client } = await host(sidecar, { 'server-name': 'logged' });
    const denied = await client.callTool({ name: 'echo', arguments: { message: 'loops' } }).catch((e: unknown) => e);
    expect(denied).toMatchObject({ message: expect.stringContaining('its rules could not be evaluated for this call'), data: { reason: 'denied-by-policy', tool: 'echo' } });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
    expect(readFileSync(calls, 'utf8')).toBe('');
  });
});

describe('Composition', () => {
  it('Composition_RegistersProductionMcpTransportListener', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    const { sidecar } = composition(dir);
    expect(sidecar.listeners.mcp).toBeInstanceOf(McpTransportListener);
    expect(sidecar.handler).toBeInstanceOf(RemoteMcpHostHandler);
    expect(sidecar.listeners.mcp.handlers).toHaveLength(1);
    expect(sidecar.onOpen).toBe(sidecar.listeners.mcp.onOpen);
    expect(sidecar.link).toBeNull();
    // The registered listener reaches the production handler: an mcp open hosts a real server.
    const [agentEnd, hostEnd] = createInMemoryChannelPair();
    await sidecar.onOpen({ type: 'mcp', connection: { 'server-name': 'echo' } }, hostEnd);
    expect(sidecar.listeners.mcp.hostedCount).toBe(1);
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(agentEnd);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
    await client.close();
    await waitFor(() => sidecar.listeners.mcp.hostedCount === 0);
    const linked = createSidecarComposition({ configDir: dir, entityId: 'alice-laptop', user: 'alice', worker: 'http://127.0.0.1:9', key: { path: 'unused', publicKey: 'unused', sign: async () => 'never dialled' } });
    expect(linked.link).not.toBeNull();
    await linked.stop();
  });
});

/**
 * The production composition on `dir` with a warm pool of 1 (and `limits`), its log and launches
 * kept; `session` opens one of `agent`'s sessions of `server` with an SDK client.
 */
function warmSidecar(dir: string, limits?: NonNullable<Parameters<typeof createSidecarComposition>[0]['limits']>) {
  const lines: string[] = [];
  const launches: ProcessLaunchRequest[] = [];
  const sidecar = createSidecarComposition({
    configDir: dir,
    entityId: 'alice-laptop',
    user: 'alice',
    trust: { allowUncontained: true },
    log: createLogger({ level: 'info', write: (line) => lines.push(line) }),
    executor: { onLaunch: (r) => launches.push(r), termGraceMs: 500 },
    ...(limits !== undefined ? { limits } : {}),
    warmPool: { size: 1 },
  });
  cleanups.push(() => sidecar.stop());
  let sessions = 0;
  const session = async (agent: string, server: string) => {
    const [agentEnd, hostEnd] = createInMemoryChannelPair();
    const hosted = await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': server, agent, session: `s${++sessions}` } }, hostEnd);
    cleanups.push(() => hosted?.dispose());
    const client = new Client({ name: 'agent', version: '1.0.0' });
    cleanups.push(() => client.close());
    await client.connect(agentEnd);
    return client;
  };
  const ready = () => lines.filter((l) => l.includes('Warm instance ready')).length;
  return { sidecar, lines, launches, session, ready };
}

describe('the warm pool across a config reload', () => {
  it('ends its spares and learns again, so no session after the reload is served by the old command line (review s19)', async () => {
    const dir = tempDir();
    const servers = (version: string) => ({ mcpServers: { srv: { command: NODE, args: [ECHO, version] }, other: { command: NODE, args: [ECHO, 'other'] } } });
    writeJson(dir, 'mcp-servers/mcp.json', servers('v1'));
    const { sidecar, launches, ready, session: open } = warmSidecar(dir);
    const session = (server: string) => open('alice', server);
    await session('srv');
    await session('other');
    await waitFor(() => ready() === 2);

    writeJson(dir, 'mcp-servers/mcp.json', servers('v2'));
    const before = launches.length;
    await sidecar.handler.reconfigure({ trust: { allowUncontained: true } });
    expect(sidecar.warmPool.size).toBe(0);
    // Another server's session, then srv's: the pool refills only what sessions since taught it.
    await session('other');
    for (let n = 0; n < 3; n++) {
      const client = await session('srv');
      expect((await client.callTool({ name: 'echo', arguments: { message: `after ${n}` } })).content).toEqual([{ type: 'text', text: `Echo: after ${n}` }]);
      await waitFor(() => sidecar.warmPool.size === 2);
    }
    const srvLaunches = launches.slice(before).filter((l) => l.args.includes('v1') || l.args.includes('v2'));
    expect(srvLaunches.length).toBeGreaterThanOrEqual(3);
    expect(srvLaunches.map((l) => l.args.at(-1))).toEqual(srvLaunches.map(() => 'v2'));
  });
});

describe('the warm pool and an edit of mcp.json with no reload', () => {
  it('hands no session a spare launched under the server\'s old entry (review s19)', async () => {
    const dir = tempDir();
    const servers = (version: string) => ({ mcpServers: { srv: { command: NODE, args: [ECHO, version] } } });
    writeJson(dir, 'mcp-servers/mcp.json', servers('v1'));
    const { sidecar, launches, ready, session } = warmSidecar(dir);
    await session('alice', 'srv');
    await waitFor(() => ready() === 1);
    // The file changes; nothing reloads (a sidecar reads its server entries afresh at each open).
    writeJson(dir, 'mcp-servers/mcp.json', servers('v2'));
    const before = launches.length;
    for (let n = 0; n < 2; n++) {
      const client = await session('alice', 'srv');
      expect((await client.callTool({ name: 'echo', arguments: { message: `edit ${n}` } })).content).toEqual([{ type: 'text', text: `Echo: edit ${n}` }]);
      await waitFor(() => ready() >= 2 + n);
    }
    const after = launches.slice(before).map((l) => l.args.at(-1));
    expect(after.length).toBeGreaterThanOrEqual(2);
    expect(after).toEqual(after.map(() => 'v2'));
    await waitFor(() => sidecar.warmPool.size === 1);
  });
});

describe('the warm pool at the host\'s process cap', () => {
  /** A host of 2 processes in all, with a warm pool of 1, its log kept. */
  function capped() {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    const { sidecar, lines, session, ready } = warmSidecar(dir, { processesPerAgent: 4, processes: 2, memoryLimitMib: 0, launchBurstPerAgent: 32, launchesPerAgentPerMinute: 60 });
    return { sidecar, lines, session: (agent: string) => session(agent, 'echo'), spareReady: () => waitFor(() => ready() > 0) };
  }

  it('gives another agent\'s launch the room of a spare no session took (review s19)', async () => {
    const { sidecar, lines, session, spareReady } = capped();
    await session('alice');
    await spareReady();
    expect(sidecar.budget.count()).toBe(2);
    // The host is full with alice's session and her spare: bob's launch ends the spare.
    const bob = await session('bob');
    expect((await bob.callTool({ name: 'echo', arguments: { message: 'bob' } })).content).toEqual([{ type: 'text', text: 'Echo: bob' }]);
    expect(lines.filter((l) => l.includes('Server process ended to make room'))).toEqual([expect.stringContaining('"spare":true')]);
    await waitFor(() => sidecar.warmPool.size === 0 && sidecar.budget.count() === 2);
  });

  it('keeps a spare a session took as that session\'s: another agent\'s launch is refused instead', async () => {
    const { sidecar, lines, session, spareReady } = capped();
    await session('alice');
    await spareReady();
    const warm = await session('alice');
    expect(sidecar.warmPool.size).toBe(0);
    await expect(session('bob')).rejects.toMatchObject({ reason: 'limit-reached' });
    expect(lines.filter((l) => l.includes('Server process ended to make room'))).toEqual([]);
    expect((await warm.callTool({ name: 'echo', arguments: { message: 'still mine' } })).content).toEqual([{ type: 'text', text: 'Echo: still mine' }]);
  });
});

describe('launch rate (sidecar.json "limits")', () => {
  /** The production composition with a launch rate of `burst` at once, then 1 a minute (none comes back while a test runs). */
  function rated(configDir: string, burst: number, options: { warmPool?: boolean } = {}) {
    const lines: string[] = [];
    const spawns: SpawnAttempt[] = [];
    const sidecar = createSidecarComposition({
      configDir,
      entityId: 'alice-laptop',
      user: 'alice',
      trust: { allowUncontained: true },
      log: createLogger({ level: 'info', write: (line) => lines.push(line) }),
      executor: { onSpawn: (s) => spawns.push(s), termGraceMs: 500 },
      limits: { processesPerAgent: 32, processes: 64, memoryLimitMib: 0, launchBurstPerAgent: burst, launchesPerAgentPerMinute: 1 },
      ...(options.warmPool ? { warmPool: { size: 1 } } : {}),
    });
    cleanups.push(() => sidecar.stop());
    let sessions = 0;
    const open = async (agent: string, server: string) => {
      const [agentEnd, hostEnd] = createInMemoryChannelPair();
      const hosted = await sidecar.handler.open({ type: 'mcp', connection: { 'server-name': server, agent, session: `${agent}-${++sessions}` } }, hostEnd);
      cleanups.push(() => hosted?.dispose());
      return { agentEnd, hosted: hosted! };
    };
    const connect = async (agentEnd: ReturnType<typeof createInMemoryChannelPair>[0]) => {
      const client = new Client({ name: 'agent', version: '1.0.0' });
      cleanups.push(() => client.close());
      await client.connect(agentEnd);
      return client;
    };
    const warnings = () => lines.filter((l) => l.includes('launch rate reached'));
    return { sidecar, spawns, lines, open, connect, warnings };
  }

  it('refuses an agent\'s launches past its burst with limit-reached and when to retry, while another agent launching at the same moment is served', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    const { spawns, open, connect, warnings } = rated(dir, 2);
    const [a1, a2, a3, b1] = await Promise.allSettled([open('alice', 'echo'), open('alice', 'echo'), open('alice', 'echo'), open('bob', 'echo')]);
    const alice = [a1!, a2!, a3!];
    expect(alice.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    const refused = alice.flatMap((r) => (r.status === 'rejected' ? [r.reason as WireError] : []));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ reason: 'limit-reached', message: expect.stringMatching(/^Server "echo" cannot start: agent "alice" started server processes on this host faster than its launch rate allows \(2 at once, then 1 a minute\); retry in \d+ s/) });
    expect(b1!.status).toBe('fulfilled');
    // The refused launch never started a process.
    expect(spawns).toHaveLength(3);
    const bob = await connect((b1 as PromiseFulfilledResult<Awaited<ReturnType<typeof open>>>).value.agentEnd);
    expect((await bob.callTool({ name: 'echo', arguments: { message: 'still served' } })).content).toEqual([{ type: 'text', text: 'Echo: still served' }]);
    // Refused again, logged once.
    await expect(open('alice', 'echo')).rejects.toMatchObject({ reason: 'limit-reached' });
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toContain('"agent":"alice"');
  });

  it('counts a warm pool\'s spare as its agent\'s launch, and hands a ready one out with the agent\'s bucket empty', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] }, other: { command: NODE, args: [ECHO] } } });
    const { sidecar, spawns, lines, open, connect } = rated(dir, 4, { warmPool: true });
    // A cold session teaches the pool, which starts a spare for alice: 2 of her 4 launches.
    const first = await open('alice', 'echo');
    await connect(first.agentEnd);
    await waitFor(() => lines.some((l) => l.includes('Warm instance ready')));
    expect(Math.floor(sidecar.launchRate.available('alice'))).toBe(2);
    // Two more cold launches spend her bucket; the pool, kept to half of it, starts no spare for them.
    await open('alice', 'other');
    await open('alice', 'other');
    const spawned = spawns.length;
    expect(spawned).toBe(4);
    const [cold, warm, bob] = await Promise.allSettled([open('alice', 'other'), open('alice', 'echo'), open('bob', 'echo')]);
    expect(cold).toMatchObject({ status: 'rejected', reason: { reason: 'limit-reached' } });
    expect(warm.status).toBe('fulfilled');
    expect(bob.status).toBe('fulfilled');
    // Only bob's launch started a process: alice's session was handed the spare.
    expect(spawns).toHaveLength(spawned + 1);
    const client = await connect((warm as PromiseFulfilledResult<Awaited<ReturnType<typeof open>>>).value.agentEnd);
    expect((await client.callTool({ name: 'echo', arguments: { message: 'warm' } })).content).toEqual([{ type: 'text', text: 'Echo: warm' }]);
  });
});

describe('launch rate and the policy cache', () => {
  it('refuses a launch past the agent\'s rate before compiling its containment, and keeps no policy for a session that never opened (review s20)', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'trust-profiles/floor.json', {});
    const sidecar = createSidecarComposition({
      configDir: dir,
      entityId: 'alice-laptop',
      user: 'alice',
      trust: { floor: 'floor' },
      executor: { termGraceMs: 500 },
      limits: { processesPerAgent: 32, processes: 64, memoryLimitMib: 0, launchBurstPerAgent: 1, launchesPerAgentPerMinute: 1 },
    });
    cleanups.push(() => sidecar.stop());
    const open = (session: string) => {
      const [, hostEnd] = createInMemoryChannelPair();
      return sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'echo', agent: 'alice', session } }, hostEnd);
    };
    const first = await open('s0');
    cleanups.push(() => first?.dispose());
    expect(sidecar.policies.size).toBe(1);
    for (let n = 1; n <= 20; n++) await expect(open(`s${n}`)).rejects.toMatchObject({ reason: 'limit-reached' });
    expect(sidecar.policies.size).toBe(1);
  });
});

describe('a reload while an open is under way', () => {
  it('ends, as the reload would have, a server whose open read the config before a reload that removed it (review s20)', async () => {
    const dir = tempDir();
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
    writeJson(dir, 'trust-profiles/floor.json', {});
    const executor = new ProcessExecutor({ termGraceMs: 500 });
    cleanups.push(() => executor.disposeAll());
    const real = new TrustProfileStore(join(dir, 'trust-profiles'));
    // The open waits in its trust resolution, after its config read, until the reload is done.
    let resolving!: () => void;
    const resolvingNow = new Promise<void>((resolve) => (resolving = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let gated = true;
    const profiles = new Proxy(real, {
      get(target, key) {
        if (key === 'load') {
          return async (...args: Parameters<TrustProfileStore['load']>) => {
            if (gated) {
              resolving();
              await released;
            }
            return target.load(...args);
          };
        }
        const value = (target as unknown as Record<string | symbol, unknown>)[key];
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const handler = new RemoteMcpHostHandler({ configDir: dir, entityId: 'h', user: 'alice', executor, profiles, policies: new PolicyCache(), log: silentLogger, trust: { floor: 'floor' } });
    const [, hostEnd] = createInMemoryChannelPair();
    const opening = handler.open({ type: 'mcp', connection: { 'server-name': 'echo', agent: 'alice', session: 's1' } }, hostEnd);
    await resolvingNow;
    writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: {} });
    gated = false;
    expect(await handler.reconfigure({ trust: { floor: 'floor' } })).toBe(0);
    release();
    await expect(opening).rejects.toMatchObject({ reason: 'server-exited', message: 'Server "echo" was ended: its config on this host changed' });
    expect(handler.hostedCount).toBe(0);
  });

  it('leaves no server of the old config running whatever moment between its check and its tracking a reload comes (review s20)', async () => {
    for (let offset = 0; offset <= 8; offset++) {
      const dir = tempDir();
      writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: { echo: { command: NODE, args: [ECHO] } } });
      writeJson(dir, 'trust-profiles/floor.json', {});
      const executor = new ProcessExecutor({ termGraceMs: 500 });
      cleanups.push(() => executor.disposeAll());
      let handler!: RemoteMcpHostHandler;
      let reload: Promise<number> | undefined;
      // The policy's answer is followed, `offset` microtasks later, by a reload that removed the server.
      class ReloadingCache extends PolicyCache {
        override getOrCompile(...args: Parameters<PolicyCache['getOrCompile']>) {
          return super.getOrCompile(...args).then((policy) => {
            writeJson(dir, 'mcp-servers/mcp.json', { mcpServers: {} });
            const later = (n: number): void => (n === 0 ? void (reload = handler.reconfigure({ trust: { floor: 'floor' } })) : queueMicrotask(() => later(n - 1)));
            later(offset);
            return policy;
          });
        }
      }
      handler = new RemoteMcpHostHandler({ configDir: dir, entityId: 'h', user: 'alice', executor, profiles: new TrustProfileStore(join(dir, 'trust-profiles')), policies: new ReloadingCache(), log: silentLogger, trust: { floor: 'floor' } });
      const [, hostEnd] = createInMemoryChannelPair();
      const opened = await handler.open({ type: 'mcp', connection: { 'server-name': 'echo', agent: 'alice', session: `s${offset}` } }, hostEnd).then(() => true, () => false);
      const ended = await reload!;
      expect({ offset, hosted: handler.hostedCount, ended: opened ? ended : 1 }).toEqual({ offset, hosted: 0, ended: 1 });
    }
  });
});
