/**
 * The sidecar's logger: the shared JSON-lines logger (`shared/log.ts`) writing to stderr, at the
 * level named by `SWITCHYARD_LOG_LEVEL` unless one is given.
 *
 * @module
 */
import { createLogger as createSharedLogger, LOG_LEVEL_ORDER as ORDER, parseLogLevel, type LogFields, type Logger, type LoggerOptions, type LogLevel } from '../shared/log.ts';

export { redact, silentLogger, type LogFields, type Logger, type LoggerOptions, type LogLevel } from '../shared/log.ts';

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? parseLogLevel(process.env.SWITCHYARD_LOG_LEVEL);
  const logger = createSharedLogger({ level, write: options.write ?? ((line: string) => process.stderr.write(line + '\n')), ...(options.fields !== undefined ? { fields: options.fields } : {}) });
  levels.set(logger, level);
  return logger;
}

/** The level of each logger made here, so a deferred child of one builds no fields for a line it would drop. */
const levels = new WeakMap<Logger, LogLevel>();

/**
 * `parent.child(fields)`, built only as far as it writes: each line is the one the child would
 * write (the parent's fields, then `fields`, then the line's own, in that order), passed to the
 * parent. A modern request's host handler takes a logger per request and seldom writes with it,
 * and a child of the shared logger, five closures and a copy of its fields, was about 13 µs of
 * the sidecar's CPU a request (issue 17).
 */
export function deferredChild(parent: Logger, fields: LogFields): Logger {
  return new DeferredChild(parent, fields);
}

class DeferredChild implements Logger {
  readonly #parent: Logger;
  readonly #fields: LogFields;

  constructor(parent: Logger, fields: LogFields) {
    this.#parent = parent;
    this.#fields = fields;
  }

  debug(msg: string, fields?: LogFields): void {
    if (this.#writes('debug')) this.#parent.debug(msg, this.#with(fields));
  }

  info(msg: string, fields?: LogFields): void {
    if (this.#writes('info')) this.#parent.info(msg, this.#with(fields));
  }

  warn(msg: string, fields?: LogFields): void {
    if (this.#writes('warn')) this.#parent.warn(msg, this.#with(fields));
  }

  error(msg: string, fields?: LogFields): void {
    if (this.#writes('error')) this.#parent.error(msg, this.#with(fields));
  }

  child(fields: LogFields): Logger {
    return new DeferredChild(this.#parent, { ...this.#fields, ...fields });
  }

  /** False only when the parent is known to drop lines of `level`. */
  #writes(level: LogLevel): boolean {
    const at = levels.get(this.#parent);
    return at === undefined || ORDER[level] >= ORDER[at];
  }

  #with(fields: LogFields | undefined): LogFields {
    return fields === undefined ? this.#fields : { ...this.#fields, ...fields };
  }
}
