import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { packageRoot } from './deno-binary.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('packageRoot', () => {
  it('finds the checkout of a module whose path has a space and a non-ASCII letter in it (review s21)', () => {
    const temp = mkdtempSync(join(tmpdir(), 'switchyard-root-'));
    dirs.push(temp);
    const root = join(temp, 'My Projects', 'józef', 'switchyard');
    mkdirSync(join(root, 'cli'), { recursive: true });
    writeFileSync(join(root, 'package.json'), '{}');
    const module = pathToFileURL(join(root, 'cli', 'deno-binary.ts')).href;
    expect(module).toContain('My%20Projects');
    expect(packageRoot(module)).toBe(root);
  });
});
