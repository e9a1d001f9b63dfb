/**
 * Where the sidecar's audit lines go: stderr beside the structured logs, or appended to the file
 * `sidecar.json` names (created 0600, since audit lines name agents, tools and resources).
 * Synchronous writes: a line is on disk or on the stream before the call it records is answered.
 * The file follows its path when it is moved (`reopening-file-writer.ts`), so logrotate's default
 * move-and-create works as well as `copytruncate`.
 *
 * @module
 */
import { closeSync, fstatSync, ftruncateSync, openSync, statSync, writeSync } from 'node:fs';
import { levelFilteredWriter, type AuditWrite } from '../../shared/audit/audit-log.ts';
import { reopeningFileWriter, type AuditFileSystem } from '../../shared/audit/reopening-file-writer.ts';
import { LocalError } from '../../shared/errors.ts';
import { fileWriteProblem } from '../../shared/file-read-problem.ts';

/**
 * `file` when set (every line), else stderr at `logLevel`. A file that cannot be opened is refused
 * as a config problem of `configFile` (the file naming it), as `check` words one.
 */
export function auditWriter(file: string | undefined, logLevel: string, configFile: string, log?: { warn(message: string, fields: Record<string, unknown>): void }): AuditWrite {
  if (file === undefined) return levelFilteredWriter((line) => void process.stderr.write(line + '\n'), logLevel);
  try {
    return reopeningFileWriter(file, nodeAuditFiles, log === undefined ? {} : { warn: (message, fields) => log.warn(message, fields) });
  } catch (error) {
    throw new LocalError('invalid-config', `${configFile}: audit.file: cannot open "${file}": ${fileWriteProblem(error)}`, { cause: error });
  }
}

/** Node's file calls for {@link reopeningFileWriter}. */
export const nodeAuditFiles: AuditFileSystem<number> = {
  open: (path) => openSync(path, 'a', 0o600),
  identify: (fd) => identity(fstatSync(fd)),
  identifyPath: (path) => {
    const stats = statSync(path, { throwIfNoEntry: false });
    return stats === undefined ? undefined : identity(stats);
  },
  write: (fd, bytes) => writeSync(fd, bytes),
  dropTail: (fd, bytes) => ftruncateSync(fd, fstatSync(fd).size - bytes),
  close: (fd) => closeSync(fd),
  now: () => performance.now(),
};

const identity = (stats: { dev: number; ino: number; nlink: number }) => ({ dev: stats.dev, ino: stats.ino, links: stats.nlink });
