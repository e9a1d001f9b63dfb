/**
 * `switchyard sidecar init`, run as users run it (the bin, from sources): what it writes, what it
 * prints, and what it refuses to overwrite.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseWorkerConfig } from '../worker/config/worker-config.ts';

const BIN = join(import.meta.dirname, '..', 'bin', 'switchyard.mjs');
const root = mkdtempSync(join(tmpdir(), 'switchyard-init-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function switchyard(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The hosts entry init printed, in the one `host add` line of its output. */
function printedEntry(stdout: string): { 'entity-id': string; 'public-key': string } {
  const line = stdout.split('\n').find((l) => l.trim().startsWith('npx --no switchyard-mcp host add --config worker.json \'{"entity-id"'));
  if (line === undefined) throw new Error(`no host add line in:\n${stdout}`);
  return JSON.parse(line.slice(line.indexOf("'") + 1, line.lastIndexOf("'"))) as { 'entity-id': string; 'public-key': string };
}

describe('switchyard sidecar init', () => {
  it('writes sidecar.json and a 0600 key, and prints a hosts entry the worker config takes as is', async () => {
    const dir = join(root, 'fresh', 'switchyard');
    const result = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com', '--entity-id', 'alice-laptop');
    expect(result.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'sidecar.json'), 'utf8'))).toEqual({ worker: 'https://yard.example.com', 'entity-id': 'alice-laptop' });
    expect(statSync(join(dir, 'host.key')).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const entry = printedEntry(result.stdout);
    expect(entry).toEqual({ 'entity-id': 'alice-laptop', 'public-key': expect.stringMatching(/^ed25519:[A-Za-z0-9_-]{43}$/) });
    expect(parseWorkerConfig({ agents: [], hosts: [entry], servers: {} }, { runtime: 'edge' }).hosts).toEqual([entry]);
    // Nothing of the private key on the screen.
    const pem = readFileSync(join(dir, 'host.key'), 'utf8').split('\n')[1]!;
    expect(result.stdout + result.stderr).not.toContain(pem);
  });

  it('never overwrites the key: run again, it prints the same entry; another worker needs --force, which keeps other keys', async () => {
    const dir = join(root, 'again');
    const first = printedEntry((await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'http://127.0.0.1:8787', '--entity-id', 'h')).stdout);
    const key = readFileSync(join(dir, 'host.key'), 'utf8');
    const again = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'http://127.0.0.1:8787', '--entity-id', 'h');
    expect(again.stdout).toContain('an existing key is never overwritten');
    expect(printedEntry(again.stdout)).toEqual(first);

    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'http://127.0.0.1:8787', 'entity-id': 'h', user: 'alice' }));
    const refused = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com', '--entity-id', 'h');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already exists for worker "http://127.0.0.1:8787" as "h": pass --force');
    const forced = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com', '--entity-id', 'h', '--force');
    expect(forced.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'sidecar.json'), 'utf8'))).toEqual({ worker: 'https://yard.example.com', 'entity-id': 'h', user: 'alice' });
    expect(readFileSync(join(dir, 'host.key'), 'utf8')).toBe(key);
    expect(printedEntry(forced.stdout)).toEqual(first);
  });

  it('moves a config from before key pairs onto the key: secret-file is dropped', async () => {
    const dir = join(root, 'old');
    await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com', '--entity-id', 'h');
    writeFileSync(join(dir, 'sidecar.json'), JSON.stringify({ worker: 'https://yard.example.com', 'entity-id': 'h', 'secret-file': 'host.secret' }));
    const result = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com', '--entity-id', 'h');
    expect(result.stdout).toContain('"secret-file" dropped: the host key replaces the shared secret');
    expect(JSON.parse(readFileSync(join(dir, 'sidecar.json'), 'utf8'))).toEqual({ worker: 'https://yard.example.com', 'entity-id': 'h' });
  });

  it('refuses a plain-http remote worker and a missing flag before writing anything, naming the fix', async () => {
    const dir = join(root, 'refused');
    const remote = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'http://yard.example.com', '--entity-id', 'h');
    expect(remote.code).toBe(1);
    expect(remote.stderr).toMatch(/worker: must be https: \(or wss:\) for a worker on another machine/);
    const missing = await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com');
    expect(missing.stderr).toContain('Missing --worker URL or --entity-id ID');
    expect(() => statSync(dir)).toThrow();
  });
});

describe('switchyard sidecar host-entry', () => {
  it('names an mcp.json it cannot read and exits 1, rather than a line that silently holds none of its servers', async () => {
    const dir = join(root, 'entry');
    expect((await switchyard('sidecar', 'init', '--config-dir', dir, '--worker', 'https://yard.example.com', '--entity-id', 'h')).code).toBe(0);
    mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
    const file = join(dir, 'mcp-servers', 'mcp.json');
    writeFileSync(file, '{"mcpServers": {"files": {"command": "node", "args": ["a"],}}}');
    const syntax = await switchyard('sidecar', 'host-entry', '--config-dir', dir);
    expect(syntax.code).toBe(1);
    expect(syntax.stdout).toContain(`Left out every server of ${file}, which the sidecar cannot read either: not valid JSON: `);
    writeFileSync(file, JSON.stringify({ mcpServers: { files: { comand: 'node' } } }));
    const key = await switchyard('sidecar', 'host-entry', '--config-dir', dir);
    expect(key.code).toBe(1);
    expect(key.stdout).toContain('mcpServers.files.comand: unknown key (did you mean "command"?)');
    writeFileSync(file, JSON.stringify({ mcpServers: { files: { command: 'node' } } }));
    const fixed = await switchyard('sidecar', 'host-entry', '--config-dir', dir);
    expect(fixed.code).toBe(0);
    expect(printedEntry(fixed.stdout)).toMatchObject({ servers: ['files'] });
    expect(fixed.stdout).not.toContain('Left out');
  });
});
