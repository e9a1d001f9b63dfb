/**
 * What both Deno entries share: the few Deno APIs they use (typed here, so `worker/` type-checks
 * without Deno's lib), and building the worker from the environment:
 *
 * - `SWITCHYARD_WORKER_CONFIG`: the config as JSON text, or
 * - `SWITCHYARD_WORKER_CONFIG_FILE`: a path to it;
 * - `SWITCHYARD_LOG_LEVEL`: debug, info (default), warn or error;
 * - `SWITCHYARD_STATE_DIR`: where the built-in OAuth server keeps its state (`oauth.built-in`
 *   needs it; Deno then needs `--allow-read` and `--allow-write` on it);
 * - `SWITCHYARD_OAUTH_KEYS`: the built-in OAuth server's keys, kept out of its state (`server-key.ts`);
 * - `SWITCHYARD_STOP_ON_STDIN_END=1`: stdin is the parent's lifeline (`deno-worker.ts`).
 *
 * Audit lines go to stderr at that level, or to the file the config's `audit.file` names
 * (relative to the config file's directory), which needs `--allow-write` for that file.
 *
 * A config error is printed as one `path: message` line per problem, then the process exits 2.
 *
 * @module
 */
import type { UpgradeWebSocket } from 'hono/ws';
import { composeWorker, type ComposedWorker } from '../../compose.ts';
import { parseWorkerConfigText, type WorkerConfig } from '../../config/worker-config.ts';
import { createWorkerLogger, parseLogLevel, type WorkerLogger } from '../../log.ts';
import { ValidationError } from '../../../shared/validation.ts';
import { describeFileProblems } from '../../../shared/file-problems-report.ts';
import { fileReadProblem, fileWriteProblem } from '../../../shared/file-read-problem.ts';
import { upgradeWebSocket } from './deno-websocket.ts';
import { levelFilteredWriter, type AuditWrite } from '../../../shared/audit/audit-log.ts';
import { reopeningFileWriter, type AuditFileSystem, type FileIdentity } from '../../../shared/audit/reopening-file-writer.ts';
import { openDenoOAuthStore, type DenoStateApi } from './deno-oauth-state.ts';
import { denoDocumentNetwork, type DenoNetApi } from './deno-document-network.ts';
import type { OAuthRuntime } from '../../app.ts';
import { watchDenoWorkerConfig } from './deno-config-watch.ts';
import { auditFileProblem, type PathKind } from '../../../shared/audit/audit-file-problem.ts';
import { parseServerKeys, SERVER_KEYS_ENV } from '../../auth/oauth/server-key.ts';

export interface DenoHttpServer {
  finished: Promise<void>;
  shutdown(): Promise<void>;
}

/** The slice of the `Deno` namespace the worker adapters use. */
export interface DenoRuntime extends DenoStateApi, DenoNetApi {
  env: { get(key: string): string | undefined };
  readTextFile(path: string): Promise<string>;
  serve(
    options: { hostname?: string; port?: number; onListen?: (addr: { hostname: string; port: number }) => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): DenoHttpServer;
  addSignalListener(signal: 'SIGTERM' | 'SIGINT', handler: () => void): void;
  exit(code?: number): never;
  openSync(path: string, options: { append: true; create: true; mode?: number }): DenoFile;
  statSync(path: string): DenoFileInfo;
  stderr: { writeSync(bytes: Uint8Array): number };
  stdin: { readable: ReadableStream<Uint8Array> };
}

/** `dev` and `ino` are null on Windows, where a moved file is not followed. */
interface DenoFileInfo {
  dev: number | null;
  ino: number | null;
  isDirectory: boolean;
  size: number;
  nlink: number | null;
}

interface DenoFile {
  writeSync(bytes: Uint8Array): number;
  statSync(): DenoFileInfo;
  truncateSync(length: number): void;
  close(): void;
}

export const deno = (globalThis as unknown as { Deno: DenoRuntime }).Deno;

/** The variables Deno would not let this worker read (`envOf`), in the order asked. */
export const deniedEnv = new Set<string>();

/**
 * An environment variable the worker reads. Deno may be told to let it read only some
 * (`--allow-env=A,B`): one it may not read is taken as unset and noted in `deniedEnv`, where Deno's
 * own `NotCapable` ended the start with an uncaught stack trace. The start says which it could not
 * read: in the log once it has one, and in the error when the config itself was among them.
 */
export function envOf(name: string): string | undefined {
  try {
    return deno.env.get(name);
  } catch (error) {
    if (!(error instanceof Error && (error.name === 'NotCapable' || error.name === 'PermissionDenied'))) throw error;
    deniedEnv.add(name);
    return undefined;
  }
}

/** Reads the config named by the environment (and the file it came from); exits 2 with every problem when it is invalid. */
export async function loadConfigFromEnv(): Promise<{ config: WorkerConfig; file?: { path: string; text: string } }> {
  const inline = envOf('SWITCHYARD_WORKER_CONFIG');
  const file = envOf('SWITCHYARD_WORKER_CONFIG_FILE');
  const source = inline !== undefined && inline !== '' ? 'SWITCHYARD_WORKER_CONFIG' : file !== undefined && file !== '' ? `"${file}"` : null;
  if (source === null) {
    const denied = ['SWITCHYARD_WORKER_CONFIG', 'SWITCHYARD_WORKER_CONFIG_FILE'].filter((name) => deniedEnv.has(name));
    if (denied.length > 0) console.error(`No worker config: Deno may not read ${denied.join(' or ')}: run it with --allow-env, or add ${denied.join(',')} to its --allow-env list`);
    else console.error('No worker config: set SWITCHYARD_WORKER_CONFIG (JSON) or SWITCHYARD_WORKER_CONFIG_FILE (path)');
    return deno.exit(2);
  }
  if (source === 'SWITCHYARD_WORKER_CONFIG' && file !== undefined && file !== '') {
    // Either would be a guess: the file's edits would go unseen, or the inline config be ignored.
    console.error(`Two worker configs: SWITCHYARD_WORKER_CONFIG and SWITCHYARD_WORKER_CONFIG_FILE ("${file}") are both set; unset one`);
    return deno.exit(2);
  }
  try {
    if (inline !== undefined && inline !== '') return { config: parseWorkerConfigText(inline, { runtime: 'edge' }) };
    const text = await deno.readTextFile(file!);
    return { config: parseWorkerConfigText(text, { runtime: 'edge' }), file: { path: file!, text } };
  } catch (error) {
    if (error instanceof ValidationError) {
      console.error(describeFileProblems(inline !== undefined && inline !== '' ? 'SWITCHYARD_WORKER_CONFIG' : file!, 'worker config', error.issues));
      // A path where the JSON goes: the one variable taken for the other.
      if (source === 'SWITCHYARD_WORKER_CONFIG' && !inline!.trimStart().startsWith('{')) console.error('SWITCHYARD_WORKER_CONFIG holds the config\'s JSON itself: for a file, set SWITCHYARD_WORKER_CONFIG_FILE to its path');
    } else {
      console.error(`Cannot read the worker config ${source}: ${fileReadProblem(error)}`);
    }
    return deno.exit(2);
  }
}

/**
 * Builds the worker for Deno: config from the environment, `/link` over Deno WebSockets. A config
 * file is watched and re-read on SIGHUP (`deno-config-watch.ts`); an inline config cannot change.
 */
export async function createDenoWorker(options: { listenPort?: () => number | undefined } = {}): Promise<{ worker: ComposedWorker; log: WorkerLogger }> {
  const { config, file } = await loadConfigFromEnv();
  const level = parseLogLevel(envOf('SWITCHYARD_LOG_LEVEL'));
  const log = createWorkerLogger({ level, write: writeStderrLine, fields: { component: 'worker' } });
  const auditWrite = denoAuditWriter(auditFilePath(config.audit?.file, envOf('SWITCHYARD_WORKER_CONFIG_FILE')), level, file?.path ?? 'SWITCHYARD_WORKER_CONFIG', log);
  const oauth = await oauthRuntime(config);
  if (deniedEnv.size > 0) log.warn('Environment variables Deno may not read, taken as unset: run it with --allow-env, or add them to its --allow-env list', { names: [...deniedEnv] });
  const worker = composeWorker({ config, log, auditWrite, upgradeWebSocket: upgradeWebSocket as unknown as UpgradeWebSocket<unknown, never>, ...(oauth !== undefined ? { oauth } : {}), ...options });
  if (file !== undefined) watchDenoWorkerConfig(worker, file.path, file.text, log, (auditFile) => auditFileProblem(auditFilePath(auditFile, file.path)!, denoPathKind));
  return { worker, log };
}

/** `audit.file` resolved against the config file's directory (the working directory for inline config). */
export function auditFilePath(file: string | undefined, configFile: string | undefined): string | undefined {
  if (file === undefined || file.startsWith('/') || configFile === undefined || configFile === '') return file;
  const dir = configFile.includes('/') ? configFile.slice(0, configFile.lastIndexOf('/') + 1) : '';
  return `${dir}${file}`;
}

/** Audit lines appended to `file` (created 0600), or on stderr at the log level; exits 2 when the file cannot be opened. */
function denoAuditWriter(file: string | undefined, level: string, configFile: string, log: WorkerLogger): AuditWrite {
  if (file === undefined) return levelFilteredWriter(writeStderrLine, level);
  try {
    return reopeningFileWriter(file, denoAuditFiles, { warn: (message, fields) => log.warn(message, fields) });
  } catch (error) {
    // The permission hint only where permission is what failed: a missing folder is not (review s22).
    const denied = error instanceof Error && (error.name === 'PermissionDenied' || error.name === 'NotCapable');
    console.error(`${configFile}: audit.file: cannot open "${file}": ${fileWriteProblem(error)}${denied ? ' (run Deno with --allow-write for it)' : ''}`);
    return deno.exit(2);
  }
}

const denoAuditFiles: AuditFileSystem<DenoFile> = {
  open: (path) => deno.openSync(path, { append: true, create: true, mode: 0o600 }),
  identify: (handle) => identity(handle.statSync()),
  identifyPath: (path) => {
    try {
      return identity(deno.statSync(path));
    } catch (error) {
      if (error instanceof Error && error.name === 'NotFound') return undefined;
      throw error;
    }
  },
  write: (handle, bytes) => handle.writeSync(bytes),
  dropTail: (handle, bytes) => handle.truncateSync(handle.statSync().size - bytes),
  close: (handle) => handle.close(),
  now: () => performance.now(),
};

// Without an inode (Windows) every look finds the same file: the open one is kept.
const identity = (info: DenoFileInfo): FileIdentity => ({ dev: info.dev ?? 0, ino: info.ino ?? 0, ...(typeof info.nlink === 'number' ? { links: info.nlink } : {}) });

const encoder = new TextEncoder();

/**
 * One log or audit line on stderr, written directly: `console.error` formats its argument and
 * goes through Deno's console machinery, which cost 10-12 µs a line against 3 µs for this, and
 * every agent call writes an audit line (issue 17).
 */
export function writeStderrLine(line: string): void {
  writeAll(deno.stderr, encoder.encode(line + '\n'));
}

/** `writeSync` may write part of the bytes (a full pipe): the rest follows, so a line is never cut. */
function writeAll(target: { writeSync(bytes: Uint8Array): number }, bytes: Uint8Array): void {
  let written = 0;
  while (written < bytes.length) written += target.writeSync(written === 0 ? bytes : bytes.subarray(written));
}

/** The built-in OAuth server's store in `SWITCHYARD_STATE_DIR`; exits 2 when it is needed and missing or unreadable. */
async function oauthRuntime(config: WorkerConfig): Promise<OAuthRuntime | undefined> {
  if (config.oauth === undefined) return undefined;
  const metadataDocuments = { network: denoDocumentNetwork(deno) };
  if (config.oauth['built-in'] === undefined) return { metadataDocuments };
  const stateDir = envOf('SWITCHYARD_STATE_DIR');
  if (stateDir === undefined || stateDir === '') {
    console.error('oauth.built-in needs a state dir for clients, grants and tokens: set SWITCHYARD_STATE_DIR (and allow Deno to read and write it)');
    return deno.exit(2);
  }
  let keys: readonly string[] | undefined;
  try {
    keys = parseServerKeys(envOf(SERVER_KEYS_ENV));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return deno.exit(2);
  }
  try {
    return { store: await openDenoOAuthStore(deno, stateDir), metadataDocuments, ...(keys !== undefined ? { keys } : {}) };
  } catch (error) {
    console.error(`Cannot open the OAuth state in "${stateDir}": ${error instanceof Error ? error.message : String(error)}`);
    return deno.exit(2);
  }
}

/** What is at `path` on this machine (`PathKind`): `unknown` past this process's read permission. */
function denoPathKind(path: string): PathKind {
  try {
    return deno.statSync(path).isDirectory ? 'folder' : 'other';
  } catch (error) {
    return error instanceof Error && error.name === 'NotFound' ? undefined : 'unknown';
  }
}
