/**
 * Structured logging for the sidecar and CLI: one JSON object per line on stderr, because stdout
 * may belong to a protocol. Values of keys that look like secrets are replaced before writing.
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

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_KEY = /secret|token|password|authorization|cookie|credential|api[-_]?key/i;

export function redact(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_KEY.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
    else out[key] = value;
  }
  return out;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; stderr by default. Tests pass a collector. */
  write?: (line: string) => void;
  fields?: LogFields;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const envLevel = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.SWITCHYARD_LOG_LEVEL;
  const level: LogLevel = options.level ?? (envLevel && envLevel in ORDER ? (envLevel as LogLevel) : 'info');
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const base = options.fields ?? {};
  const log = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[lvl] < ORDER[level]) return;
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

/** A logger that drops everything, for tests that do not read logs. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });
