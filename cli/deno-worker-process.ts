/**
 * Runs the worker under the real Deno binary as a child process and waits until it listens.
 * Shared by `switchyard worker` and `switchyard start`; Deno gets only the permissions the worker
 * needs: network, environment, reading its config file and sources, and its state dir when given.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { LocalError } from '../shared/errors.ts';
import { spawnMasked } from '../sidecar/process/masked-spawn.ts';
import { denoBinaryPath, packageRoot } from './deno-binary.ts';

export interface DenoWorkerProcess {
  url: string;
  child: ChildProcess;
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

export function startDenoWorker(options: DenoWorkerOptions): Promise<DenoWorkerProcess> {
  const root = packageRoot();
  // A checkout runs the sources; the published package ships only the bundle (Deno strips no
  // types under node_modules).
  const source = join(root, 'worker', 'adapters', 'deno', 'deno-worker.ts');
  const fromSource = existsSync(source);
  const entry = fromSource ? source : join(root, 'dist', 'deno-worker.js');
  const args = [
    'run',
    '--quiet',
    '--no-prompt',
    '--allow-net',
    '--allow-env',
    `--allow-read=${[root, options.configFile, ...(options.stateDir !== undefined ? [options.stateDir] : [])].join(',')}`,
    ...writePermission([...auditWritePaths(options.configFile), ...(options.stateDir !== undefined ? [options.stateDir] : [])]),
    ...(fromSource ? [`--config=${join(root, 'deno.json')}`] : ['--no-config']),
    entry,
  ];
  let child: ChildProcess;
  try {
    // Masked: a descriptor this process inherited (a shell's stray pipe) must not stay open in Deno for the worker's life.
    child = spawnMasked(denoBinaryPath(), args, {
      cwd: root,
      env: {
        ...process.env,
        ...options.env,
        SWITCHYARD_WORKER_CONFIG_FILE: options.configFile,
        ...(options.stateDir !== undefined ? { SWITCHYARD_STATE_DIR: options.stateDir } : {}),
        HOST: options.host ?? '127.0.0.1',
        PORT: String(options.port ?? 8787),
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', options.stderr ?? 'inherit'],
    });
  } catch (error) {
    return Promise.reject(error);
  }
  const exited = new Promise<number>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  const stop = async (graceMs = 5_000): Promise<number> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    }
    return exited;
  };
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      void stop(0);
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
            resolve({ url: event.url, child, exited, stop });
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
      reject(new LocalError('worker-exited', `The worker exited with code ${code} before listening: see its log above`));
    });
  });
}

/** `--allow-write` for the audit file the worker config names (resolved as the worker resolves it), if any. */
function auditWritePaths(configFile: string): string[] {
  let file: unknown;
  try {
    file = (JSON.parse(readFileSync(configFile, 'utf8')) as { audit?: { file?: unknown } }).audit?.file;
  } catch {
    return []; // the worker reports an unreadable or invalid config itself
  }
  return typeof file === 'string' && file !== '' ? [resolve(dirname(configFile), file)] : [];
}

/** One `--allow-write` naming every path the worker may write (the audit file, the state dir), or none. */
function writePermission(paths: readonly string[]): string[] {
  return paths.length === 0 ? [] : [`--allow-write=${paths.join(',')}`];
}
