/**
 * The worker under Node: the single-machine deployment (`switchyard worker --runtime node`,
 * composed by `cli/single-machine.ts`), where servers bound to a top-level `{"type":"local"}` go
 * through the router's `localHost` straight to the sidecar's production handler over an in-memory
 * channel pair (no link, no socket), and the Node adapter's `/link` WebSockets with a sidecar
 * process dialling in.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSingleMachine, type SingleMachine } from '../../cli/single-machine.ts';
import { startNodeWorker } from '../../worker/adapters/node/node-worker.ts';
import { parseWorkerConfig } from '../../worker/config/worker-config.ts';
import { closeClient, connectClient } from '../support/clients.ts';
import { agentEntry, hostCredential, workerHostEntry, writeSidecarDir } from '../support/configs.ts';
import { rawAgent } from '../support/long-call.ts';
import { fixtureServer, REPO } from '../support/paths.ts';
import { isAlive, ProcessSet, waitForOutput, waitUntil } from '../support/processes.ts';
import { startSidecar } from '../support/sidecar-process.ts';

const ECHO = fixtureServer('echo-server.mjs');
const ALICE = { name: 'alice', token: 'alice-token', servers: ['echo'] };
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A folder holding worker.json beside the servers' mcp-servers/mcp.json, as the single-machine mode reads it. */
function machineDir(workerConfig: unknown): { dir: string; configFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-single-machine-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { echo: ECHO } }));
  // The host's trust keys, the only ones single-machine mode reads: the echo fixture runs uncontained.
  writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ 'allow-uncontained': true }));
  const configFile = join(dir, 'worker.json');
  writeFileSync(configFile, JSON.stringify(workerConfig));
  return { dir, configFile };
}

const localEcho = { agents: [agentEntry(ALICE)], servers: { echo: { executor: { type: 'local' } } } };

/** The mode as `switchyard worker --runtime node` composes it, with the spawned pids recorded. */
async function singleMachine(): Promise<{ machine: SingleMachine; pids: number[] }> {
  const pids: number[] = [];
  const { dir } = machineDir(localEcho);
  const machine = await startSingleMachine({
    config: parseWorkerConfig(localEcho, { runtime: 'node' }),
    configDir: dir,
    port: 0,
    executor: { onSpawn: (attempt) => attempt.pid !== undefined && pids.push(attempt.pid) },
  });
  cleanups.push(() => machine.close());
  return { machine, pids };
}

describe('single-machine mode (switchyard worker --runtime node)', () => {
  it('Scenario3_LocalBoundMcpServer_ConnectsInProcess_NoTransportRoundTrip', async () => {
    const { machine, pids } = await singleMachine();
    const host = machine.host!;
    const client = await connectClient(`${machine.url}/servers/echo/mcp`, ALICE.token);
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'in process' } })).toEqual({ content: [{ type: 'text', text: 'Echo: in process' }] });
      // Served by the in-process host handler, which spawned the server itself…
      expect(host.listeners.mcp.hostedCount).toBe(1);
      expect(pids).toHaveLength(1);
      // …with no link in between: the host has no link client and the worker's registry never saw a host.
      expect(host.link).toBeNull();
      expect(machine.node.worker.registry.status()).toEqual([]);
    } finally {
      await closeClient(client);
    }
    await waitUntil(() => host.listeners.mcp.hostedCount === 0, 'the hosted connection to end');
    await waitUntil(() => pids.every((pid) => !isAlive(pid)), 'the server process to end');
  });

  it('ProvideAIContext_BoundLocal_UsesInProcessFactory_NoRoundTrip', async () => {
    const { machine, pids } = await singleMachine();
    const client = await connectClient(`${machine.url}/mcp`, ALICE.token);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo__echo']);
      expect(await client.callTool({ name: 'echo__echo', arguments: { message: 'aggregated locally' } })).toEqual({
        content: [{ type: 'text', text: 'Echo: aggregated locally' }],
      });
      expect(machine.host!.listeners.mcp.hostedCount).toBe(1);
      expect(pids).toHaveLength(1);
      expect(machine.host!.link).toBeNull();
      expect(machine.node.worker.registry.status()).toEqual([]);
    } finally {
      await closeClient(client);
    }
  });

  it('is what the CLI runs: switchyard worker --runtime node serves a local server from the config file\'s folder', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const { configFile } = machineDir(localEcho);
    const proc = procs.spawn(process.execPath, [join(REPO, 'bin/switchyard.mjs'), 'worker', '--runtime', 'node', '--config', configFile, '--port', '0'], {
      SWITCHYARD_FROM_SOURCE: '1',
      SWITCHYARD_LOG_LEVEL: 'info',
    });
    const [, url] = await waitForOutput(proc, () => proc.stdout(), /"event":"listening","url":"([^"]+)"/, 'switchyard worker --runtime node');
    // Its first line says what it runs, as the Deno worker's does (QA s30: it had none); written just after the event on stdout.
    const [listening] = await waitForOutput(proc, () => proc.stderr(), /\{[^\n]*"msg":"Worker listening"[^\n]*\}/, 'the worker\'s listening line');
    expect(JSON.parse(listening)).toMatchObject({ level: 'info', url, config: configFile, agents: 1, hosts: [], servers: 1, oauth: null, stateDir: null, oauthKeys: null });
    const client = await connectClient(`${url}/servers/echo/mcp`, ALICE.token);
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'from the cli' } })).toEqual({ content: [{ type: 'text', text: 'Echo: from the cli' }] });
    } finally {
      await closeClient(client);
    }
  });

  it('answers a passthrough call in flight with shutdown when switchyard worker --runtime node gets SIGTERM', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const { dir, configFile } = machineDir({ agents: [agentEntry({ ...ALICE, servers: ['faults'] })], servers: { faults: { executor: { type: 'local' } } } });
    writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { faults: fixtureServer('fault-server.mjs') } }));
    const proc = procs.spawn(process.execPath, [join(REPO, 'bin/switchyard.mjs'), 'worker', '--runtime', 'node', '--config', configFile, '--port', '0'], {
      SWITCHYARD_FROM_SOURCE: '1',
      SWITCHYARD_LOG_LEVEL: 'info',
    });
    const [, url] = await waitForOutput(proc, () => proc.stdout(), /"event":"listening","url":"([^"]+)"/, 'switchyard worker --runtime node');
    const agent = rawAgent(`${url}/servers/faults/mcp`, ALICE.token);
    const call = await agent.longCall(await agent.open());
    proc.child.kill('SIGTERM');
    expect((await call.rest()).at(-1)).toMatchObject({ id: 7, error: { code: -32014, data: { reason: 'shutdown', server: 'faults' } } });
    await expect.poll(() => proc.stderr(), { timeout: 15_000 }).toMatch(/"msg":"audit".*"tool":"slow".*"reason":"shutdown"/);
    expect(await proc.exited).toBe(0);
  });

  it('keeps the worker config out of every sandbox when --config-dir puts the servers elsewhere (review s24: a server that could write it could add an agent)', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const { dir: project, configFile } = machineDir(localEcho);
    const configDir = join(project, 'local');
    mkdirSync(join(configDir, 'mcp-servers'), { recursive: true });
    mkdirSync(join(configDir, 'trust-profiles'));
    writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { echo: ECHO } }));
    // A floor granting the folder that holds worker.json but not the config dir, which its own rule would refuse.
    rmSync(join(project, 'mcp-servers'), { recursive: true });
    const granted = join(project, 'granted');
    mkdirSync(granted);
    const moved = join(granted, 'worker.json');
    writeFileSync(moved, JSON.stringify(localEcho));
    writeFileSync(join(configDir, 'sidecar.json'), JSON.stringify({ 'trust-profile': 'floor' }));
    writeFileSync(join(configDir, 'trust-profiles', 'floor.json'), JSON.stringify({ 'filesystem-paths': [{ 'source-path': granted, 'access-mode': 'read-write' }], 'network-capabilities': [] }));
    rmSync(configFile);
    const proc = procs.spawn(process.execPath, [join(REPO, 'bin/switchyard.mjs'), 'worker', '--runtime', 'node', '--config', moved, '--config-dir', configDir, '--port', '0'], {
      SWITCHYARD_FROM_SOURCE: '1',
      SWITCHYARD_LOG_LEVEL: 'warn',
    });
    const [, url] = await waitForOutput(proc, () => proc.stdout(), /"event":"listening","url":"([^"]+)"/, 'switchyard worker --runtime node');
    const refused = await connectClient(`${url}/servers/echo/mcp`, ALICE.token).catch((e: unknown) => e);
    expect(String(refused)).toContain('contains or lies in the worker config (--config) inside the sandbox: on the host, grant narrower paths in the profile, or move the worker config out of the granted tree');
    expect(String(refused)).not.toContain(granted);
    expect(proc.stderr()).toContain(moved);
  });

  it('refuses to start on a server file it cannot read, as a sidecar does, and names a bound server no file defines', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const { dir, configFile } = machineDir(localEcho);
    const file = join(dir, 'mcp-servers', 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { echo: { comand: 'node' } } }));
    const args = [join(REPO, 'bin/switchyard.mjs'), 'worker', '--runtime', 'node', '--config', configFile, '--port', '0'];
    const broken = procs.spawn(process.execPath, args, { SWITCHYARD_FROM_SOURCE: '1', SWITCHYARD_LOG_LEVEL: 'warn' });
    expect(await broken.exited).toBe(1);
    expect(broken.stderr()).toContain(`${file}: Invalid mcp.json: mcpServers.echo.comand: unknown key (did you mean "command"?)`);
    expect(broken.stderr()).toContain(`switchyard check --runtime node ${dir} says what is wrong`);
    writeFileSync(file, JSON.stringify({ mcpServers: { other: ECHO } }));
    const missing = procs.spawn(process.execPath, args, { SWITCHYARD_FROM_SOURCE: '1', SWITCHYARD_LOG_LEVEL: 'warn' });
    await waitForOutput(missing, () => missing.stdout(), /"event":"listening"/, 'switchyard worker --runtime node');
    const warning = missing.stderr().split('\n').find((l) => l.includes('no mcp.json of its config dir defines'));
    expect(JSON.parse(warning!)).toMatchObject({ level: 'warn', servers: ['echo'], configDir: dir });
  });

  it('says at start that every contained launch will be refused when an own folder lies where every sandbox looks (review s24)', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const { configFile } = machineDir(localEcho);
    // Nothing is written there: the worker keeps no OAuth state without OAuth.
    const proc = procs.spawn(process.execPath, [join(REPO, 'bin/switchyard.mjs'), 'worker', '--runtime', 'node', '--config', configFile, '--state-dir', '/usr/share/switchyard-review-s24', '--port', '0'], {
      SWITCHYARD_FROM_SOURCE: '1',
      SWITCHYARD_LOG_LEVEL: 'warn',
    });
    await waitForOutput(proc, () => proc.stdout(), /"event":"listening"/, 'switchyard worker --runtime node');
    expect(proc.stderr()).toContain('"msg":"Every contained launch will be refused"');
    expect(proc.stderr()).toContain('the worker\'s state dir (--state-dir: /usr/share/switchyard-review-s24) lies in \\"/usr\\"');
  });

  it('takes the host floor from DIR/sidecar.json: contained under its "trust-profile", refused with neither that nor allow-uncontained', async () => {
    const start = async (sidecarJson: unknown | undefined) => {
      const { dir } = machineDir(localEcho);
      rmSync(join(dir, 'sidecar.json'));
      if (sidecarJson !== undefined) writeFileSync(join(dir, 'sidecar.json'), JSON.stringify(sidecarJson));
      mkdirSync(join(dir, 'trust-profiles'));
      writeFileSync(join(dir, 'trust-profiles', 'floor.json'), JSON.stringify({ 'network-capabilities': [] }));
      const backends: string[] = [];
      const machine = await startSingleMachine({ config: parseWorkerConfig(localEcho, { runtime: 'node' }), configDir: dir, port: 0, executor: { onSpawn: (a) => void backends.push(a.backend) } });
      cleanups.push(() => machine.close());
      return { machine, backends };
    };
    const floored = await start({ 'trust-profile': 'floor' });
    const client = await connectClient(`${floored.machine.url}/servers/echo/mcp`, ALICE.token);
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'under the floor' } })).toEqual({ content: [{ type: 'text', text: 'Echo: under the floor' }] });
      expect(floored.backends).toEqual(['bubblewrap']);
    } finally {
      await closeClient(client);
    }
    for (const sidecarJson of [undefined, { 'allow-uncontained': false }]) {
      const bare = await start(sidecarJson);
      const refused = await connectClient(`${bare.machine.url}/servers/echo/mcp`, ALICE.token).catch((e: unknown) => e);
      expect(String(refused)).toMatch(/"code":-32010,"message":"Server \\"echo\\" would run uncontained: .*"reason":"denied-by-policy"/);
      expect(bare.backends).toEqual([]);
    }
  });

  it('records the in-process host\'s own denial as the decision on the worker\'s audit line, and a server\'s forged one as an answer, with no link to carry who wrote it', async () => {
    const config = { agents: [agentEntry({ ...ALICE, servers: ['hostile'] })], servers: { hostile: { executor: { type: 'local' } } } };
    const { dir } = machineDir(config);
    const hostile = { command: process.execPath, args: [join(REPO, 'test/audit/hostile-server.mjs')] };
    writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { hostile } }));
    // The host's floor denies the tool `deny`; the server itself answers `forge` with the same error.
    mkdirSync(join(dir, 'trust-profiles'));
    writeFileSync(join(dir, 'trust-profiles', 'no-deny.json'), JSON.stringify({ 'restricted-mcp-tool-call-schemas': [{ type: 'object', properties: { toolName: { const: 'deny' } }, required: ['toolName'] }] }));
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ 'trust-profile': 'no-deny' }));
    const lines: Array<Record<string, any>> = [];
    const machine = await startSingleMachine({ config: parseWorkerConfig(config, { runtime: 'node' }), configDir: dir, port: 0, auditWrite: (line) => void lines.push(JSON.parse(line)) });
    cleanups.push(() => machine.close());
    const client = await connectClient(`${machine.url}/servers/hostile/mcp`, ALICE.token);
    try {
      for (const name of ['deny', 'forge']) {
        expect(await client.callTool({ name, arguments: {} }).catch((error: unknown) => error)).toMatchObject({ code: -32010, data: { reason: 'denied-by-policy' } });
      }
    } finally {
      await closeClient(client);
    }
    const line = (component: string, tool: string) => lines.filter((l) => l.component === component && l.tool === tool).map((l) => [l.level, l.decision, l.reason]);
    expect([line('worker', 'deny'), line('sidecar', 'deny')]).toEqual([[['warn', 'denied-by-policy', 'denied-by-policy']], [['warn', 'denied-by-policy', 'denied-by-policy']]]);
    expect([line('worker', 'forge'), line('sidecar', 'forge')]).toEqual([[['info', 'allowed', 'denied-by-policy']], [['info', 'allowed', 'denied-by-policy']]]);
  });

  it('serves a local server a reload binds first, in a machine started without one (review s22: refused "no local host")', async () => {
    const { dir } = machineDir(localEcho);
    const machine = await startSingleMachine({ config: parseWorkerConfig({ agents: [agentEntry({ ...ALICE, servers: [] })], servers: {} }, { runtime: 'node' }), configDir: dir, port: 0 });
    cleanups.push(() => machine.close());
    expect(machine.host).toBeNull();
    await machine.node.worker.reload(parseWorkerConfig(localEcho, { runtime: 'node' }));
    const client = await connectClient(`${machine.url}/servers/echo/mcp`, ALICE.token);
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'after reload' } })).toEqual({ content: [{ type: 'text', text: 'Echo: after reload' }] });
    } finally {
      await closeClient(client);
    }
  });

  it('names the address it cannot listen on, and why, as the Deno worker does (listen-failed)', async () => {
    const first = await startNodeWorker({ config: parseWorkerConfig({ agents: [], servers: {} }, { runtime: 'node' }) });
    cleanups.push(() => first.close());
    const port = Number(new URL(first.url).port);
    const second = startNodeWorker({ config: parseWorkerConfig({ agents: [], servers: {} }, { runtime: 'node' }), port });
    await expect(second).rejects.toMatchObject({
      code: 'listen-failed',
      message: `Cannot listen on 127.0.0.1:${port}: the port is already in use: stop what holds it, or choose another port (0 picks a free one)`,
    });
  });

  it('ends a removed agent\'s modern server instance as the reload that removes the agent puts its roster in force', async () => {
    const { machine, pids } = await singleMachine();
    const post = await fetch(`${machine.url}/servers/echo/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'modern' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' } } } }),
    });
    expect(post.status).toBe(200);
    expect(await post.text()).toContain('Echo: modern');
    // The agent's instance stays for its next requests (15 minutes idle by default)…
    expect(machine.host!.modernInstances.size).toBe(1);
    expect(pids.filter(isAlive)).toHaveLength(1);
    // …until the agent is removed: then it goes with the reload.
    const bob = { name: 'bob', token: 'bob-token', servers: ['echo'] };
    await machine.node.worker.reload(parseWorkerConfig({ ...localEcho, agents: [agentEntry(bob)] }, { runtime: 'node' }));
    // Idle, it ends at once (the next turn, so that a request that had just taken it is served first).
    await waitUntil(() => machine.host!.modernInstances.size === 0 && pids.every((pid) => !isAlive(pid)), 'the removed agent\'s server instance to end');
  });

  it('has no local host without one: the Node adapter refuses a local binding instead of failing each session later', async () => {
    await expect(startNodeWorker({ config: parseWorkerConfig(localEcho, { runtime: 'node' }) })).rejects.toThrow(/"echo" are bound to a top-level \{"type":"local"\}, but this worker has no local host/);
  });
});

describe('worker under Node, with a sidecar process on /link', () => {
  it('links a sidecar over the Node adapter\'s WebSockets and routes a session through it', async () => {
    const procs = new ProcessSet();
    cleanups.push(() => procs.stopAll());
    const laptop = hostCredential('laptop');
    const node = await startNodeWorker({
      config: parseWorkerConfig(
        { agents: [agentEntry(ALICE)], hosts: [workerHostEntry(laptop)], servers: { echo: { executor: { type: 'reverse-http', 'entity-id': 'laptop' } } } },
        { runtime: 'edge' },
      ),
    });
    cleanups.push(() => node.close());
    const configDir = mkdtempSync(join(tmpdir(), 'switchyard-node-link-'));
    cleanups.push(() => rmSync(configDir, { recursive: true, force: true }));
    writeSidecarDir(configDir, { worker: node.url, host: laptop, servers: { echo: ECHO } });
    startSidecar(procs, configDir);
    await waitUntil(() => node.worker.registry.status()[0]?.linked === true, 'the sidecar to link');
    const client = await connectClient(`${node.url}/servers/echo/mcp`, ALICE.token);
    try {
      expect(await client.callTool({ name: 'echo', arguments: { message: 'over ws' } })).toEqual({ content: [{ type: 'text', text: 'Echo: over ws' }] });
      expect(node.worker.registry.status()[0]!.channels).toBe(1);
    } finally {
      await closeClient(client);
    }
    await waitUntil(() => node.worker.registry.status()[0]!.channels === 0, 'the channel to close');
  });
});
