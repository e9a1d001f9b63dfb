/**
 * The files `switchyard start` generates afresh on every start (`worker.json`, the sidecar's
 * `sidecar.json`, `mcp-servers/mcp.json` and `trust-profiles/demo.json`), written without eating
 * a user's edits.
 * Live reload makes these files look like the place to change the quick start, so people edit
 * them; the next start must not lose that work silently.
 *
 * Start records the sha-256 of each text it writes in `<state>/generated.json`. A file that still
 * holds what start last wrote is replaced quietly, whatever changed since (another HOST, another
 * Node); a file that holds anything else, an edit or a broken one, is first renamed to
 * `FILE.previous` (replacing an older one), and one line on stderr says so and how to run a config
 * of one's own. Without a record (a state dir from before it) any difference counts as an edit.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync } from 'node:fs';
import { writeFileAtomic } from './json-file.ts';
import { join, relative } from 'node:path';
import { jsonFileText } from './state-dir.ts';

const RECORD = 'generated.json';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function readRecord(stateDir: string): Record<string, string> {
  try {
    const value: unknown = JSON.parse(readFileSync(join(stateDir, RECORD), 'utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, string>) : {};
  } catch {
    return {}; // none yet, or unreadable: every file then counts as possibly edited
  }
}

/** The file's text; `undefined` when there is none to keep (missing, or not a readable file: the write then says why). */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether `path` still holds what start last wrote there (no edit since). */
export function isAsGenerated(stateDir: string, path: string): boolean {
  const existing = readText(path);
  return existing !== undefined && sha256(existing) === readRecord(stateDir)[relative(stateDir, path)];
}

/**
 * Writes `value` as JSON to `path`, a file start owns under `stateDir`; an edited copy is kept as
 * `path.previous` and reported on stderr.
 *
 * @returns Where the edited copy went, or `undefined` when there was none to keep.
 */
export function writeGeneratedJson(stateDir: string, path: string, value: unknown, mode = 0o644): string | undefined {
  const text = jsonFileText(value);
  const record = readRecord(stateDir);
  const key = relative(stateDir, path);
  const existing = readText(path);
  let kept: string | undefined;
  if (existing !== undefined && existing !== text && sha256(existing) !== record[key]) {
    kept = `${path}.previous`;
    renameSync(path, kept);
    process.stderr.write(
      `note: ${path} had changed since start wrote it: your copy is kept as ${kept}, and the file regenerated ` +
        '(start rewrites it on every start; to run an edited config, use switchyard worker and switchyard sidecar, README: "Deploying")\n',
    );
  }
  // Whole or not at all: a running worker or sidecar watching it must never read half a file.
  writeFileAtomic(path, text, mode);
  // The record too: a torn one would count every generated file as edited on the next start.
  writeFileAtomic(join(stateDir, RECORD), jsonFileText({ ...record, [key]: sha256(text) }));
  return kept;
}
