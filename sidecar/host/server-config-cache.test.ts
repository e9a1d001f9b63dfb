import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SETTLE_MS } from '../config/file-stamp.ts';
import { MODERN_STAMP_AGE_MS, ServerConfigCache } from './server-config-cache.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sy-config-cache-'));
  mkdirSync(join(dir, 'mcp-servers'), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const write = (layer: string, servers: Record<string, unknown>) => {
  mkdirSync(join(dir, layer), { recursive: true });
  writeFileSync(join(dir, layer, 'mcp.json'), JSON.stringify({ mcpServers: servers }));
};
const settled = { now: () => Date.now() + SETTLE_MS + 1000 };
const scope = { configDir: '', entityId: 'alice-laptop', user: 'alice' };
const command = async (cache: ServerConfigCache, name: string) => {
  const { config } = await cache.resolve(name);
  return config.kind === 'stdio' ? config.command : config.url;
};

describe('ServerConfigCache', () => {
  it('reuses a lookup while no layer changed', async () => {
    write('mcp-servers', { files: { command: 'files-v1' } });
    const cache = new ServerConfigCache({ ...scope, configDir: dir, ...settled });
    const first = await cache.resolve('files');
    expect(await cache.resolve('files')).toBe(first);
  });

  it('reads again when a layer is edited, added or removed', async () => {
    write('mcp-servers', { files: { command: 'files-v1' } });
    const cache = new ServerConfigCache({ ...scope, configDir: dir, ...settled });
    expect(await command(cache, 'files')).toBe('files-v1');
    write('mcp-servers', { files: { command: 'files-version-2' } });
    expect(await command(cache, 'files')).toBe('files-version-2');
    write('machines/alice-laptop/mcp-servers', { files: { command: 'machine-files' } });
    expect(await command(cache, 'files')).toBe('machine-files');
    rmSync(join(dir, 'machines'), { recursive: true });
    expect(await command(cache, 'files')).toBe('files-version-2');
    write('mcp-servers', {});
    await expect(cache.resolve('files')).rejects.toMatchObject({ reason: 'server-not-found' });
  });

  it('sees an edit of the same size made right after a lookup', async () => {
    write('mcp-servers', { files: { command: 'files-v1' } });
    const cache = new ServerConfigCache({ ...scope, configDir: dir });
    expect(await command(cache, 'files')).toBe('files-v1');
    write('mcp-servers', { files: { command: 'files-v2' } });
    expect(await command(cache, 'files')).toBe('files-v2');
  });

  it('reads through the read it is given, and after clear reads again what that read gives now', async () => {
    write('mcp-servers', { files: { command: 'on-disk' } });
    let texts: Record<string, string> | null = null;
    const read = async (path: string) => (texts === null ? (await import('node:fs/promises')).readFile(path, 'utf8') : texts[path] ?? Promise.reject(Object.assign(new Error('absent'), { code: 'ENOENT' })));
    const cache = new ServerConfigCache({ ...scope, configDir: dir, read, ...settled });
    expect(await command(cache, 'files')).toBe('on-disk');
    texts = { [join(dir, 'mcp-servers', 'mcp.json')]: JSON.stringify({ mcpServers: { files: { command: 'accepted' } } }) };
    expect(await command(cache, 'files')).toBe('on-disk');
    cache.clear();
    expect(await command(cache, 'files')).toBe('accepted');
  });

  it('keeps no failed lookup', async () => {
    writeFileSync(join(dir, 'mcp-servers', 'mcp.json'), '{not json');
    const cache = new ServerConfigCache({ ...scope, configDir: dir, ...settled });
    await expect(cache.resolve('files')).rejects.toThrow(/not valid JSON/);
    await expect(cache.resolve('files')).rejects.toThrow(/not valid JSON/);
  });
  it('stats the layers again when the clock stepped back since the last check: a step back never stretches the window', async () => {
    write('mcp-servers', { files: { command: 'files-v1' } });
    let clock = Date.now() + SETTLE_MS + 1000;
    const cache = new ServerConfigCache({ ...scope, configDir: dir, now: () => clock });
    const modern = async () => (await cache.resolve('files', MODERN_STAMP_AGE_MS)).config;
    expect(await modern()).toMatchObject({ command: 'files-v1' });
    write('mcp-servers', { files: { command: 'files-version-2' } });
    clock -= 3_600_000;
    expect(await modern()).toMatchObject({ command: 'files-version-2' });
  });
  it('relies on a check of the stamps as recent as a modern request allows, and never serves an edit it has seen the old way', async () => {
    write('mcp-servers', { files: { command: 'files-v1' } });
    let clock = Date.now() + SETTLE_MS + 1000;
    const cache = new ServerConfigCache({ ...scope, configDir: dir, now: () => clock });
    const modern = async () => (await cache.resolve('files', MODERN_STAMP_AGE_MS)).config;
    expect(await modern()).toMatchObject({ command: 'files-v1' });
    write('mcp-servers', { files: { command: 'files-version-2' } });
    clock += MODERN_STAMP_AGE_MS - 1;
    expect(await modern()).toMatchObject({ command: 'files-v1' }); // the check a moment ago stands
    clock += 1;
    expect(await modern()).toMatchObject({ command: 'files-version-2' });
    write('mcp-servers', { files: { command: 'files-third-version' } });
    expect(await command(cache, 'files')).toBe('files-third-version'); // a legacy open stats at once
    expect(await modern()).toMatchObject({ command: 'files-third-version' });
  });
});
