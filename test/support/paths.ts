/**
 * Where the things every real-process test runs live: the repo, the Deno binary from npm, the
 * server-everything entry and the misbehaving fixtures.
 *
 * @module
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repo root, with a trailing slash. */
export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const DENO = `${REPO}node_modules/deno/deno`;
export const EVERYTHING = `${REPO}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;

/** A stdio server entry (as in an mcp.json) running `test/fixtures/<name>` under this Node. */
export function fixtureServer(name: string, ...args: string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: [join(REPO, 'test/fixtures', name), ...args] };
}

/** server-everything over stdio, as an mcp.json entry. */
export const everythingServer = (): { command: string; args: string[] } => ({ command: process.execPath, args: [EVERYTHING, 'stdio'] });
