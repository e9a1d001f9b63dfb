/**
 * Structured logging for the worker: one JSON object per line through `console.error`, which
 * every runtime the worker targets (Deno, Node, Workers) routes to its error log. Keys that look
 * like secrets are redacted before writing, because the worker handles bearer tokens.
 *
 * The sidecar has its own logger; `worker/` never imports `sidecar/`, so this is a small twin.
 *
 * @module
 */

export type WorkerLogLevel = 'debug' | 'info' | 'warn' | 'error';
export type WorkerLogFields = Record<string, unknown>;

export interface WorkerLogger {
  debug(msg: string, fields?: WorkerLogFields): void;
  info(msg: string, fields?: WorkerLogFields): void;
  warn(msg: string, fields?: WorkerLogFields): void;
  error(msg: string, fields?: WorkerLogFields): void;
  child(fields: WorkerLogFields): WorkerLogger;
}

const ORDER: Record<WorkerLogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_KEY = /secret|token|password|authorization|cookie|credential|api[-_]?key/i;

function redact(fields: WorkerLogFields): WorkerLogFields {
  const out: WorkerLogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_KEY.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message, reason: (value as { reason?: unknown }).reason };
    else out[key] = value;
  }
  return out;
}

export interface WorkerLoggerOptions {
  /** Lowest level written; `info` by default. */
  level?: WorkerLogLevel;
  /** Where lines go; `console.error` by default. Tests pass a collector. */
  write?: (line: string) => void;
  fields?: WorkerLogFields;
}

export function createWorkerLogger(options: WorkerLoggerOptions = {}): WorkerLogger {
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => console.error(line));
  const base = options.fields ?? {};
  const log = (lvl: WorkerLogLevel, msg: string, fields?: WorkerLogFields) => {
    if (ORDER[lvl] < ORDER[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...redact({ ...base, ...fields }) }));
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    child: (fields) => createWorkerLogger({ level, write, fields: { ...base, ...fields } }),
  };
}

/** Reads a level name (e.g. from `SWITCHYARD_LOG_LEVEL`), `info` when absent or unknown. */
export function parseLogLevel(value: string | undefined): WorkerLogLevel {
  return value !== undefined && value in ORDER ? (value as WorkerLogLevel) : 'info';
}

/** A logger that drops everything, for tests that do not read logs. */
export const silentWorkerLogger: WorkerLogger = createWorkerLogger({ level: 'error', write: () => {} });
