/**
 * Finds the Deno binary that the `deno` npm package installed. We call it directly: `npx deno`
 * costs about half a second per start.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { LocalError } from '../shared/errors.ts';

export function denoBinaryPath(): string {
  const fromEnv = process.env.SWITCHYARD_DENO;
  if (fromEnv) return fromEnv;
  try {
    const pkg = createRequire(import.meta.url).resolve('deno/package.json');
    const candidate = join(dirname(pkg), process.platform === 'win32' ? 'deno.exe' : 'deno');
    if (existsSync(candidate)) return candidate;
  } catch {
    // fall through to the error below
  }
  throw new LocalError('deno-not-found', 'Cannot find the Deno binary: run "npm install" (the "deno" package provides it) or set SWITCHYARD_DENO');
}

/** Repository root (where package.json is), for locating worker sources and node_modules. */
export function packageRoot(): string {
  let dir = dirname(new URL(import.meta.url).pathname);
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}
