import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('holds the files of folders and files the dir links to, which the host reads through the links (review s20)', async () => {
    const dir = configDir();
    const kept = mkdtempSync(join(tmpdir(), 'switchyard-dotfiles-'));
    dirs.push(kept);
    mkdirSync(join(kept, 'alice', 'mcp-servers'), { recursive: true });
    writeFileSync(join(kept, 'alice', 'mcp-servers', 'mcp.json'), '{"mcpServers":{"files":{"command":"alice-files"}}}');
    writeFileSync(join(kept, 'linked.json'), '{"network-capabilities":[]}');
    mkdirSync(join(dir, 'users'));
    symlinkSync(join(kept, 'alice'), join(dir, 'users', 'alice'));
    symlinkSync(join(kept, 'linked.json'), join(dir, 'trust-profiles', 'linked.json'));
    symlinkSync(join(kept, 'gone.json'), join(dir, 'trust-profiles', 'dangling.json'));
    symlinkSync('loop.json', join(dir, 'trust-profiles', 'loop.json'));
    const snapshot = ConfigSnapshot.take(dir);
    expect(await snapshot.read(join(dir, 'users', 'alice', 'mcp-servers', 'mcp.json'))).toContain('alice-files');
    expect(await snapshot.read(join(dir, 'trust-profiles', 'linked.json'))).toBe('{"network-capabilities":[]}');
    await expect(snapshot.read(join(dir, 'trust-profiles', 'dangling.json'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(snapshot.read(join(dir, 'trust-profiles', 'loop.json'))).rejects.toMatchObject({ code: 'ENOENT' });
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
