/**
 * Every config file a test writes, in one place: the worker config (agents, hosts, servers) and
 * the sidecar config dir (sidecar.json, the host credential, mcp-servers/, trust-profiles/).
 *
 * The host credential is a shared secret today (the sidecar reads `secret-file`, the worker holds
 * `secret-sha256`). It is created, written and turned into a worker host entry only here, so that
 * replacing it with a key pair changes this file and not the tests.
 *
 * @module
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A stdio (`command`) or HTTP (`url`) server entry, as in an mcp.json. */
export type ServerEntry = { command: string; args?: string[]; env?: Record<string, string>; cwd?: string } | { url: string; headers?: Record<string, string> };

/** What a sidecar presents to link as `entityId`, and what the worker checks it against. */
export interface HostCredential {
  entityId: string;
  /** The shared secret the sidecar presents (a rogue link test presents it by hand). */
  secret: string;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A random credential, recognisable in logs by its prefix. */
export const randomCredential = (what: string): string => `res-${what}-${randomBytes(12).toString('hex')}`;

/** A host credential for `entityId`: random unless a test needs a fixed one. */
export function hostCredential(entityId: string, secret: string = randomCredential(`${entityId}-secret`)): HostCredential {
  return { entityId, secret };
}

/** The worker config's `hosts[]` entry for a credential. */
export function workerHostEntry(host: HostCredential): { 'entity-id': string; 'secret-sha256': string } {
  return { 'entity-id': host.entityId, 'secret-sha256': sha256Hex(host.secret) };
}

/** Texts of a credential that must never reach a log, a page or the other side of a link. */
export function credentialTexts(host: HostCredential): string[] {
  return [host.secret];
}

/** The hex sha-256 a worker config stores for a bearer token (`token-sha256`, `admin-token-sha256`). */
export const tokenSha256 = (token: string): string => sha256Hex(token);

export interface AgentSpec {
  name: string;
  token: string;
  servers: string[];
  'trust-context'?: { 'trust-profile-ref': string; 'trust-profile-revision': string; containment?: 'required' | 'none' };
}

/** The worker config's `agents[]` entry for an agent with a bearer token. */
export function agentEntry(agent: AgentSpec): Record<string, unknown> {
  const { token, ...rest } = agent;
  return { name: rest.name, 'token-sha256': tokenSha256(token), servers: rest.servers, ...(rest['trust-context'] ? { 'trust-context': rest['trust-context'] } : {}) };
}

/** Writes `config` as `dir/worker.json` (0600) and returns its path. */
export function writeWorkerConfig(dir: string, config: unknown, name = 'worker.json'): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

export interface SidecarDirSpec {
  /** The worker's base URL. */
  worker: string;
  host: HostCredential;
  /** `mcp-servers/mcp.json` servers, by name. */
  servers?: Record<string, ServerEntry>;
  /** `trust-profiles/<ref>.json`, by reference. */
  profiles?: Record<string, unknown>;
  /** More sidecar.json keys (`trust-profile`, `allow-uncontained`, …). */
  sidecar?: Record<string, unknown>;
}

/** Writes a sidecar config dir: sidecar.json, the host credential (0600), mcp-servers/, trust-profiles/. */
export function writeSidecarDir(configDir: string, spec: SidecarDirSpec): void {
  for (const sub of ['mcp-servers', 'trust-profiles']) mkdirSync(join(configDir, sub), { recursive: true });
  if (spec.servers !== undefined) writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: spec.servers }));
  for (const [ref, profile] of Object.entries(spec.profiles ?? {})) writeFileSync(join(configDir, 'trust-profiles', `${ref}.json`), JSON.stringify(profile));
  writeFileSync(join(configDir, 'host.secret'), spec.host.secret + '\n', { mode: 0o600 });
  writeFileSync(join(configDir, 'sidecar.json'), JSON.stringify({ worker: spec.worker, 'entity-id': spec.host.entityId, 'secret-file': 'host.secret', ...spec.sidecar }));
}
