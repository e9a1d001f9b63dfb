/**
 * Where the sidecar's audit lines go: stderr beside the structured logs, or appended to the file
 * `sidecar.json` names (created 0600, since audit lines name agents, tools and resources).
 * Synchronous writes: a line is on disk or on the stream before the call it records is answered.
 *
 * @module
 */
import { openSync, writeSync } from 'node:fs';
import { levelFilteredWriter, type AuditWrite } from '../../shared/audit/audit-log.ts';
import { wholeLineWriter } from '../../shared/audit/whole-line-writer.ts';
import { LocalError } from '../../shared/errors.ts';

/**
 * `file` when set (every line), else stderr at `logLevel`. A file that cannot be opened is refused
 * as a config problem of `configFile` (the file naming it), as `check` words one.
 */
export function auditWriter(file: string | undefined, logLevel: string, configFile: string): AuditWrite {
  if (file === undefined) return levelFilteredWriter((line) => void process.stderr.write(line + '\n'), logLevel);
  let fd: number;
  try {
    fd = openSync(file, 'a', 0o600);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new LocalError('invalid-config', `${configFile}: audit.file: cannot open "${file}": ${typeof code === 'string' ? code : String(error)}`, { cause: error });
  }
  return wholeLineWriter((bytes) => writeSync(fd, bytes));
}
