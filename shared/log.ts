/**
 * Structured logging for every part of Switchyard: one JSON object per line on the error stream
 * (stdout may belong to a protocol), through `console.error` by default, which Deno, Node and
 * Workers all route to their error log. Values of keys that look like secrets are replaced
 * before writing, and errors are reduced to name, message, code and reason.
 *
 * @module
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

/** True for the 1st, 10th, 100th, … occurrence of an event: logging only those, a flood of it cannot flood the log. */
export function isLogWorthy(count: number): boolean {
  return /^10*$/.test(String(count));
}

/** Levels by rank: a logger at a level writes lines of that rank and above. */
export const LOG_LEVEL_ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_KEY = /secret|token|password|authorization|cookie|credential|api[-_]?key/i;

export function redact(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_KEY.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) {
      const { code, reason } = value as { code?: unknown; reason?: unknown };
      out[key] = { name: value.name, message: value.message, ...(code !== undefined ? { code } : {}), ...(reason !== undefined ? { reason } : {}) };
    } else out[key] = value;
  }
  return out;
}

export interface LoggerOptions {
  /** Lowest level written; `info` by default. */
  level?: LogLevel;
  /** Where lines go; `console.error` by default. Tests pass a collector. */
  write?: (line: string) => void;
  fields?: LogFields;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => console.error(line));
  const base = options.fields ?? {};
  const log = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (LOG_LEVEL_ORDER[lvl] < LOG_LEVEL_ORDER[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...redact({ ...base, ...fields }) }));
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    child: (fields) => createLogger({ level, write, fields: { ...base, ...fields } }),
  };
}

/** Reads a level name (e.g. from `SWITCHYARD_LOG_LEVEL`), `info` when absent or unknown. */
export function parseLogLevel(value: string | undefined): LogLevel {
  return value !== undefined && value in LOG_LEVEL_ORDER ? (value as LogLevel) : 'info';
}

/** A logger that drops everything, for tests that do not read logs. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });
