#!/usr/bin/env node
// The `switchyard` bin, every command: the built CLI (dist/switchyard.js) when `npm run build` has
// run, the TypeScript sources through tsx otherwise (or with SWITCHYARD_FROM_SOURCE=1).
// A workstation installs dist/sidecar.js instead, which holds only the sidecar's commands.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'switchyard.js');
let cli;
if (existsSync(built) && process.env.SWITCHYARD_FROM_SOURCE !== '1') {
  cli = await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  cli = await import(pathToFileURL(join(root, 'cli', 'main.ts')).href);
}
try {
  const code = await cli.main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
} catch (error) {
  process.stderr.write(`switchyard: ${cli.describeError(error)}\n`);
  if (process.env.SWITCHYARD_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
}
