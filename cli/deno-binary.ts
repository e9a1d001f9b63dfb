/**
 * Finds the Deno binary that the `deno` npm package installed. We call it directly: `npx deno`
 * costs about half a second per start.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

/**
 * Repository root (where package.json is) above the module at `from`, for locating worker
 * sources and node_modules. A file URL's path is decoded: a checkout under `My Projects/` has
 * `%20` in its URL, and no `package.json` would be found above the escaped name.
 */
export function packageRoot(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}
