import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSnapshot } from './config-snapshot.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function configDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-snapshot-'));
  dirs.push(dir);
  for (const sub of ['mcp-servers', 'trust-profiles', join('machines', 'laptop', 'mcp-servers')]) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(join(dir, 'sidecar.json'), '{}');
  writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), '{"mcpServers":{}}');
  writeFileSync(join(dir, 'machines', 'laptop', 'mcp-servers', 'mcp.json'), '{"mcpServers":{"m":{"command":"x"}}}');
  writeFileSync(join(dir, 'trust-profiles', 'work.json'), '{}');
  writeFileSync(join(dir, 'host.key'), 'not a config file');
  return dir;
}

describe('config snapshot', () => {
  it('holds every config file the host reads, and nothing else of the dir', async () => {
    const dir = configDir();
    const snapshot = ConfigSnapshot.take(dir);
    expect([...snapshot.texts.keys()].sort()).toEqual(
      [join(dir, 'sidecar.json'), join(dir, 'mcp-servers', 'mcp.json'), join(dir, 'machines', 'laptop', 'mcp-servers', 'mcp.json'), join(dir, 'trust-profiles', 'work.json')].sort(),
    );
    expect(await snapshot.read(join(dir, 'trust-profiles', 'work.json'))).toBe('{}');
    await expect(snapshot.read(join(dir, 'host.key'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('keeps the texts it was taken with, and tells an edit apart', async () => {
    const dir = configDir();
    const before = ConfigSnapshot.take(dir);
    expect(before.equals(ConfigSnapshot.take(dir))).toBe(true);
    writeFileSync(join(dir, 'trust-profiles', 'work.json'), '{"network-capabilities":[]}');
    expect(before.equals(ConfigSnapshot.take(dir))).toBe(false);
    expect(await before.read(join(dir, 'trust-profiles', 'work.json'))).toBe('{}');
  });
});
