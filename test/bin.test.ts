/**
 * The `switchyard` bin in a checkout runs the built CLI only while it is newer than every source
 * file: after a `git pull` without `npm run build`, a stale dist/switchyard.js ran yesterday's CLI
 * without a word. A copy of the bin beside a stub build and stub sources shows which one it ran.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from './support/paths.ts';

// Inside the checkout, so the copy resolves tsx from its node_modules.
mkdirSync(join(REPO, 'test-results'), { recursive: true });
const root = mkdtempSync(join(REPO, 'test-results', 'bin-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// The CLI module's contract with the bin: `main`, and `runAsProcess`, which the bin runs it with.
const stub = (said: string) => `export async function main() { process.stdout.write('${said}'); return 0; }\nexport function runAsProcess(main) { void main(process.argv.slice(2)); }\n`;
for (const dir of ['bin', 'dist', 'cli', 'worker']) mkdirSync(join(root, dir));
copyFileSync(join(REPO, 'bin', 'switchyard.mjs'), join(root, 'bin', 'switchyard.mjs'));
writeFileSync(join(root, 'cli', 'main.ts'), stub('sources'));
writeFileSync(join(root, 'dist', 'switchyard.js'), stub('built'));

const ran = () => spawnSync(process.execPath, [join(root, 'bin', 'switchyard.mjs')], { encoding: 'utf8', env: { ...process.env, SWITCHYARD_FROM_SOURCE: '' } }).stdout;
const at = (path: string, seconds: number) => {
  writeFileSync(path, '', { flag: 'a' });
  utimesSync(path, seconds, seconds);
};

describe('the switchyard bin in a checkout', () => {
  it('runs the build while it is newer than the sources, and the sources once one changed after it', () => {
    at(join(root, 'cli', 'main.ts'), 1_000);
    at(join(root, 'dist', 'switchyard.js'), 2_000);
    expect(ran()).toBe('built');
    // A test file is not part of the CLI: editing one does not make the build stale.
    at(join(root, 'worker', 'thing.test.ts'), 3_000);
    expect(ran()).toBe('built');
    at(join(root, 'worker', 'thing.ts'), 3_000);
    expect(ran()).toBe('sources');
  });
});
