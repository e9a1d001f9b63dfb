/**
 * Every config file a test writes, in one place: the worker config (agents, hosts, servers) and
 * the sidecar config dir (sidecar.json, the host key, mcp-servers/, trust-profiles/).
 *
 * The host credential is an Ed25519 key pair (DESIGN §5): the sidecar keeps the private key in
 * `DIR/host.key` (PKCS#8 PEM, 0600, as `switchyard sidecar init` writes it), the worker lists the
 * public key in `hosts[].public-key`. Keys are made, written and turned into a worker host entry
 * only here.
 *
 * @module
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatPublicKey } from '../../shared/link/link-identity.ts';
import { signLinkStatement, type LinkSignable } from '../../shared/link/link-upgrade-proof.ts';
import { randomEd25519Pkcs8 } from '../../sidecar/link/ed25519-seed.ts';

/** A stdio (`command`) or HTTP (`url`) server entry, as in an mcp.json. */
export type ServerEntry = { command: string; args?: string[]; env?: Record<string, string>; cwd?: string } | { url: string; headers?: Record<string, string> };

/** What a sidecar presents to link as `entityId`, and what the worker checks it against. */
export interface HostCredential {
  entityId: string;
  /** The private key as `host.key` holds it (PKCS#8 PEM); a rogue link test signs with it by hand. */
  privateKeyPem: string;
  /** `ed25519:<base64url>`: the worker config's `hosts[].public-key`. */
  publicKey: string;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A random credential, recognisable in logs by its prefix. */
export const randomCredential = (what: string): string => `res-${what}-${randomBytes(12).toString('hex')}`;

/** A fresh key pair for host `entityId`, made from a random seed as the sidecar makes its own (`ed25519-seed.ts` says why). */
export function hostCredential(entityId: string): HostCredential {
  const privateKey = createPrivateKey({ key: Buffer.from(randomEd25519Pkcs8()), format: 'der', type: 'pkcs8' });
  const { x } = createPublicKey(privateKey).export({ format: 'jwk' });
  return { entityId, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey: formatPublicKey(new Uint8Array(Buffer.from(x ?? '', 'base64url'))) };
}

/** The worker config's `hosts[]` entry for a credential. */
export function workerHostEntry(host: HostCredential): { 'entity-id': string; 'public-key': string } {
  return { 'entity-id': host.entityId, 'public-key': host.publicKey };
}

/** Signs link proofs (upgrade and challenge) with the host's private key, as its sidecar would (for rogue and replay tests). */
export async function hostSigner(host: HostCredential): Promise<(fields: LinkSignable) => Promise<string>> {
  const der = Buffer.from(host.privateKeyPem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64');
  const key = await crypto.subtle.importKey('pkcs8', der, { name: 'Ed25519' }, false, ['sign']);
  return (fields) => signLinkStatement(key, fields);
}

/** Texts of a credential that must never reach a log, a page or the other side of a link. */
export function credentialTexts(host: HostCredential): string[] {
  const body = host.privateKeyPem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  // The PEM's base64 and the raw private scalar: either would hand over the key.
  const der = Buffer.from(body, 'base64');
  return [body, der.subarray(der.length - 32).toString('base64url'), der.subarray(der.length - 32).toString('base64')];
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
  /** More sidecar.json keys (`trust-profile`, `allow-uncontained`, …); `allow-uncontained` is true unless given. */
  sidecar?: Record<string, unknown>;
}

/** Writes a sidecar config dir: sidecar.json, the host key (0600), mcp-servers/, trust-profiles/. */
export function writeSidecarDir(configDir: string, spec: SidecarDirSpec): void {
  for (const sub of ['mcp-servers', 'trust-profiles']) mkdirSync(join(configDir, sub), { recursive: true });
  if (spec.servers !== undefined) writeFileSync(join(configDir, 'mcp-servers', 'mcp.json'), JSON.stringify({ mcpServers: spec.servers }));
  for (const [ref, profile] of Object.entries(spec.profiles ?? {})) writeFileSync(join(configDir, 'trust-profiles', `${ref}.json`), JSON.stringify(profile));
  writeFileSync(join(configDir, 'host.key'), spec.host.privateKeyPem, { mode: 0o600 });
  // Test hosts serve unconstrained fixture servers; a test about the host floor sets its own keys.
  // They keep no warm pool, so each session's processes are its own to count; the pool's tests ask for one.
  writeFileSync(join(configDir, 'sidecar.json'), JSON.stringify({ worker: spec.worker, 'entity-id': spec.host.entityId, 'allow-uncontained': true, 'warm-pool': { size: 0 }, ...spec.sidecar }));
}
