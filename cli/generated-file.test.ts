import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { writeGeneratedJson } from './generated-file.ts';

describe('writeGeneratedJson', () => {
  let state: string;
  let stderr: string[];

  beforeEach(() => {
    state = mkdtempSync(join(tmpdir(), 'sy-generated-'));
    stderr = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true));
  });
  afterEach(() => {
    vi.restoreAllMocks();
    rmSync(state, { recursive: true, force: true });
  });

  it('replaces quietly a file that still holds what it last wrote, even when what it writes now differs (another HOST)', () => {
    const file = join(state, 'worker.json');
    expect(writeGeneratedJson(state, file, { 'allowed-hosts': ['localhost'] })).toBeUndefined();
    expect(writeGeneratedJson(state, file, { 'allowed-hosts': ['localhost', 'box'] })).toBeUndefined();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ 'allowed-hosts': ['localhost', 'box'] });
    expect(existsSync(`${file}.previous`)).toBe(false);
    expect(stderr).toEqual([]);
  });

  it('keeps an edit as FILE.previous, replacing an older one, with one line on stderr', () => {
    const file = join(state, 'worker.json');
    writeGeneratedJson(state, file, { a: 1 });
    writeFileSync(`${file}.previous`, 'older');
    writeFileSync(file, '{"a": 2}');
    expect(writeGeneratedJson(state, file, { a: 1 })).toBe(`${file}.previous`);
    expect(readFileSync(`${file}.previous`, 'utf8')).toBe('{"a": 2}');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ a: 1 });
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toMatch(/^note: .*worker\.json had changed since start wrote it: your copy is kept as .*worker\.json\.previous, and the file regenerated \(.*switchyard worker and switchyard sidecar, README: "Deploying"\)\n$/);
  });

  it('counts any difference as an edit in a state dir with no record of what it wrote, and none when the text is the same', () => {
    const file = join(state, 'demo.json');
    writeFileSync(file, JSON.stringify({ a: 1 }, null, 2) + '\n');
    expect(writeGeneratedJson(state, file, { a: 1 })).toBeUndefined();
    rmSync(join(state, 'generated.json'));
    expect(writeGeneratedJson(state, file, { a: 2 })).toBe(`${file}.previous`);
    expect(stderr).toHaveLength(1);
  });
});
