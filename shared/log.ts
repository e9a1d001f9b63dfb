/**
 * Structured logging for every part of Switchyard: one JSON object per line on the error stream
 * (stdout may belong to a protocol), through `console.error` by default, which Deno, Node and
 * Workers all route to their error log. Values of keys that look like secrets are replaced
 * before writing, nested ones too, and errors are reduced to name, message, code and reason.
 *
 * @module
 */
import { redactUrlsIn } from './url-redaction.ts';

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
/**
 * How deep `redact` looks for secret keys. Below it a value is not written at all: a secret there
 * would otherwise go out unseen, and nothing Switchyard logs on purpose nests that deep.
 */
const MAX_REDACT_DEPTH = 8;

/**
 * `fields` with the value of every secret-looking key, at any depth, replaced, and errors reduced
 * to name, message (URL credentials taken out), code and reason. Plain objects and arrays are
 * copied; other values are left to `JSON.stringify` (a Date keeps its `toJSON`).
 */
export function redact(fields: LogFields): LogFields {
  return redactObject(fields, 1);
}

function redactObject(fields: Record<string, unknown>, depth: number): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) out[key] = SECRET_KEY.test(key) ? '[redacted]' : redactValue(value, depth);
  return out;
}

function redactValue(value: unknown, depth: number): unknown {
  if (value instanceof Error) {
    const { code, reason } = value as { code?: unknown; reason?: unknown };
    return { name: value.name, message: redactUrlsIn(value.message), ...(code !== undefined ? { code } : {}), ...(reason !== undefined ? { reason } : {}) };
  }
  if (typeof value !== 'object' || value === null) return value;
  const plain = Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null;
  if (!plain) return value;
  if (depth >= MAX_REDACT_DEPTH) return '[too deep]';
  return Array.isArray(value) ? value.map((item) => redactValue(item, depth + 1)) : redactObject(value as Record<string, unknown>, depth + 1);
}

/** What every line starts with, which no field may replace: a `msg` field would forge the message, or an audit line. */
const LINE_HEAD = new Set(['time', 'level', 'msg']);

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
    const line: LogFields = { time: new Date().toISOString(), level: lvl, msg };
    // The logger's component names the process that wrote the line: a line's own field cannot move it.
    const own = fields !== undefined && 'component' in base && 'component' in fields ? { ...fields, component: base.component } : fields;
    for (const [key, value] of Object.entries(redact({ ...base, ...own }))) if (!LINE_HEAD.has(key)) line[key] = value;
    write(JSON.stringify(line));
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    child: (fields) => createLogger({ level, write, fields: { ...base, ...fields } }),
  };
}

/**
 * Reads a level name (e.g. from `SWITCHYARD_LOG_LEVEL`) in any case, `info` when absent or
 * unknown. Own keys only: `constructor` is `in` every object, and as a level it let everything
 * through, debug included.
 */
export function parseLogLevel(value: string | undefined): LogLevel {
  const name = value?.trim().toLowerCase();
  return name !== undefined && Object.hasOwn(LOG_LEVEL_ORDER, name) ? (name as LogLevel) : 'info';
}

/** A logger that drops everything, for tests that do not read logs. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });
