/**
 * Issue 13, finding 3: under a strict profile (`network-capabilities: []`), a server entry with a
 * relative `"cwd": "."` (resolved against the config dir) or a script kept in the config dir ran
 * with the config dir mounted read-only, and `cat host.key` printed the host's credential. The
 * real composition, the real handler and real bubblewrap now refuse such a launch before
 * anything is spawned, with an error that names the server and the fix but no path; a launch that
 * keeps away from the config dir still runs contained and cannot see the key.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createInMemoryChannelPair } from '../../shared/channel-transport.ts';
import { WireError } from '../../shared/errors.ts';
import { startSidecar } from '../../cli/sidecar-command.ts';
import { loadSidecarConfig } from '../../sidecar/config/sidecar-config.ts';
import { createSidecarComposition } from '../../sidecar/host/composition.ts';
import { createHostKey } from '../../sidecar/link/host-key.ts';
import { createLogger } from '../../sidecar/log.ts';
import type { SpawnAttempt } from '../../sidecar/process/process-executor.ts';
import { Figures } from '../resilience/figures.ts';

const NODE = process.execPath;
const KEY_TEXT = 'PRIVATE-KEY-MATERIAL-must-never-be-read';
/** A stdio MCP server that answers one tool, `read`, with the contents of a path (or the error code). */
const READER = `
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'reader', version: '1' } } });
  else if (m.method === 'tools/list') send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'read', inputSchema: { type: 'object' } }] } });
  else if (m.method === 'tools/call') {
    let text;
    try { text = readFileSync(m.params.arguments.path, 'utf8'); } catch (e) { text = e.code; }
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text }] } });
  }
});
`;

/** Counted with the resilience suite's totals: each launch asked for a session, each refused exposure an input tried. */
const figures = new Figures('sandbox-config-dir');
afterAll(() => void figures.report());

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup() {
  const root = mkdtempSync(join(tmpdir(), 'sy-config-refusal-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const configDir = join(root, 'sidecar');
  const elsewhere = join(root, 'servers');
  for (const dir of [join(configDir, 'mcp-servers'), join(configDir, 'trust-profiles'), elsewhere]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(configDir, 'host.key'), KEY_TEXT, { mode: 0o600 });
  writeFileSync(join(configDir, 'reader.mjs'), READER);
  writeFileSync(join(elsewhere, 'reader.mjs'), READER);
  writeFileSync(join(configDir, 'trust-profiles', 'strict.json'), JSON.stringify({ 'network-capabilities': [] }));
  const mcpServers = {
    'cwd-dot': { command: NODE, args: [join(elsewhere, 'reader.mjs')], cwd: '.' },
    'script-in-dir': { command: NODE, args: [join(configDir, 'reader.mjs')] },
    elsewhere: { command: NODE, args: [join(elsewhere, 'reader.mjs')], cwd: elsewhere },
  };
  writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers }));
  const spawns: SpawnAttempt[] = [];
  const lines: string[] = [];
  const sidecar = createSidecarComposition({
    configDir,
    entityId: 'alice-laptop',
    user: 'alice',
    log: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
    executor: { onSpawn: (s) => spawns.push(s), termGraceMs: 300 },
  });
  cleanups.push(() => sidecar.stop());
  return { root, configDir, sidecar, spawns, lines };
}

async function open(sidecar: ReturnType<typeof setup>['sidecar'], server: string) {
  const { revision } = await sidecar.profiles.load('strict');
  const [agentEnd, hostEnd] = createInMemoryChannelPair();
  const hosted = await sidecar.handler.open(
    { type: 'mcp', connection: { 'server-name': server, 'trust-profile-ref': 'strict', 'trust-profile-revision': revision, session: `s-${server}` } },
    hostEnd,
  );
  const client = new Client({ name: 'agent', version: '1.0.0' });
  cleanups.push(async () => {
    await client.close();
    await hosted?.dispose();
  });
  await client.connect(agentEnd);
  return client;
}

describe('a contained launch never exposes the sidecar config dir', () => {
  it.each([
    ['a relative "cwd": "."', 'cwd-dot', 'cwd'],
    ['a script kept in the config dir', 'script-in-dir', 'script'],
  ])('refuses %s before spawning, naming the server and the fix but no path', async (_name, server, by) => {
    const { root, configDir, sidecar, spawns, lines } = setup();
    const error = await open(sidecar, server).catch((e: unknown) => e);
    figures.inputs++;
    expect(error).toBeInstanceOf(WireError);
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { server, exposedBy: by } });
    expect((error as WireError).message).toContain(`Server "${server}" cannot start`);
    expect((error as WireError).message).not.toContain(root);
    expect(spawns).toEqual([]);
    expect(lines.some((line) => line.includes('Refused a contained launch') && line.includes(configDir))).toBe(true);
  });

  it('still runs a server that keeps away from the config dir, contained, and the key is not there', async () => {
    const { configDir, sidecar, spawns } = setup();
    const client = await open(sidecar, 'elsewhere');
    figures.sessions++;
    const result = await client.callTool({ name: 'read', arguments: { path: join(configDir, 'host.key') } });
    figures.calls++;
    expect(result.content).toEqual([{ type: 'text', text: 'ENOENT' }]);
    expect(spawns.map((s) => s.backend)).toEqual(['bubblewrap']);
  });
});

/**
 * Review s24: sidecar.json may keep the host key outside the config dir (`key-file`, absolute),
 * and the compiler compared grants only with the dir, so a profile granting the key's folder let
 * a contained server print the key. The sidecar as the CLI starts it, from its sidecar.json, with
 * real bubblewrap.
 */
describe('a contained launch never exposes the host key kept outside the config dir', () => {
  async function hostWithKeyIn(folder: 'granted' | 'elsewhere') {
    const root = mkdtempSync(join(tmpdir(), 'sy-key-outside-'));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const configDir = join(root, 'sidecar');
    const project = join(root, 'project');
    const keyDir = folder === 'granted' ? join(project, '.keys') : join(root, 'keys');
    for (const dir of [join(configDir, 'mcp-servers'), join(configDir, 'trust-profiles'), project, keyDir]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(project, 'reader.mjs'), READER);
    writeFileSync(join(configDir, 'trust-profiles', 'project.json'), JSON.stringify({ 'filesystem-paths': [{ 'source-path': project, 'access-mode': 'read-only' }], 'network-capabilities': [] }));
    writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: { reader: { command: NODE, args: [join(project, 'reader.mjs')] } } }));
    const keyFile = join(keyDir, 'host.key');
    await createHostKey(keyFile);
    // Nothing listens on port 9: the link retries in the background while the test opens sessions itself.
    writeFileSync(join(configDir, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:9', 'entity-id': 'laptop', 'trust-profile': 'project', 'key-file': keyFile }));
    const lines: string[] = [];
    // Audit lines at `error` only: none reach the test's stderr.
    const sidecar = await startSidecar(loadSidecarConfig(configDir), createLogger({ level: 'debug', write: (line) => lines.push(line) }), 'error');
    cleanups.push(() => sidecar.stop());
    const [agentEnd, hostEnd] = createInMemoryChannelPair();
    const opened = sidecar.handler.open({ type: 'mcp', connection: { 'server-name': 'reader', session: 's-reader' } }, hostEnd);
    return { root, keyFile, lines, agentEnd, opened };
  }

  it('refuses a launch whose profile grants the key\'s folder, naming key-file but no path', async () => {
    const { root, keyFile, lines, opened } = await hostWithKeyIn('granted');
    const error = await opened.catch((e: unknown) => e);
    figures.inputs++;
    expect(error).toMatchObject({ reason: 'launch-failed', detail: { server: 'reader', exposedBy: 'grant' } });
    expect((error as WireError).message).toContain("contains or lies in the host key file (key-file) inside the sandbox");
    expect((error as WireError).message).not.toContain(root);
    expect(lines.some((line) => line.includes('Refused a contained launch') && line.includes(keyFile))).toBe(true);
  });

  it('runs the same server contained when the key is kept elsewhere, and the key is not there', async () => {
    const { keyFile, agentEnd, opened } = await hostWithKeyIn('elsewhere');
    const hosted = await opened;
    const client = new Client({ name: 'agent', version: '1.0.0' });
    cleanups.push(async () => {
      await client.close();
      await hosted?.dispose();
    });
    await client.connect(agentEnd);
    figures.sessions++;
    const result = await client.callTool({ name: 'read', arguments: { path: keyFile } });
    figures.calls++;
    expect(result.content).toEqual([{ type: 'text', text: 'ENOENT' }]);
  });
});
