import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findPrlimit, limitedCommand } from './address-space-limit.ts';

describe('address-space limit', () => {
  it('runs the launch under prlimit, the command and its arguments unchanged after "--"', () => {
    expect(limitedCommand({ prlimit: '/usr/bin/prlimit', bytes: 1024 }, '/usr/bin/bwrap', ['--die-with-parent', '--', 'node', 'x'])).toEqual({
      file: '/usr/bin/prlimit',
      args: ['--as=1024', '--', '/usr/bin/bwrap', '--die-with-parent', '--', 'node', 'x'],
    });
  });

  it('finds prlimit on PATH on Linux only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-prlimit-'));
    try {
      writeFileSync(join(dir, 'prlimit'), '');
      expect(findPrlimit({ PATH: `/nonexistent:${dir}` }, 'linux')).toBe(join(dir, 'prlimit'));
      expect(findPrlimit({ PATH: '/nonexistent' }, 'linux')).toBeNull();
      expect(findPrlimit({ PATH: dir }, 'darwin')).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
