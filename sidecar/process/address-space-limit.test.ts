import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { findPrlimit, limitedCommand } from './address-space-limit.ts';

describe('address-space limit', () => {
  it('runs the launch under prlimit, the command and its arguments unchanged after "--"', () => {
    expect(limitedCommand({ prlimit: '/usr/bin/prlimit', bytes: 1024 }, '/usr/bin/bwrap', ['--die-with-parent', '--', 'node', 'x'])).toEqual({
      file: '/usr/bin/prlimit',
      args: ['--data=1024', '--', '/usr/bin/bwrap', '--die-with-parent', '--', 'node', 'x'],
    });
  });

  it('lets a Node server use fetch (a WebAssembly parser) under the default 4096 MiB, and stops an allocation past a small limit', () => {
    const prlimit = findPrlimit(process.env);
    expect(prlimit, 'prlimit (util-linux) is installed').not.toBeNull();
    const run = (mib: number, script: string): string => {
      const { file, args } = limitedCommand({ prlimit: prlimit!, bytes: mib * 1024 * 1024 }, process.execPath, ['-e', script]);
      return execFileSync(file, args, { encoding: 'utf8' }).trim();
    };
    // Under RLIMIT_AS at this size, undici's WebAssembly.instantiate fails with "Out of memory".
    expect(run(4096, "fetch('http://127.0.0.1:1').then(() => console.log('answered'), (e) => console.log(e.message))")).toBe('fetch failed');
    expect(run(256, "const held = []; try { for (;;) held.push(Buffer.alloc(32 << 20, 1)); } catch (e) { console.log(held.length * 32 < 256 ? 'stopped' : 'over') }")).toBe('stopped');
  });

  it('finds prlimit on PATH on Linux only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-prlimit-'));
    try {
      writeFileSync(join(dir, 'prlimit'), '', { mode: 0o755 });
      expect(findPrlimit({ PATH: `/nonexistent:${dir}` }, 'linux')).toBe(join(dir, 'prlimit'));
      expect(findPrlimit({ PATH: '/nonexistent' }, 'linux')).toBeNull();
      expect(findPrlimit({ PATH: dir }, 'darwin')).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
