import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './json-file.ts';
import { ensureSecret, reachableFromTheCloud, writeJson } from './state-dir.ts';

describe('reachableFromTheCloud', () => {
  it('takes a public https URL, by name or address', () => {
    for (const url of ['https://yard.example.com/mcp', 'https://10.example.com/mcp', 'https://203.0.113.9/mcp', 'https://100.128.0.1/mcp']) expect(reachableFromTheCloud(url), url).toBe(true);
  });

  it('refuses plain http, loopback, private and shared (Tailscale) addresses, link-local and unique-local IPv6', () => {
    for (const url of ['http://yard.example.com/mcp', 'https://127.0.0.1/mcp', 'https://localhost/mcp', 'https://10.1.2.3/mcp', 'https://192.168.1.5/mcp', 'https://172.20.0.1/mcp', 'https://169.254.1.1/mcp', 'https://100.101.102.103/mcp', 'https://[fd00::1]/mcp', 'https://[fe80::1]/mcp']) {
      expect(reachableFromTheCloud(url), url).toBe(false);
    }
  });
});

describe('secret files (review s19)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sy-secret-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a token file 0600 over a looser one, and replaces a symlink instead of writing through it', () => {
    const config = join(dir, 'client-config.json');
    writeFileSync(config, '{}', { mode: 0o644 });
    writeJson(config, { token: 'x' }, 0o600);
    expect(statSync(config).mode & 0o777).toBe(0o600);
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'mine');
    const linked = join(dir, 'linked.json');
    symlinkSync(victim, linked);
    writeJson(linked, { token: 'y' }, 0o600);
    expect(readFileSync(victim, 'utf8')).toBe('mine');
    expect([lstatSync(linked).isSymbolicLink(), statSync(linked).mode & 0o777]).toEqual([false, 0o600]);
  });

  it('keeps an existing token but makes it readable by this user alone, and refuses one that is a symlink', () => {
    const token = join(dir, 'agent.token');
    writeFileSync(token, 'sya_0123456789abcdef\n', { mode: 0o644 });
    expect(ensureSecret(token, 'sya_')).toBe('sya_0123456789abcdef');
    expect(statSync(token).mode & 0o777).toBe(0o600);
    const linked = join(dir, 'linked.token');
    symlinkSync(token, linked);
    expect(() => ensureSecret(linked, 'sya_')).toThrow(`${linked}: is a symlink, which a secret must not be: remove it and run this again`);
  });

  it('edits a config reached through a symlink where the link points, keeping the link and the file\'s mode', () => {
    const real = join(dir, 'etc-worker.json');
    writeFileSync(real, '{}', { mode: 0o640 });
    const link = join(dir, 'worker.json');
    symlinkSync(real, link);
    writeFileAtomic(link, '{"edited":true}\n');
    expect([lstatSync(link).isSymbolicLink(), readFileSync(real, 'utf8'), statSync(real).mode & 0o777]).toEqual([true, '{"edited":true}\n', 0o640]);
  });
});
