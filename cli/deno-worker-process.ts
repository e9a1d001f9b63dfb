/**
 * Runs the worker under the real Deno binary as a child process and waits until it listens.
 * Shared by `switchyard worker` and `switchyard start`; Deno gets only the permissions the worker
 * needs: network, environment, reading its config file and sources, and its state dir when given.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { LocalError } from '../shared/errors.ts';
import { spawnMasked } from '../sidecar/process/masked-spawn.ts';
import { denoBinaryPath, packageRoot } from './deno-binary.ts';

export interface DenoWorkerProcess {
  child: ChildProcess;
  /**
   * The worker's base URL once it listens. Rejects when Deno exits or the start times out first;
   * never settles once `stop()` was asked for before then: the caller chose the end.
   */
  listening: Promise<string>;
  /** Resolves with the exit code once Deno has exited. */
  exited: Promise<number>;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it has exited. */
  stop(graceMs?: number): Promise<number>;
}

export interface DenoWorkerOptions {
  configFile: string;
  host?: string;
  port?: number;
  /** Where Deno's own stderr goes (its logs); the parent's stderr by default. */
  stderr?: 'inherit' | 'pipe';
  env?: Record<string, string>;
  startTimeoutMs?: number;
  /** Where the worker keeps state (the built-in OAuth server's file); Deno may read and write only there besides its sources. */
  stateDir?: string;
}

/**
 * The Deno behaviour the worker is written for, whatever starts it. `request.signal` is read only
 * to learn that an agent went away before its answer (a modern request, a listen stream); Deno's
 * legacy behaviour also aborts it after every answer delivered, and prints a warning about that at
 * the first request (on stderr, where a user reads it as the worker's own).
 */
export const DENO_WORKER_RUNTIME_FLAGS: readonly string[] = ['--unstable-no-legacy-abort'];

/**
 * The `deno run` arguments of the worker: network, environment, and reads of its config and
 * state only. The worker faces the network, and beside its code may lie a host's key (the quick
 * start keeps its sidecar's in the same folder); Deno loads modules without read permission.
 */
export function denoWorkerArgs(options: Pick<DenoWorkerOptions, 'configFile' | 'stateDir'>, root: string): string[] {
  // A checkout runs the sources; the published package ships only the bundle (Deno strips no
  // types under node_modules).
  const source = join(root, 'worker', 'adapters', 'deno', 'deno-worker.ts');
  const fromSource = existsSync(source);
  const entry = fromSource ? source : join(root, 'dist', 'deno-worker.js');
  const audit = auditWritePaths(options.configFile);
  return [
    'run',
    '--quiet',
    '--no-prompt',
    ...DENO_WORKER_RUNTIME_FLAGS,
    '--allow-net',
    '--allow-env',
    // The audit file is read only for which file its path names (followed when it is moved).
    `--allow-read=${permissionList([options.configFile, ...audit, ...(options.stateDir !== undefined ? [options.stateDir] : [])])}`,
    ...writePermission([...audit, ...(options.stateDir !== undefined ? [options.stateDir] : [])]),
    ...(fromSource ? [`--config=${join(root, 'deno.json')}`] : ['--no-config']),
    entry,
  ];
}

/**
 * Starts Deno and returns at once, so the caller can take over its stop (signal handlers) before
 * it listens: a signal in between would otherwise end this process and leave Deno running.
 *
 * Deno's stdin is a pipe this process holds and never writes to (`SWITCHYARD_STOP_ON_STDIN_END`):
 * when this process is gone, however it went, Deno stops itself.
 *
 * @throws Whatever the spawn throws (`spawnMasked`).
 */
export function spawnDenoWorker(options: DenoWorkerOptions): DenoWorkerProcess {
  const root = packageRoot();
  const args = denoWorkerArgs(options, root);
  // Masked: a descriptor this process inherited (a shell's stray pipe) must not stay open in Deno for the worker's life.
  const binary = denoBinaryPath();
  const child = spawnMasked(binary, args, {
    cwd: root,
    env: {
      ...process.env,
      ...options.env,
      // The config is the file named here: an inline one in this process's environment is not this worker's.
      SWITCHYARD_WORKER_CONFIG: '',
      SWITCHYARD_WORKER_CONFIG_FILE: options.configFile,
      ...(options.stateDir !== undefined ? { SWITCHYARD_STATE_DIR: options.stateDir } : {}),
      SWITCHYARD_STOP_ON_STDIN_END: '1',
      HOST: options.host ?? '127.0.0.1',
      PORT: String(options.port ?? 8787),
      NO_COLOR: '1',
    },
    stdio: ['pipe', 'pipe', options.stderr ?? 'inherit'],
  });
  // Nothing is ever written; the pipe must not keep this process running by itself.
  (child.stdin as Socket | null)?.unref();
  // A binary that cannot run (missing, not executable, another machine's) fails the spawn itself:
  // an 'error' event, unhandled a crash with a stack trace, and maybe no 'exit'.
  let spawnFailure: string | undefined;
  const exited = new Promise<number>((resolve) => {
    // A signal's exit as a shell reports it: 128 + its number (SIGKILL: 137).
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1)));
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return;
      spawnFailure = `Cannot start Deno (${binary}): ${error.code ?? error.message}: run "npm install", or set SWITCHYARD_DENO to a Deno binary this machine runs`;
      resolve(127);
    });
  });
  let stopAsked = false;
  const end = async (graceMs: number): Promise<number> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    }
    return exited;
  };
  const listening = new Promise<string>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      // A stop already asked ends Deno itself, and leaves `listening` unsettled (see above).
      if (stopAsked) return;
      void end(0);
      reject(new LocalError('worker-start-timeout', 'The worker did not start listening in time: see its log above'));
    }, options.startTimeoutMs ?? 30_000);
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          const event = JSON.parse(line) as { event?: string; url?: string };
          if (event.event === 'listening' && typeof event.url === 'string') {
            clearTimeout(timer);
            child.stdout!.off('data', onData);
            child.stdout!.resume();
            resolve(event.url);
            return;
          }
        } catch {
          process.stdout.write(line + '\n');
        }
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      if (spawnFailure !== undefined) reject(new LocalError('deno-not-started', spawnFailure));
      else if (!stopAsked) reject(new LocalError('worker-exited', `The worker exited with code ${code} before listening: see its log above`));
    });
  });
  const stop = (graceMs = 5_000): Promise<number> => {
    stopAsked = true;
    return end(graceMs);
  };
  return { child, listening, exited, stop };
}

/** {@link spawnDenoWorker}, then waits until it listens. */
export async function startDenoWorker(options: DenoWorkerOptions): Promise<DenoWorkerProcess & { url: string }> {
  const worker = spawnDenoWorker(options);
  return { ...worker, url: await worker.listening };
}

/** `--allow-write` for the audit file the worker config names (resolved as the worker resolves it), if any. */
function auditWritePaths(configFile: string): string[] {
  let file: unknown;
  try {
    file = (JSON.parse(readFileSync(configFile, 'utf8')) as { audit?: { file?: unknown } }).audit?.file;
  } catch {
    return []; // the worker reports an unreadable or invalid config itself
  }
  if (typeof file !== 'string' || file === '') return [];
  const path = resolve(dirname(configFile), file);
  // Said as the config's problem, where permissionList could name only the path (review s22).
  if (path.includes(',')) throw new LocalError('invalid-config', `${configFile}: audit.file: "${path}" holds a comma, which Deno's permission flags split on: rename it or move it (or run the worker with --runtime node)`);
  return [path];
}

/** One `--allow-write` naming every path the worker may write (the audit file, the state dir), or none. */
function writePermission(paths: readonly string[]): string[] {
  return paths.length === 0 ? [] : [`--allow-write=${permissionList(paths)}`];
}

/**
 * Paths as one Deno permission list. Deno splits the list at every comma, so a path holding one
 * would grant what lies before and after it instead (`audit.log,/tmp` grants `/tmp`): refused.
 */
export function permissionList(paths: readonly string[]): string {
  const comma = paths.find((path) => path.includes(','));
  if (comma !== undefined) throw new Error(`Cannot give the worker access to a path holding a comma, which Deno's permission flags split on: ${comma}; rename it or move it`);
  return paths.join(',');
}
