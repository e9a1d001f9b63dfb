import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileReadProblem } from './file-read-problem.ts';

const dir = mkdtempSync(join(tmpdir(), 'file-read-problem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The error a real read of `path` fails with. */
async function readError(path: string): Promise<unknown> {
  return readFile(path, 'utf8').then(
    () => {
      throw new Error(`${path} was readable`);
    },
    (error: unknown) => error,
  );
}

describe('fileReadProblem', () => {
  it('names a missing file, and a path through a file, not found', async () => {
    writeFileSync(join(dir, 'file'), '{}');
    expect(fileReadProblem(await readError(join(dir, 'missing.json')))).toBe('not found');
    expect(fileReadProblem(await readError(join(dir, 'file', 'below.json')))).toBe('not found');
  });

  it('names a folder not a file', async () => {
    expect(fileReadProblem(await readError(dir))).toBe('not a file');
  });

  it('names any other failure not readable, a runtime refusal with no errno included', () => {
    expect(fileReadProblem(Object.assign(new Error('Permission denied'), { code: 'EACCES' }))).toBe('not readable');
    expect(fileReadProblem(Object.assign(new Error('Requires read access'), { name: 'NotCapable' }))).toBe('not readable');
    expect(fileReadProblem(null)).toBe('not readable');
  });
});
