import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '..', 'bin', 'switchyard.mjs');
const dir = mkdtempSync(join(tmpdir(), 'switchyard-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function switchyard(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { ...process.env, SWITCHYARD_FROM_SOURCE: '1' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function write(name: string, value: unknown): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

describe('switchyard check', () => {
  it('lists every problem of a broken worker config with its path, and exits 1', async () => {
    const file = write('worker.json', {
      agents: [{ name: 'alice', 'token-sha256': 'nothex', servers: ['everything', 'ghost'], colour: 'blue' }],
      hosts: [{ 'entity-id': 'alice-laptop', 'secret-sha256': '00' }],
      servers: {
        everything: { executor: { type: 'user-computer-profile', 'entity-id': 'alice-laptop', target: { type: 'ssh' } } },
        docs: { executor: { type: 'http', url: 'ftp://x' } },
        files: { executor: { type: 'reverse-http', 'entity-id': 'bob-desktop' } },
      },
    });
    const { code, stdout } = await switchyard('check', file);
    expect(code).toBe(1);
    const problems = stdout.split('\n').filter((l) => l.startsWith('  ')).map((l) => l.trim().split(':')[0]);
    expect(problems).toEqual(
      expect.arrayContaining([
        'agents[0].token-sha256',
        'agents[0].colour',
        'hosts[0].secret-sha256',
        'servers.everything.executor.target.type',
        'servers.docs.executor.url',
        'agents[0].servers[1]',
      ]),
    );
    expect(stdout).toMatch(/servers\.files\.executor\.entity-id: .*bob-desktop/);
    expect(stdout).toContain('agents[0].colour: unknown key');
  });

  it('recognises sidecar.json, mcp.json and trust profiles by content and place', async () => {
    const sidecar = write('cfg/sidecar.json', { worker: 'not a url', 'entity-id': '../up', 'secret-file': 'host.secret' });
    const servers = write('cfg/mcp-servers/mcp.json', { mcpServers: { 'bad/name': { command: 'x' }, ok: { command: '' } } });
    const profile = write('cfg/trust-profiles/p.json', { 'filesystem-paths': [{ 'source-path': 'relative', 'access-mode': 'rw' }], 'network-capabilities': ['teleport'] });
    const out = (await switchyard('check', sidecar, servers, profile)).stdout;
    expect(out).toContain('(sidecar config)');
    expect(out).toMatch(/  worker: /);
    expect(out).toMatch(/  entity-id: /);
    expect(out).toContain('(mcp.json)');
    expect(out).toMatch(/  mcpServers\.bad\/name: /);
    expect(out).toMatch(/  mcpServers\.ok\.command: /);
    expect(out).toContain('(trust profile)');
    expect(out).toMatch(/  filesystem-paths\[0\]\.source-path: /);
    expect(out).toMatch(/  filesystem-paths\[0\]\.access-mode: /);
    expect(out).toMatch(/  network-capabilities\[0\]: /);
  });

  it('says ok for a valid file and names a file that is not JSON', async () => {
    const valid = write('ok/mcp.json', { mcpServers: { everything: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] } } });
    expect(await switchyard('check', valid)).toMatchObject({ code: 0, stdout: `${valid}: ok (mcp.json)\n` });
    const junk = write('junk.json', '{"agents": [');
    const result = await switchyard('check', junk);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/\(root\): not valid JSON/);
  });

  it('prints help for every command', async () => {
    for (const command of [[], ['start'], ['worker'], ['sidecar'], ['sidecar', 'profiles'], ['check'], ['doctor']]) {
      const { code, stdout } = await switchyard(...command, '--help');
      expect(code, command.join(' ')).toBe(0);
      expect(stdout).toMatch(/^Usage: switchyard/);
    }
  });
});
