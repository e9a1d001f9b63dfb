#!/usr/bin/env node
// The `switchyard` bin, every command: the built CLI (dist/switchyard.js) when `npm run build` has
// run since the sources last changed, the TypeScript sources through tsx otherwise (or with
// SWITCHYARD_FROM_SOURCE=1).
// A workstation installs dist/sidecar.js instead, which holds only the sidecar's commands.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'switchyard.js');

/**
 * In a checkout (the package ships no sources), whether a source file changed after the build: a
 * `git pull` without `npm run build` would otherwise run yesterday's CLI without a word.
 */
function sourcesNewerThan(file) {
  const since = statSync(file).mtimeMs;
  const newer = (dir) =>
    readdirSync(dir, { withFileTypes: true }).some((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return newer(path);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && statSync(path).mtimeMs > since;
    });
  return ['cli', 'shared', 'sidecar', 'worker'].some((dir) => existsSync(join(root, dir)) && newer(join(root, dir)));
}

let cli;
if (existsSync(built) && process.env.SWITCHYARD_FROM_SOURCE !== '1' && !sourcesNewerThan(built)) {
  cli = await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  cli = await import(pathToFileURL(join(root, 'cli', 'main.ts')).href);
}
// The one way a command runs as a process (exit code, error line, a reader that left early).
cli.runAsProcess(cli.main);
