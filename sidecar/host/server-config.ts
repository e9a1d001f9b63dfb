/**
 * Server configs on the launch host: which command (or URL) a server name means here.
 *
 * The worker sends only a server name; the sidecar looks it up in its own files, most specific
 * first, and the first file that defines the name wins (upstream #1439: machine prefix first):
 *
 * 1. `DIR/machines/<entity-id>/mcp-servers/mcp.json`
 * 2. `DIR/users/<user>/mcp-servers/mcp.json`
 * 3. `DIR/mcp-servers/mcp.json`
 *
 * Each file has the format MCP clients already use, `{"mcpServers": {name: entry}}`, where an entry
 * is `{command, args?, env?, cwd?}` or `{url, headers?}`; a `type` key (`stdio`, `http`,
 * `streamable-http`) is accepted because clients write it, and `"trust-profile"` names the
 * entry's own trust floor (see `sidecar/trust/host-floor.ts`). The host reads them again whenever
 * one changed (`server-config-cache.ts`), so an edit applies to the next session without a restart. A relative `cwd` is relative to DIR.
 *
 * @module
 */
import { HttpHeadersSchema } from '../../shared/http-headers-schema.ts';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import * as z from '../../shared/zod.ts';
import { WireError } from '../../shared/errors.ts';
import { fileReadProblem } from '../../shared/file-read-problem.ts';
import { EntityIdSchema, ProfileRefSchema, ServerNameSchema } from '../../shared/names.ts';
import { isAmbiguousServerName, NAMESPACE_SEPARATOR_MESSAGE } from '../../shared/namespace-separator.ts';
import { joinPath, parseWith, safeParseWith, ValidationError, type ValidationIssue } from '../../shared/validation.ts';
import { asRecord } from '../../shared/records.ts';
import { duplicateKeyIssue } from '../../shared/json-duplicate-key.ts';
import { jsonSyntaxProblem } from '../../shared/json-syntax-problem.ts';
import { UserNameSchema } from '../config/user-name.ts';

/** `trustProfile`: the entry's own floor (its `"trust-profile"`), which wins over sidecar.json's. */
export type StdioServerConfig = { kind: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd?: string; trustProfile?: string };
export type HttpServerConfig = { kind: 'http'; url: string; headers: Record<string, string>; trustProfile?: string };
export type ServerConfig = StdioServerConfig | HttpServerConfig;

export type ServerConfigSource = 'machine' | 'user' | 'defaults';

export interface ResolvedServerConfig {
  name: string;
  config: ServerConfig;
  /** Which layer defined it, and the file (for the local log only: paths never cross the link). */
  source: ServerConfigSource;
  file: string;
}

/** A server entry's own floor; see `sidecar/trust/host-floor.ts`. */
const TrustFloorSchema = z.optional(ProfileRefSchema).check(
  z.describe('This server\'s trust floor on this host: a profile in trust-profiles/, composed restrictively with the agent\'s; wins over sidecar.json "trust-profile"'),
);

export const StdioEntrySchema = z.strictObject({
  type: z.optional(z.literal('stdio')),
  command: z.string().check(z.minLength(1, 'must not be empty'), z.describe('Program to run; searched on PATH when not a path')),
  args: z.optional(z.array(z.string())).check(z.describe('Arguments, in order')),
  env: z
    .optional(
      z.record(
        z.string().check(z.refine((name) => name !== '' && !name.includes('=') && !name.includes('\0'), 'must be a variable name: not empty, no "=" and no NUL')),
        z.string().check(z.refine((value) => !value.includes('\0'), 'must not hold a NUL byte')),
      ),
    )
    .check(z.describe('Variables added to the inherited environment')),
  cwd: z.optional(z.string().check(z.minLength(1))).check(z.describe('Working directory; relative to the config dir')),
  'trust-profile': TrustFloorSchema,
});

export const HttpEntrySchema = z.strictObject({
  type: z.optional(z.enum(['http', 'streamable-http'])),
  url: z
    .string()
    .check(
      z.url('must be an absolute URL'),
      z.refine((u) => /^https?:\/\//i.test(u), 'must be an http: or https: URL'),
      z.describe('Streamable HTTP endpoint, reached from this host'),
    ),
  headers: z.optional(HttpHeadersSchema).check(z.describe('Headers sent with every request')),
  'trust-profile': TrustFloorSchema,
});

const FileSchema = z.strictObject({ mcpServers: z.record(z.string(), z.unknown()) });

/**
 * Parses one mcp.json. Throws `ValidationError` listing every problem as `path: message`.
 * `configDir` anchors a relative `cwd`.
 */
export function parseMcpServersFile(input: unknown, configDir = '.'): Map<string, ServerConfig> {
  const file = safeParseWith(FileSchema, input);
  const issues: ValidationIssue[] = file.success ? [] : [...file.issues];
  // Past a problem of the file's own keys (a key Claude Desktop's config has beside mcpServers),
  // its servers are still read, so every problem is said at once, as in the other config files.
  const entries = file.success ? file.data.mcpServers : (asRecord(asRecord(input)?.mcpServers) ?? {});
  const out = new Map<string, ServerConfig>();
  for (const [name, entry] of Object.entries(entries)) {
    const at = joinPath(['mcpServers', name]);
    if (!ServerNameSchema.safeParse(name).success) {
      issues.push({ path: at, message: 'server name must be 1-64 letters, digits, "_" or "-", starting with a letter or digit' });
      continue;
    }
    // The worker refuses the name too, so no agent could reach it: a dead entry is refused, as any invalid one, rather than skipped unseen.
    if (isAmbiguousServerName(name)) issues.push({ path: at, message: NAMESPACE_SEPARATOR_MESSAGE });
    const isHttp = typeof entry === 'object' && entry !== null && ('url' in entry || (entry as { type?: unknown }).type === 'http' || (entry as { type?: unknown }).type === 'streamable-http');
    try {
      if (isHttp) {
        const http = parseWith(HttpEntrySchema, entry, 'mcp.json', at);
        out.set(name, { kind: 'http', url: http.url, headers: http.headers ?? {}, ...(http['trust-profile'] ? { trustProfile: http['trust-profile'] } : {}) });
      } else {
        const stdio = parseWith(StdioEntrySchema, entry, 'mcp.json', at);
        const cwd = stdio.cwd === undefined ? undefined : isAbsolute(stdio.cwd) ? stdio.cwd : join(configDir, stdio.cwd);
        out.set(name, {
          kind: 'stdio',
          command: stdio.command,
          args: stdio.args ?? [],
          env: stdio.env ?? {},
          ...(cwd ? { cwd } : {}),
          ...(stdio['trust-profile'] ? { trustProfile: stdio['trust-profile'] } : {}),
        });
      }
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      issues.push(...error.issues);
    }
  }
  if (issues.length > 0) throw new ValidationError('mcp.json', issues);
  return out;
}

/** The files searched for a host and user, most specific first. */
export function serverConfigFiles(configDir: string, entityId: string, user: string): { source: ServerConfigSource; file: string }[] {
  const layers: { source: ServerConfigSource; file: string }[] = [];
  if (EntityIdSchema.safeParse(entityId).success) layers.push({ source: 'machine', file: join(configDir, 'machines', entityId, 'mcp-servers', 'mcp.json') });
  if (UserNameSchema.safeParse(user).success) layers.push({ source: 'user', file: join(configDir, 'users', user, 'mcp-servers', 'mcp.json') });
  layers.push({ source: 'defaults', file: join(configDir, 'mcp-servers', 'mcp.json') });
  return layers;
}

/**
 * Finds `name` for this host. Throws `WireError('server-not-found')` when no layer defines it,
 * and `ValidationError` (local: its paths stay in the sidecar log) when a file is invalid.
 */
export async function resolveServerConfig(
  configDir: string,
  scope: { entityId: string; user: string },
  name: string,
  read: (path: string) => Promise<string> = (path) => readFile(path, 'utf8'),
): Promise<ResolvedServerConfig> {
  for (const { source, file } of serverConfigFiles(configDir, scope.entityId, scope.user)) {
    let text: string;
    try {
      text = await read(file);
    } catch (error) {
      const problem = fileReadProblem(error);
      if (problem === 'not found') continue;
      throw new ValidationError(`mcp.json "${file}"`, [{ path: '(root)', message: problem }]);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new ValidationError(`mcp.json "${file}"`, [{ path: '(root)', message: jsonSyntaxProblem(error, text) }]);
    }
    const duplicate = duplicateKeyIssue(text);
    if (duplicate !== undefined) throw new ValidationError(`mcp.json "${file}"`, [duplicate]);
    let servers: Map<string, ServerConfig>;
    try {
      servers = parseMcpServersFile(json, configDir);
    } catch (error) {
      if (error instanceof ValidationError) throw new ValidationError(`mcp.json "${file}"`, error.issues);
      throw error;
    }
    const config = servers.get(name);
    if (config !== undefined) return { name, config, source, file };
  }
  throw new WireError('server-not-found', `Server "${name}" is not configured on this host: add it to an mcp-servers/mcp.json of its sidecar`, {
    detail: { server: name },
  });
}
