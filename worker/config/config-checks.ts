/**
 * Cross-checks of the worker config: what one field's schema cannot see on its own.
 *
 * They read the raw input defensively (anything malformed is skipped here, because the shape
 * check already reported it), so a config with a typo in one agent still gets its undefined
 * servers and hosts reported in the same run.
 *
 * @module
 */
import type { ConnectionDescriptor } from '../../shared/descriptors.ts';
import type { ValidationIssue } from '../../shared/validation.ts';
import { isAmbiguousServerName, NAMESPACE_SEPARATOR_MESSAGE } from '../../shared/namespace-separator.ts';
import { asRecord } from '../../shared/records.ts';
import { isCleartextRemote } from '../../shared/loopback.ts';

/**
 * Where the worker runs, which decides what it can serve:
 * - `edge`: any web runtime (`deno serve dist/worker.js`, `switchyard worker` under Deno, Deno
 *   Deploy): no process of its own to launch servers in, so every server is bound to a host or is
 *   edge-direct HTTP;
 * - `node`: `switchyard worker --runtime node`, the single-machine deployment: a top-level
 *   `{"type":"local"}` server is launched in the worker's own process through the host handler.
 */
export type WorkerRuntime = 'edge' | 'node';

/** The fix a local binding needs on an edge runtime; one text for check, the CLI and the bundle. */
export const EDGE_LOCAL_SERVER_MESSAGE =
  'a top-level {"type":"local"} server runs in the worker\'s own process, which only the single-machine mode can do: ' +
  'run it with `switchyard worker --runtime node`, or bind the server to a host: ' +
  '{"type":"user-computer-profile","entity-id":"<host>","target":{"type":"local"}}';

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Every cross-field problem of a config, as `path: message`. */
export function crossCheckWorkerConfig(
  input: unknown,
  servers: Readonly<Record<string, { executor: ConnectionDescriptor }>>,
  runtime: WorkerRuntime,
): ValidationIssue[] {
  const root = asRecord(input) ?? {};
  const issues: ValidationIssue[] = [];
  const definedServers = new Set(Object.keys(asRecord(root.servers) ?? {}));
  const definedHosts = new Set<string>();

  // Hosts: unique entity ids, and a key of its own each (one key on two hosts lets either pose as the other).
  const keys = new Map<string, number>();
  asArray(root.hosts).forEach((host, i) => {
    const key = asRecord(host)?.['public-key'];
    if (typeof key === 'string') {
      const first = keys.get(key);
      if (first !== undefined) issues.push({ path: `hosts[${i}].public-key`, message: `same public key as hosts[${first}]: run switchyard sidecar init on each host and use the key it prints` });
      else keys.set(key, i);
    }
    const id = asRecord(host)?.['entity-id'];
    if (typeof id !== 'string') return;
    if (definedHosts.has(id)) issues.push({ path: `hosts[${i}].entity-id`, message: `duplicate host "${id}"` });
    definedHosts.add(id);
  });

  // Agents: unique names and tokens, servers defined and listed once.
  const names = new Map<string, number>();
  const tokens = new Map<string, number>();
  asArray(root.agents).forEach((agent, i) => {
    const a = asRecord(agent);
    if (a === undefined) return;
    if (typeof a.name === 'string') {
      const first = names.get(a.name);
      if (first !== undefined) issues.push({ path: `agents[${i}].name`, message: `duplicate agent name "${a.name}": agents[${first}] has it too` });
      else names.set(a.name, i);
    }
    const token = a['token-sha256'];
    if (typeof token === 'string') {
      const first = tokens.get(token.toLowerCase());
      if (first !== undefined) issues.push({ path: `agents[${i}].token-sha256`, message: `same token hash as agents[${first}]: each agent needs its own token` });
      else tokens.set(token.toLowerCase(), i);
    }
    const listed = new Set<string>();
    asArray(a.servers).forEach((server, j) => {
      if (typeof server !== 'string') return;
      if (!definedServers.has(server)) issues.push({ path: `agents[${i}].servers[${j}]`, message: `unknown server "${server}": define it under "servers"` });
      if (listed.has(server)) issues.push({ path: `agents[${i}].servers[${j}]`, message: `server "${server}" is listed twice` });
      listed.add(server);
    });
  });

  // The built-in authorization server takes agent tokens on its consent page: OAuth 2.1 and MCP
  // require its endpoints over TLS, which a plain-http public URL off this machine does not give.
  const publicUrl = root['public-url'];
  if (asRecord(asRecord(root.oauth)?.['built-in']) !== undefined && typeof publicUrl === 'string' && isCleartextRemote(publicUrl)) {
    issues.push({ path: 'public-url', message: 'must be https: with oauth.built-in, whose consent page takes agent tokens (plain http is for this machine\'s loopback only): put the worker behind TLS' });
  }

  // Servers: namespacing-safe names, bindings to defined hosts, runtime-specific bindings.
  for (const name of definedServers) {
    if (isAmbiguousServerName(name)) {
      issues.push({ path: `servers.${name}`, message: NAMESPACE_SEPARATOR_MESSAGE });
    }
  }
  for (const [name, { executor }] of Object.entries(servers)) {
    issues.push(...checkTopLevel(executor, `servers.${name}.executor`, definedHosts, runtime));
  }
  return issues;
}

/** A server's bound descriptor: the outer level reaches a host, its inner target runs there. */
function checkTopLevel(d: ConnectionDescriptor, path: string, hosts: ReadonlySet<string>, runtime: WorkerRuntime): ValidationIssue[] {
  if (d.type === 'local') {
    return runtime === 'edge' ? [{ path, message: EDGE_LOCAL_SERVER_MESSAGE }] : [];
  }
  if (d.type === 'http') return [];
  const issues: ValidationIssue[] = [];
  if (!hosts.has(d['entity-id'])) {
    issues.push({ path: `${path}.entity-id`, message: `unknown host "${d['entity-id']}": add it to "hosts"` });
  }
  const target = d.target;
  if (target !== undefined && target.type !== 'local' && target.type !== 'http') {
    issues.push({ path: `${path}.target.type`, message: `a host can run "local" or reach "http", not "${target.type}"` });
  }
  return issues;
}
