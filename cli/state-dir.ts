/**
 * The embedded default's state: an agent token, the sidecar's host key and generated configs
 * under one folder (`.switchyard/` by default, git-ignored). The token and the key are created
 * once with mode 0600 and kept across restarts, so a client config pasted into an agent keeps
 * working; the generated worker config holds only the token's hash and the key's public half.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { isLoopbackHostname } from '../shared/loopback.ts';
import { LocalError } from '../shared/errors.ts';
import { writeFileAtomic } from './json-file.ts';

/** The host key in `<state>/sidecar/` (`sidecar/link/host-key.ts` makes it on the first start). */
export const HOST_KEY_FILE = 'host.key';

/** A fresh bearer token: 256 random bits after `prefix` (`sy_` for agent and admin tokens). */
export function newToken(prefix = 'sy_'): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** Reads a secret file, creating it with a fresh random value (0600) when missing or empty. */
export function ensureSecret(path: string, prefix: string): string {
  if (existsSync(path)) {
    if (lstatSync(path).isSymbolicLink()) throw new LocalError('invalid-config', `${path}: is a symlink, which a secret must not be: remove it and run this again`);
    const value = readFileSync(path, 'utf8').trim();
    if (value.length >= 16) {
      // Kept, but only for this user: one written by hand or an older version may be readable by others.
      if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
      return value;
    }
  }
  const value = newToken(prefix);
  writeFileAtomic(path, value + '\n', 0o600, { secret: true });
  return value;
}

export function ensureDir(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

/** A JSON file's text as the CLI writes every one: two-space indent, a final newline. */
export function jsonFileText(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n';
}

/** Writes `value` to `path`; with `mode` 0600 (a token inside), exactly that mode and never through a symlink. */
export function writeJson(path: string, value: unknown, mode = 0o644): void {
  writeFileAtomic(path, jsonFileText(value), mode, { secret: (mode & 0o077) === 0 });
}

/**
 * Private IPv4 and IPv6 literals (RFC 1918, shared address space as Tailscale uses it, link-local,
 * unique local): no cloud reaches them. Only literals: `10.example.com` is a name.
 */
const PRIVATE_IPV4 = /^(?:10\.|192\.168\.|172\.(?:1[6-9]|2\d|3[01])\.|169\.254\.|100\.(?:6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.)\d+\.\d+(?:\.\d+)?$/;
const PRIVATE_IPV6 = /^\[(?:f[cd]|fe[89ab])/i;
const isPrivateAddress = (hostname: string) => PRIVATE_IPV4.test(hostname) || PRIVATE_IPV6.test(hostname);

/**
 * Whether a client that connects from its vendor's cloud can use `url`: Claude's custom connectors
 * (claude.ai, Desktop and mobile alike) and ChatGPT's need a public https URL. For any other, Claude
 * Desktop reaches the worker through mcp-remote, run on this machine from its config file.
 */
export function reachableFromTheCloud(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'https:' && !isLoopbackHostname(hostname) && !isPrivateAddress(hostname);
}

/** Paste-ready client configs for the one Switchyard URL. */
export function clientConfigs(url: string, token: string) {
  const header = `Bearer ${token}`;
  return {
    generic: { mcpServers: { switchyard: { type: 'http', url, headers: { Authorization: header } } } },
    vscode: { servers: { switchyard: { type: 'http', url, headers: { Authorization: header } } } },
    cursor: { mcpServers: { switchyard: { url, headers: { Authorization: header } } } },
    // Claude Desktop's config file starts stdio servers only, so it reaches a local URL through mcp-remote.
    claudeDesktop: {
      mcpServers: {
        switchyard: {
          command: 'npx',
          args: ['-y', 'mcp-remote', url, '--header', 'Authorization:${SWITCHYARD_AUTH}'],
          env: { SWITCHYARD_AUTH: header },
        },
      },
    },
    mcpRemote: `npx -y mcp-remote ${url} --header "Authorization:${header}"`,
    claudeCode: `claude mcp add --transport http switchyard ${url} --header "Authorization: ${header}"`,
  };
}
