/**
 * The worker config (DESIGN §4): agents with their token hash, allowed servers and trust context;
 * hosts with their public key; servers bound to a connection descriptor.
 *
 * Parsing collects every problem as `path: message` in one `ValidationError`: the zod shape first,
 * then each server's descriptor (parsed by the shared descriptor parser), then the cross-checks
 * in `config-checks.ts` (undefined servers and hosts, duplicates, runtime-specific bindings).
 * Cross-checks run even when the shape has problems, over whatever is well-formed, so one run
 * reports everything.
 *
 * @module
 */
import * as z from '../../shared/zod.ts';
import { jsonSyntaxProblem } from '../../shared/json-syntax-problem.ts';
import { duplicateKeyIssue } from '../../shared/json-duplicate-key.ts';
import { parseConnectionDescriptor, type ConnectionDescriptor } from '../../shared/descriptors.ts';
import { AgentNameSchema, ProfileRefSchema, RevisionSchema, ServerNameSchema, EntityIdSchema } from '../../shared/names.ts';
import { issuesFromZod, safeParseWith, ValidationError, type ValidationIssue } from '../../shared/validation.ts';
import { crossCheckWorkerConfig, type WorkerRuntime } from './config-checks.ts';
import { PublicKeySchema } from '../../shared/link/link-identity.ts';
import { AuditConfigSchema } from '../../shared/audit/audit-config.ts';
import { OAuthConfigSchema } from '../auth/oauth/oauth-config.ts';
import { DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS, HOST_PATTERN, ORIGIN_PATTERN } from '../auth/host-origin.ts';
import { asRecord } from '../../shared/records.ts';

export type { WorkerRuntime } from './config-checks.ts';

export const DEFAULT_SESSION_IDLE_SECONDS = 900;
/** Live sessions one agent may hold (`max-sessions-per-agent`); past it the oldest idle one is ended. */
export const DEFAULT_MAX_SESSIONS_PER_AGENT = 16;
/** Requests one agent may have in flight (`max-requests-per-agent`); past it a request is refused. */
export const DEFAULT_MAX_REQUESTS_PER_AGENT = 256;
/**
 * How long `/mcp` waits for the agent's servers to answer before it answers without the late ones
 * (`aggregate-start-wait-seconds`): a contained server starts in well under a second, one that npx
 * launches from its cache in a few, and an agent's client gives up on initialize at 60 s or sooner.
 */
export const DEFAULT_AGGREGATE_START_WAIT_SECONDS = 5;
/**
 * The longest `request-timeout-seconds`: a timer takes at most 2^31 - 1 ms on every runtime, and
 * one asked for longer fires at once, so a larger deadline would end every request as it starts.
 */
export const MAX_REQUEST_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

// Lowercased by a check rather than a pipe into a transform: the same value, without zod's pipe (1 KB of dist/worker.js).
const Sha256HexSchema = z.string().check(
  z.regex(/^[0-9A-Fa-f]{64}$/, 'must be 64 hex digits, a token\'s sha-256 (switchyard agent add writes an agent\'s; of any token: printf %s TOKEN | sha256sum)'),
  z.overwrite((s) => s.toLowerCase()),
);

export { AgentNameSchema };

export const TrustContextSchema = z.strictObject({
  'trust-profile-ref': ProfileRefSchema.check(z.describe('Trust profile on the launch host: trust-profiles/<ref>.json')),
  'trust-profile-revision': RevisionSchema.check(z.describe('Expected revision; a changed profile is refused (trust-profile-stale)')),
  'containment': z
    .optional(z.enum(['required', 'none']))
    .check(z.describe('"required": never run this agent\'s servers uncontained (edge-direct http is refused)')),
});

export const AgentSchema = z.strictObject({
  'name': AgentNameSchema.check(z.describe('Agent name, shown in logs and sent to sidecars')),
  'token-sha256': Sha256HexSchema.check(z.describe('sha-256 hex of the bearer token the agent presents')),
  'servers': z.array(z.string()).check(z.describe('Servers this agent may use; each must be defined under "servers"')),
  'trust-context': z.optional(TrustContextSchema).check(z.describe('Trust profile for this agent; absent: each host runs its servers under its own floor, and refuses them where it has none and no "allow-uncontained"')),
  'max-sessions': z
    .optional(z.number().check(z.int(), z.positive(), z.lte(10_000)))
    .check(z.describe('Live sessions this agent may hold; wins over "max-sessions-per-agent"')),
});

export const HostSchema = z.strictObject({
  'entity-id': EntityIdSchema.check(z.describe('Host id a sidecar links as')),
  'public-key': PublicKeySchema.check(z.describe('The host\'s Ed25519 public key, "ed25519:<base64url>" as printed by switchyard sidecar init; its sidecar proves the private key on every link')),
  'trust-profiles': z
    .optional(z.record(ProfileRefSchema, RevisionSchema))
    .check(z.describe('Revision of each trust profile the host reported in its host line (switchyard host add writes it); switchyard agent add --trust-profile pins from here')),
});

export const ServerEntrySchema = z.strictObject({
  executor: z.unknown().check(z.describe('Connection descriptor: where this server runs')),
});

function originOnly(url: URL): boolean {
  return url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
}

export const WorkerConfigSchema = z.strictObject({
  'agents': z.array(AgentSchema).check(z.describe('Agents that may connect, by bearer token')),
  'hosts': z._default(z.array(HostSchema), []).check(z.describe('Hosts whose sidecars may link')),
  'servers': z.record(z.string(), ServerEntrySchema).check(z.describe('Servers by name, each bound to a descriptor')),
  'public-url': z
    .optional(z.string().check(
      z.url('must be an absolute URL'),
      z.refine((u) => /^https?:\/\//i.test(u), 'must be an http: or https: URL'),
      // Its origin is all the worker uses (it serves /mcp, /link and OAuth from its root): a path would be dropped unseen.
      z.refine((u) => !URL.canParse(u) || originOnly(new URL(u)), 'must be the worker\'s origin alone (scheme, host and port), without a path, query or user name'),
    ))
    .check(z.describe('The URL sidecars dial, for a worker behind a proxy or tunnel that rewrites Host: a link proof must name it. Default: the link request\'s Host, when it is an allowed host on the port the worker listens on')),
  'link-on-loopback': z
    .optional(z.boolean())
    .check(z.describe('With public-url, also take a link that a sidecar on this machine signed for the loopback address the worker listens on, coming from a loopback connection (switchyard start --public-url sets it for its own sidecar). Off by default: a proxy on this machine connects from loopback too')),
  'allowed-hosts': z
    ._default(z.array(z.string().check(z.regex(HOST_PATTERN, 'must be a host name, optionally with ":port"'))), [...DEFAULT_ALLOWED_HOSTS])
    .check(z.describe('Host header values accepted (DNS-rebinding protection); loopback names by default. The host of public-url is always accepted too')),
  'allowed-origins': z
    ._default(z.array(z.string().check(z.regex(ORIGIN_PATTERN, 'must be an origin like "https://app.example.com" or a host name'))), [...DEFAULT_ALLOWED_ORIGINS])
    .check(z.describe('Origin header values accepted from browsers; loopback names by default')),
  'session-idle-seconds': z
    ._default(z.number().check(z.int(), z.positive()), DEFAULT_SESSION_IDLE_SECONDS)
    .check(z.describe('An agent session idle this long, in seconds, is closed with its server processes (900 = 15 min, suited to clients that never close their sessions)')),
  'max-sessions-per-agent': z
    ._default(z.number().check(z.int(), z.positive(), z.lte(10_000)), DEFAULT_MAX_SESSIONS_PER_AGENT)
    .check(z.describe('Live sessions (both endpoints together) one agent may hold; a new one past it ends that agent\'s oldest idle session, and is refused (limit-reached) only when none is idle. Other agents are never touched')),
  'max-requests-per-agent': z
    ._default(z.number().check(z.int(), z.positive(), z.lte(100_000)), DEFAULT_MAX_REQUESTS_PER_AGENT)
    .check(z.describe('Requests one agent may have in flight at once, over all its sessions and modern requests together (a session alone: 128); one past it is answered limit-reached (HTTP 429, or one error per refused request in a batch) and goes nowhere. Other agents are never touched')),
  'request-timeout-seconds': z
    .optional(z.number().check(z.positive(), z.lte(MAX_REQUEST_TIMEOUT_SECONDS, `must be at most ${MAX_REQUEST_TIMEOUT_SECONDS} (about 24 days); leave it unset for no limit on one request on /servers/<name>/mcp`)))
    .check(z.describe('Longest wait, in seconds, for opening a server and for one request. Unset: 60 to open a server, 600 for one request on /mcp, and on /servers/<name>/mcp 60 for initialize (as an open) and no limit on any other request')),
  'aggregate-start-wait-seconds': z
    ._default(z.number().check(z.positive(), z.lte(600)), DEFAULT_AGGREGATE_START_WAIT_SECONDS)
    .check(z.describe('Longest wait, in seconds, on /mcp for the agent\'s servers\' first answers: one that has not answered by then is listed as <server>__unavailable (reason: starting) instead of holding initialize, a list or a modern list for the open deadline; a server up but slower than this to list is left out of that list. On a session its open goes on, the agent is sent list_changed when it is up, and a call naming it waits for it. At most the open deadline (request-timeout-seconds)')),
  'admin-token-sha256': z.optional(Sha256HexSchema).check(z.describe('sha-256 hex of a token that sees the full /healthz')),
  'audit': z.optional(AuditConfigSchema),
  'oauth': z.optional(OAuthConfigSchema),
});

type Shape = z.infer<typeof WorkerConfigSchema>;
export type TrustContext = z.infer<typeof TrustContextSchema>;
export type AgentEntry = z.infer<typeof AgentSchema>;
export type HostEntry = z.infer<typeof HostSchema>;
export interface ServerEntry {
  executor: ConnectionDescriptor;
}
export type WorkerConfig = Omit<Shape, 'servers'> & { servers: Record<string, ServerEntry> };

export interface ParseWorkerConfigOptions {
  runtime: WorkerRuntime;
}

/** Validates a worker config object; throws `ValidationError` listing every problem. */
export function parseWorkerConfig(input: unknown, options: ParseWorkerConfigOptions): WorkerConfig {
  const issues: ValidationIssue[] = [];
  const shape = safeParseWith(WorkerConfigSchema, input);
  if (!shape.success) issues.push(...shape.issues);

  const servers: Record<string, ServerEntry> = {};
  const rawServers = recordAt(input, 'servers');
  for (const [name, entry] of Object.entries(rawServers)) {
    const nameCheck = ServerNameSchema.safeParse(name);
    if (!nameCheck.success) issues.push(...issuesFromZod(nameCheck.error, `servers.${name}`));
    const executor = asRecord(entry)?.executor;
    if (executor === undefined) {
      if (asRecord(entry) !== undefined) issues.push({ path: `servers.${name}.executor`, message: 'is required' });
      continue;
    }
    try {
      servers[name] = { executor: parseConnectionDescriptor(executor, `servers.${name}.executor`) };
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      issues.push(...error.issues);
    }
  }

  issues.push(...crossCheckWorkerConfig(input, servers, options.runtime));
  if (issues.length > 0 || !shape.success) throw new ValidationError('worker config', dedupe(issues));
  return { ...shape.data, servers };
}

/** Parses config text (JSON); a syntax error is reported as one `(root)` problem, a key given twice as one at its path. */
export function parseWorkerConfigText(text: string, options: ParseWorkerConfigOptions): WorkerConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ValidationError('worker config', [{ path: '(root)', message: jsonSyntaxProblem(error, text) }]);
  }
  const duplicate = duplicateKeyIssue(text);
  if (duplicate !== undefined) throw new ValidationError('worker config', [duplicate]);
  return parseWorkerConfig(json, options);
}

function recordAt(value: unknown, key: string): Record<string, unknown> {
  return asRecord(asRecord(value)?.[key]) ?? {};
}

function dedupe(issues: readonly ValidationIssue[]): ValidationIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.path}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
