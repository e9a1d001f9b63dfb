/**
 * The host line: the one line a workstation prints (`sidecar init`, `sidecar host-entry`) and the
 * worker's machine pastes (`switchyard host add`). It is the host's `hosts` entry (entity id and
 * public key) plus what the worker config needs from this host and cannot know alone: the
 * servers it runs (by name) and the current revision of each trust profile it has.
 *
 * Nothing in it is secret: a public key, names, and policy digests the worker config holds
 * anyway. It is printed as a complete command, JSON in single quotes, which is safe because every
 * field is drawn from a charset without quotes (names, base64url, hex).
 *
 * @module
 */
import { join } from 'node:path';
import * as z from '../shared/zod.ts';
import { LocalError } from '../shared/errors.ts';
import { PublicKeySchema } from '../shared/link/link-identity.ts';
import { EntityIdSchema, ProfileRefSchema, RevisionSchema, ServerNameSchema } from '../shared/names.ts';
import { issuesFromZod, ValidationError } from '../shared/validation.ts';
import { loadSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { loadHostKey } from '../sidecar/link/host-key.ts';
import { TrustProfileStore } from '../sidecar/trust/profile-store.ts';
import { hostServers } from './host-servers.ts';

/** The package's bin as `npx` runs it from anywhere once published. */
export const PACKAGE_BIN = 'switchyard-mcp';

export const HostLineSchema = z.strictObject({
  'entity-id': EntityIdSchema,
  'public-key': PublicKeySchema,
  'servers': z.optional(z.array(ServerNameSchema).check(z.maxLength(1000))),
  'trust-profiles': z.optional(z.record(ProfileRefSchema, RevisionSchema)),
});

export type HostLine = z.infer<typeof HostLineSchema>;

/** Parses a pasted host line; a `ValidationError` names each bad field. */
export function parseHostLine(text: string): HostLine {
  let json: unknown;
  try {
    json = JSON.parse(text.trim());
  } catch (error) {
    throw new LocalError('invalid-input', `Invalid host line: not JSON (${(error as Error).message}): paste the whole '{…}' that sidecar host-entry printed`);
  }
  const parsed = HostLineSchema.safeParse(json);
  if (!parsed.success) throw new ValidationError('host line', issuesFromZod(parsed.error));
  return parsed.data;
}

/** Each trust profile of a config dir by its current revision, as a host line reports them; those that do not resolve are named in `skipped`. */
export async function profileRevisions(dir: string): Promise<{ profiles: Record<string, string>; skipped: string[] }> {
  const skipped: string[] = [];
  const profiles: Record<string, string> = {};
  for (const entry of await new TrustProfileStore(join(dir, 'trust-profiles')).list()) {
    if ('error' in entry) skipped.push(`${entry.ref}: ${entry.error}`);
    else profiles[entry.ref] = entry.revision;
  }
  return { profiles, skipped };
}

/**
 * This host's line, read from its config dir as the sidecar reads it. What had to be left out is
 * named in `skipped`, each a sentence: a trust profile that does not resolve, and the servers of an
 * `mcp.json` that cannot be read, which would otherwise vanish from the line without a word (the
 * worker then says only that the host does not define them).
 */
export async function readHostLine(dir: string): Promise<{ line: HostLine; skipped: string[] }> {
  const config = loadSidecarConfig(dir);
  const key = await loadHostKey(config.keyFile);
  const read = hostServers(dir, config.entityId, config.user);
  const servers = [...read.servers.keys()].sort();
  const { profiles, skipped: unresolved } = await profileRevisions(dir);
  const skipped = [
    ...read.problems.map((p) => `Left out every server of ${p.file}, which the sidecar cannot read either: ${p.message}`),
    ...unresolved.map((s) => `Left out trust profile ${s}`),
  ];
  const line: HostLine = {
    'entity-id': config.entityId,
    'public-key': key.publicKey,
    ...(servers.length > 0 ? { servers } : {}),
    ...(Object.keys(profiles).length > 0 ? { 'trust-profiles': profiles } : {}),
  };
  return { line, skipped };
}

/**
 * The command that adds `line` to a worker config, ready to paste on the worker's machine. `npx
 * --no` runs only a copy installed there and never downloads one: until the package is on npm,
 * whatever someone else published under its name would otherwise run on the worker's machine.
 */
export function hostAddCommand(line: HostLine): string {
  return `npx --no ${PACKAGE_BIN} host add --config worker.json '${JSON.stringify(line)}'`;
}

/** What `sidecar init` and `sidecar host-entry` print about the line. */
export function describeHostLine(line: HostLine, skipped: readonly string[]): string[] {
  return [
    'Add this host to the worker: on the worker\'s machine, run this one line (with your worker config\'s path):',
    '',
    `  ${hostAddCommand(line)}`,
    '',
    `It holds the "hosts" entry (the public key only), the servers this host runs (${line.servers?.join(', ') ?? 'none yet'}) and the revision of each trust profile (${Object.keys(line['trust-profiles'] ?? {}).join(', ') || 'none yet'}).`,
    ...skipped,
    'After changing servers or profiles here, run `sidecar host-entry --config-dir DIR` and add the new line again.',
  ];
}
