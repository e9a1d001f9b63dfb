/**
 * Real bubblewrap, real processes: what a contained server can and cannot do. The tests run as
 * whatever user runs the suite (root in CI), so they show the sandbox constrains root too.
 * Servers are launched through the real ProcessExecutor with the compiled policy, exactly as the
 * sidecar launches them (status and block fds, grant descriptors, user-mode network).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { ProcessExecutor, type ProcessHandle } from '../process/process-executor.ts';
import { type EffectiveProfile, NEUTRAL_PROFILE, type NetworkCapability } from '../trust/effective-profile.ts';
import type { BubblewrapPolicy } from './containment-policy.ts';
import { bubblewrapProbe, compileContainment, type ContainmentLaunch } from './index.ts';

const NODE = process.execPath;
const FILESYSTEM_SERVER = join(process.cwd(), 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const SECRET_NAME = 'SWITCHYARD_CONTAINED_TEST_SECRET';
// A setup failure's bwrap line is only in the executor's log (it names paths): warn lines go to
// stderr, so a failing run shows what bubblewrap said.
const executor = new ProcessExecutor({ termGraceMs: 500, logger: createLogger({ level: 'warn' }) });

let root: string;
let granted: string;
let readOnly: string;
let other: string;
let homeDir: string;
let server: Server;
let port: number;

async function compile(effective: EffectiveProfile, launch: ContainmentLaunch): Promise<BubblewrapPolicy> {
  const policy = await compileContainment(effective, launch, { revision: 'sha256:test', platform: 'linux', probe: bubblewrapProbe('/usr/bin/bwrap') });
  if (policy?.backend !== 'bubblewrap') throw new Error('expected a bubblewrap policy');
  return policy;
}

function launchContained(policy: BubblewrapPolicy, launch: ContainmentLaunch): Promise<ProcessHandle> {
  return executor.launch({ command: launch.file, args: launch.args, env: {}, policy });
}

/** Runs `node -e script ...args` contained and returns its exit code and output. */
async function runNode(effective: EffectiveProfile, script: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const launch = { file: NODE, args: ['-e', script, ...args] };
  const handle = await launchContained(await compile(effective, launch), launch);
  let stdout = '';
  let stderr = '';
  handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  handle.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [{ code }] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
  await handle.dispose();
  return { code, stdout, stderr };
}

function profile(network: NetworkCapability[] | undefined = []): EffectiveProfile {
  return {
    ...NEUTRAL_PROFILE,
    filesystemPaths: [
      { sourcePath: granted, targetPath: granted, accessMode: 'read-write' },
      { sourcePath: readOnly, targetPath: readOnly, accessMode: 'read-only' },
    ],
    networkCapabilities: network,
    environment: { inherit: ['PATH'], set: { FROM_PROFILE: 'yes' } },
  };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'sy-contained-'));
  granted = join(root, 'granted');
  readOnly = join(root, 'read-only');
  other = join(root, 'other');
  for (const dir of [granted, readOnly, other]) mkdirSync(dir);
  writeFileSync(join(readOnly, 'data.txt'), 'read-only data');
  homeDir = mkdtempSync(join(homedir(), '.sy-contained-'));
  writeFileSync(join(homeDir, 'secret.txt'), 'home secret');
  process.env[SECRET_NAME] = 'sidecar-secret-value';
  server = createServer((socket) => socket.end('hello from the host\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await executor.disposeAll();
  delete process.env[SECRET_NAME];
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
  rmSync(homeDir, { recursive: true, force: true });
});

const TRY_WRITE = `
const fs = require('node:fs');
const out = {};
for (const path of process.argv.slice(1)) {
  try { fs.writeFileSync(path, 'x'); out[path] = 'written'; } catch (e) { out[path] = e.code; }
}
console.log(JSON.stringify({ uid: process.getuid(), out }));`;

describe('a contained process', () => {
  it('can run node, read its read-only grant and write its read-write grant', async () => {
    const script = `
const fs = require('node:fs');
fs.writeFileSync(process.argv[1] + '/out.txt', fs.readFileSync(process.argv[2] + '/data.txt', 'utf8') + ' copied');
console.log(fs.readdirSync(process.argv[1]).join(','));`;
    const result = await runNode(profile(), script, granted, readOnly);
    expect(result).toMatchObject({ code: 0, stdout: 'out.txt\n' });
    expect(readFileSync(join(granted, 'out.txt'), 'utf8')).toBe('read-only data copied');
  });

  it('cannot write outside its read-write grants, even as root', async () => {
    const refused = [join(readOnly, 'x'), join(homeDir, 'x'), '/x', '/usr/x', '/etc/x', join(process.cwd(), 'x')];
    // Under /tmp the sandbox has its own tmpfs: a write there may succeed but never reaches the host.
    const privateTmp = [join(other, 'x'), join(root, 'x')];
    const { code, stdout } = await runNode(profile(), TRY_WRITE, ...refused, ...privateTmp);
    expect(code).toBe(0);
    const { uid, out } = JSON.parse(stdout) as { uid: number; out: Record<string, string> };
    expect(uid).toBe(process.getuid?.());
    for (const target of refused) expect(out[target], target).not.toBe('written');
    for (const target of [...refused, ...privateTmp]) expect(existsSync(target), target).toBe(false);
  });

  it('runs a script from its install dir, which it can read but not write', async () => {
    const scripts = join(root, 'server');
    mkdirSync(scripts);
    writeFileSync(join(scripts, 'helper.mjs'), 'export const greeting = "hi from helper";\n');
    writeFileSync(
      join(scripts, 'main.mjs'),
      `import { writeFileSync } from 'node:fs';\nimport { greeting } from './helper.mjs';\n` +
        `let write = 'written';\ntry { writeFileSync(new URL('./dropped.txt', import.meta.url), 'x'); } catch (e) { write = e.code; }\n` +
        `console.log(greeting + ' ' + write);\n`,
    );
    const launch = { file: NODE, args: [join(scripts, 'main.mjs')] };
    const handle = await launchContained(await compile(profile(), launch), launch);
    let stdout = '';
    handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const [{ code }] = await Promise.all([handle.exited, new Promise((resolve) => handle.stdout.once('end', resolve))]);
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'hi from helper EROFS\n' });
    expect(existsSync(join(scripts, 'dropped.txt'))).toBe(false);
  });

  it('writes its /tmp into a private tmpfs', async () => {
    const marker = join('/tmp', `sy-contained-marker-${process.pid}`);
    const { stdout } = await runNode(profile(), TRY_WRITE, marker);
    expect(JSON.parse(stdout).out[marker]).toBe('written');
    expect(existsSync(marker)).toBe(false);
  });

  it('cannot read a file under $HOME that was not granted', async () => {
    const script = `
const fs = require('node:fs');
for (const read of [() => fs.readFileSync(process.argv[1], 'utf8'), () => fs.readdirSync(process.argv[2])]) {
  try { console.log('read ' + JSON.stringify(read())); } catch (e) { console.log(e.code); }
}`;
    const result = await runNode(profile(), script, join(homeDir, 'secret.txt'), homedir());
    expect(result).toMatchObject({ code: 0, stdout: 'ENOENT\nENOENT\n' });
  });

  const CONNECT = `
const socket = require('node:net').connect(Number(process.argv[1]), '127.0.0.1');
socket.on('data', (d) => { console.log('connected: ' + d.toString().trim()); socket.destroy(); });
socket.on('error', (e) => console.log('error: ' + e.code));`;

  it.each<[string, NetworkCapability[] | undefined]>([
    ['no network', []],
    ['loopback (its own, not the host one)', ['loopback']],
    ['internet-client (user-mode networking, never the host loopback)', ['internet-client']],
    ['grants and nothing said of the network', undefined],
  ])('cannot reach a host 127.0.0.1 port with %s', async (_name, network) => {
    const result = await runNode(profile(network), CONNECT, String(port));
    expect(result).toMatchObject({ code: 0, stdout: 'error: ECONNREFUSED\n' });
  });

  it('sees only the allowed environment', async () => {
    const launch = { file: NODE, args: ['-e', 'console.log(JSON.stringify(process.env))'], env: { SERVER_VAR: 'from-config' } };
    const policy = await compile(profile(), launch);
    const handle = await launchContained(policy, launch);
    let stdout = '';
    handle.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await new Promise((resolve) => handle.stdout.once('end', resolve));
    const env = JSON.parse(stdout) as Record<string, string>;
    expect(process.env[SECRET_NAME]).toBe('sidecar-secret-value');
    expect(env[SECRET_NAME]).toBeUndefined();
    expect(env).toMatchObject({ PATH: process.env['PATH'], FROM_PROFILE: 'yes', SERVER_VAR: 'from-config', HOME: '/tmp' });
    expect(Object.keys(env).filter((k) => !['PATH', 'FROM_PROFILE', 'SERVER_VAR', 'HOME', 'PWD'].includes(k))).toEqual([]);
    expect(policy.args.join(' ')).not.toContain('sidecar-secret-value');
  });

  it('sets its environment inside the sandbox only: bwrap runs on the host with none, so no LD_LIBRARY_PATH of the server reaches its loader (review s19)', async () => {
    const launch = { file: NODE, args: ['-e', 'console.log(process.env.LD_LIBRARY_PATH); setTimeout(() => {}, 10_000)'], env: { LD_LIBRARY_PATH: '/tmp/planted' } };
    const handle = await launchContained(await compile(profile(), launch), launch);
    const line = await new Promise<string>((resolve) => handle.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
    const hostSide = readFileSync(`/proc/${handle.pid}/environ`, 'utf8');
    await handle.dispose();
    expect(line).toBe('/tmp/planted');
    expect(hostSide).toBe('');
  });
});

/** A minimal SDK client transport over a launched process (the SDK's own stdio transport adds parent env vars). */
class HandleTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly #buffer = new ReadBuffer();

  constructor(readonly handle: ProcessHandle) {}

  async start(): Promise<void> {
    this.handle.stdout.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (let message = this.#buffer.readMessage(); message !== null; message = this.#buffer.readMessage()) this.onmessage?.(message);
    });
    void this.handle.exited.then(() => this.onclose?.());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.handle.stdin.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    await this.handle.dispose();
  }
}

describe('the real filesystem MCP server, contained', () => {
  it('only sees its grant even when configured with more', async () => {
    const launch = { file: NODE, args: [FILESYSTEM_SERVER, granted, homeDir, other] };
    const handle = await launchContained(await compile(profile(), launch), launch);
    handle.stderr.resume();
    const client = new Client({ name: 'contained-test', version: '1.0.0' });
    try {
      await client.connect(new HandleTransport(handle));
      const allowed = await client.callTool({ name: 'list_allowed_directories', arguments: {} });
      expect(JSON.stringify(allowed.content)).toContain(granted);
      expect(JSON.stringify(allowed.content)).not.toContain(homeDir);
      expect(JSON.stringify(allowed.content)).not.toContain(other);

      const written = await client.callTool({ name: 'write_file', arguments: { path: join(granted, 'from-mcp.txt'), content: 'hello' } });
      expect(written.isError).not.toBe(true);
      expect(readFileSync(join(granted, 'from-mcp.txt'), 'utf8')).toBe('hello');

      const secret = await client.callTool({ name: 'read_text_file', arguments: { path: join(homeDir, 'secret.txt') } });
      expect(secret.isError).toBe(true);
      expect(JSON.stringify(secret.content)).not.toContain('home secret');
    } finally {
      await client.close();
    }
  });
});
