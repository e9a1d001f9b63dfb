/**
 * `DIR/sidecar.json`: how this workstation reaches its worker and proves who it is.
 *
 * ```json
 * {"worker": "http://127.0.0.1:8787", "entity-id": "alice-laptop", "secret-file": "host.secret"}
 * ```
 *
 * The secret lives in its own file (relative paths are relative to DIR) so the config can be
 * shared and checked without exposing the credential.
 *
 * @module
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { userInfo } from 'node:os';
import { z } from 'zod';
import { LocalError } from '../../shared/errors.ts';
import { EntityIdSchema } from '../../shared/names.ts';
import { parseWith } from '../../shared/validation.ts';
import { UserNameSchema } from './user-name.ts';

export const SidecarConfigSchema = z
  .strictObject({
    worker: z
      .string()
      .url('must be an absolute URL')
      .refine((u) => /^(https?|wss?):\/\//i.test(u), 'must be an http(s): or ws(s): URL')
      .describe('Base URL of the worker this sidecar links to'),
    'entity-id': EntityIdSchema.describe('This host\'s entity id, as listed under "hosts" in the worker config'),
    'secret-file': z.string().min(1).describe('File holding the host secret (relative to the config dir)'),
    user: UserNameSchema.optional()
      .describe('Selects users/<user>/mcp-servers; defaults to the OS user'),
  })
  .describe('Sidecar config (DIR/sidecar.json)');

export type SidecarConfigFile = z.infer<typeof SidecarConfigSchema>;

export interface SidecarConfig {
  configDir: string;
  worker: string;
  entityId: string;
  secret: string;
  user: string;
}

export function parseSidecarConfig(input: unknown): SidecarConfigFile {
  return parseWith(SidecarConfigSchema, input, 'sidecar config');
}

/** Reads `DIR/sidecar.json` and its secret file; flags given on the command line win. */
export function loadSidecarConfig(
  configDir: string,
  overrides: { worker?: string; entityId?: string; secretFile?: string } = {},
): SidecarConfig {
  const path = join(configDir, 'sidecar.json');
  let raw: unknown = {};
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ENOENT') throw new LocalError('invalid-config', `Cannot read sidecar config "${path}": ${(error as Error).message}`);
  }
  const merged = {
    ...(raw as object),
    ...(overrides.worker !== undefined ? { worker: overrides.worker } : {}),
    ...(overrides.entityId !== undefined ? { 'entity-id': overrides.entityId } : {}),
    ...(overrides.secretFile !== undefined ? { 'secret-file': overrides.secretFile } : {}),
  };
  const file = parseSidecarConfig(merged);
  const secretPath = isAbsolute(file['secret-file']) ? file['secret-file'] : join(configDir, file['secret-file']);
  let secret: string;
  try {
    secret = readFileSync(secretPath, 'utf8').trim();
    const mode = statSync(secretPath).mode & 0o077;
    if (mode !== 0) process.stderr.write(`warning: host secret file "${secretPath}" is readable by other users; run: chmod 600 "${secretPath}"\n`);
  } catch (error) {
    throw new LocalError('invalid-config', `Cannot read host secret file "${secretPath}": ${(error as { code?: string }).code ?? 'unreadable'}`);
  }
  if (secret.length < 16) throw new LocalError('invalid-config', `Host secret in "${secretPath}" is too short: use at least 16 characters`);
  return {
    configDir,
    worker: file.worker,
    entityId: file['entity-id'],
    secret,
    user: file.user ?? safeUserName(),
  };
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? 'default';
  }
}
