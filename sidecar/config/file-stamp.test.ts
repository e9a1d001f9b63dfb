import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileStamp, filesStamp, SETTLE_MS } from './file-stamp.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sy-stamp-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const later = () => Date.now() + SETTLE_MS + 1000;

describe('fileStamp', () => {
  it('stamps a missing file, and a path through a file, as absent', () => {
    writeFileSync(join(dir, 'plain'), 'x');
    expect(fileStamp(join(dir, 'none.json'))).toBe('absent');
    expect(fileStamp(join(dir, 'plain', 'mcp.json'))).toBe('absent');
  });

  it('gives a file changed within the settle time no stamp, so it is read afresh', () => {
    writeFileSync(join(dir, 'a.json'), '{}');
    expect(fileStamp(join(dir, 'a.json'))).toBeNull();
    expect(fileStamp(join(dir, 'a.json'), later())).toMatch(/^\d+:\d+:2:/);
  });

  it('changes when the file is rewritten, replaced by a rename or removed', () => {
    const file = join(dir, 'a.json');
    writeFileSync(file, '{}');
    const first = fileStamp(file, later());
    writeFileSync(file, '{ }');
    const rewritten = fileStamp(file, later());
    expect(rewritten).not.toBe(first);
    writeFileSync(join(dir, 'b.json'), '{ }');
    renameSync(join(dir, 'b.json'), file);
    const renamed = fileStamp(file, later());
    expect(renamed).not.toBe(rewritten);
    rmSync(file);
    expect(fileStamp(file, later())).toBe('absent');
  });

  it('joins stamps, and has none when one file has none', () => {
    writeFileSync(join(dir, 'a.json'), '{}');
    const paths = [join(dir, 'a.json'), join(dir, 'none.json')];
    expect(filesStamp(paths, later())).toMatch(/\|absent$/);
    expect(filesStamp(paths)).toBeNull();
  });
});
