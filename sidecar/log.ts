/**
 * The sidecar's logger: the shared JSON-lines logger (`shared/log.ts`) writing to stderr, at the
 * level named by `SWITCHYARD_LOG_LEVEL` unless one is given.
 *
 * @module
 */
import { createLogger as createSharedLogger, parseLogLevel, type Logger, type LoggerOptions } from '../shared/log.ts';

export { redact, silentLogger, type LogFields, type Logger, type LoggerOptions, type LogLevel } from '../shared/log.ts';

export function createLogger(options: LoggerOptions = {}): Logger {
  return createSharedLogger({
    level: options.level ?? parseLogLevel(process.env.SWITCHYARD_LOG_LEVEL),
    write: options.write ?? ((line: string) => process.stderr.write(line + '\n')),
    ...(options.fields !== undefined ? { fields: options.fields } : {}),
  });
}
