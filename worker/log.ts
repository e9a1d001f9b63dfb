/**
 * The worker's names for the shared logger (`shared/log.ts`): JSON lines through `console.error`,
 * secrets redacted.
 *
 * @module
 */
export {
  createLogger as createWorkerLogger,
  parseLogLevel,
  silentLogger as silentWorkerLogger,
  type LogFields as WorkerLogFields,
  type Logger as WorkerLogger,
  type LoggerOptions as WorkerLoggerOptions,
  type LogLevel as WorkerLogLevel,
} from '../shared/log.ts';
