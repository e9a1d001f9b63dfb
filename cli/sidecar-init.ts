/**
 * `switchyard sidecar init --config-dir DIR --worker URL --entity-id ID [--force]`: sets up a
 * workstation. Writes `DIR/sidecar.json`, creates the host's Ed25519 key (`DIR/host.key`, mode
 * 0600) and prints the host line (`host-line.ts`): the `switchyard host add` command that adds
 * this host to the worker config, ready to paste on the worker's machine.
 *
 * Safe to run again: an existing key is never overwritten (a new key is a new identity, which
 * every worker would have to learn; delete the file to mean that), and it prints the entry again.
 * An existing sidecar.json naming another worker or entity id is changed only with `--force`,
 * which keeps its other keys; the `secret-file` of a config from before key pairs is dropped.
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from './json-file.ts';
import { isAbsolute, join } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalError } from '../shared/errors.ts';
import { parseSidecarConfig } from '../sidecar/config/sidecar-config.ts';
import { DEFAULT_KEY_FILE, loadOrCreateHostKey } from '../sidecar/link/host-key.ts';
import { describeHostLine, readHostLine } from './host-line.ts';
import { configDirFrom } from './sidecar-command.ts';
import { FULL_CLI, shellWord, type Program } from './program.ts';

export async function runInitCommand(argv: string[], program: Program = FULL_CLI): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'config-dir': { type: 'string' }, worker: { type: 'string' }, 'entity-id': { type: 'string' }, force: { type: 'boolean' } },
  });
  const dir = configDirFrom(values, program);
  const { worker, 'entity-id': entityId } = values;
  if (worker === undefined || entityId === undefined) {
    throw new LocalError('usage', `Missing --worker URL or --entity-id ID: ${program.run} sidecar init --config-dir DIR --worker URL --entity-id ID`);
  }
  parseSidecarConfig({ worker, 'entity-id': entityId }); // the same checks as the sidecar's, before anything is written

  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const sub of ['mcp-servers', 'trust-profiles']) mkdirSync(join(dir, sub), { recursive: true });
  const configPath = join(dir, 'sidecar.json');
  const existing = readExisting(configPath);
  let configNote: string;
  if (existing === null) {
    writeFileAtomic(configPath, JSON.stringify({ worker, 'entity-id': entityId }, null, 2) + '\n');
    configNote = `Wrote ${configPath}`;
  } else {
    // A config from before key pairs names a secret file; the key replaces it.
    const { 'secret-file': secretFile, ...kept } = existing;
    const same = existing.worker === worker && existing['entity-id'] === entityId;
    if (!same && values.force !== true) {
      throw new LocalError(
        'usage',
        `${configPath} already exists for worker ${JSON.stringify(existing.worker)} as ${JSON.stringify(existing['entity-id'])}: pass --force to point it at ${worker} as "${entityId}" (its other keys and the host key are kept)`,
      );
    }
    if (same && secretFile === undefined) {
      configNote = `Kept ${configPath}: it already names this worker and entity id`;
    } else {
      // Whole or not at all: a crash mid-write under --force must not leave a truncated config.
      writeFileAtomic(configPath, JSON.stringify(parseSidecarConfig({ ...kept, worker, 'entity-id': entityId }), null, 2) + '\n');
      configNote = `Updated ${configPath} (other keys kept${secretFile === undefined ? '' : '; "secret-file" dropped: the host key replaces the shared secret'})`;
    }
  }

  const keyName = typeof existing?.['key-file'] === 'string' ? existing['key-file'] : DEFAULT_KEY_FILE;
  const keyPath = isAbsolute(keyName) ? keyName : join(dir, keyName);
  const { created } = await loadOrCreateHostKey(keyPath);
  const { line, skipped } = await readHostLine(dir);
  process.stdout.write(
    [
      configNote,
      created
        ? `Created the host key ${keyPath} (Ed25519, mode 0600): it stays on this machine, and no sandbox may read it`
        : `Kept the host key ${keyPath}: an existing key is never overwritten`,
      '',
      ...describeHostLine(line, skipped),
      '',
      `Configure servers in ${join(dir, 'mcp-servers', 'mcp.json')}, then run: ${program.run} sidecar --config-dir ${shellWord(dir)}`,
      '',
    ].join('\n'),
  );
  return 0;
}

function readExisting(path: string): Record<string, unknown> | null {
  if (!existsSync(path)) return null;
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Reported below like any other unusable file.
  }
  throw new LocalError('invalid-config', `${path} exists but is not a JSON object: fix or remove it, then run init again`);
}
