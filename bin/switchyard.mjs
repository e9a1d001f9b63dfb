#!/usr/bin/env node
// The `switchyard` bin: the built CLI when `npm run build` has run, the TypeScript sources otherwise.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'dist', 'sidecar.js');
let main;
if (existsSync(built) && process.env.SWITCHYARD_FROM_SOURCE !== '1') {
  ({ main } = await import(pathToFileURL(built).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import(pathToFileURL(join(root, 'cli', 'main.ts')).href));
}
try {
  const code = await main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
} catch (error) {
  const { describeError } = await import(pathToFileURL(existsSync(built) ? built : join(root, 'cli', 'main.ts')).href);
  process.stderr.write(`switchyard: ${describeError(error)}\n`);
  process.exitCode = 1;
}
