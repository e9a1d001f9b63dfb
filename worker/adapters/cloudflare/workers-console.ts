/**
 * Log and audit lines on Workers, each through the console method of its level: Workers Logs
 * (and `wrangler dev`) take a line's level from the method that wrote it, so lines all written
 * with `console.error`, as the shared logger writes them for Deno's stderr, made every "Host
 * linked" and every allowed call an error, and error filters and alerts fire on ordinary traffic.
 * `debug` and `info` go to `console.log`, `warn` to `console.warn`, `error` to `console.error`.
 *
 * @module
 */
import { type AuditLevel, type AuditWrite, levelFilteredWriter } from '../../../shared/audit/audit-log.ts';
import { createWorkerLogger, type WorkerLogFields, type WorkerLogger, type WorkerLogLevel } from '../../log.ts';

/** The console, as far as these lines use it; tests pass a recorder. */
export interface WorkersConsole {
  log(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

export function workersLogger(level: WorkerLogLevel, out: WorkersConsole = console, fields: WorkerLogFields = {}): WorkerLogger {
  const through = (write: (line: string) => void) => createWorkerLogger({ level, write, fields });
  const ordinary = through((line) => out.log(line));
  const warnings = through((line) => out.warn(line));
  const errors = through((line) => out.error(line));
  return {
    debug: ordinary.debug,
    info: ordinary.info,
    warn: warnings.warn,
    error: errors.error,
    child: (more) => workersLogger(level, out, { ...fields, ...more }),
  };
}

/** Audit lines at the log level: an allowed call is `info`, a refusal `warn`. */
export function workersAuditWrite(level: string, out: WorkersConsole = console): AuditWrite {
  const drops = levelFilteredWriter(() => {}, level).drops ?? (() => false);
  return Object.assign(
    (line: string, lineLevel: AuditLevel) => {
      if (drops(lineLevel)) return;
      if (lineLevel === 'warn') out.warn(line);
      else out.log(line);
    },
    { drops },
  );
}
