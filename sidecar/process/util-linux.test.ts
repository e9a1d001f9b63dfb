import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findUtilLinuxTool } from './util-linux.ts';

describe('findUtilLinuxTool', () => {
  it('finds the tool in the first absolute PATH entry that has it, never through a relative entry', () => {
    const dir = mkdtempSync(join(tmpdir(), 'util-linux-'));
    try {
      writeFileSync(join(dir, 'setpriv'), '#!/bin/sh\n');
      chmodSync(join(dir, 'setpriv'), 0o755);
      expect(findUtilLinuxTool('setpriv', { PATH: `${dir}:/usr/bin` }, 'linux')).toBe(join(dir, 'setpriv'));
      expect(findUtilLinuxTool('setpriv', { PATH: `${relative(process.cwd(), dir)}::/nonexistent` }, 'linux')).toBeNull();
      expect(findUtilLinuxTool('setpriv', { PATH: `${dir}` }, 'darwin')).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
