/**
 * The worker as users run it: under the real Deno binary through the production launcher
 * (`cli/deno-worker-process.ts`, the one `switchyard worker` and `switchyard start` use), with
 * its config written to a file, owned by a `ProcessSet`, and both of its streams read as line
 * logs.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDenoWorker } from '../../cli/deno-worker-process.ts';
import { writeWorkerConfig } from './configs.ts';
import { watch, type ProcessSet, type WatchedProcess } from './processes.ts';

export interface WorkerProcess extends WatchedProcess {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  configFile: string;
  /** `Date.now()` when the launcher saw the worker listening (its stdout line is read there, not here). */
  listeningAt: number;
}

export interface WorkerProcessOptions {
  /** Where `worker.json` goes; a scratch dir removed when `procs` stops otherwise. */
  dir?: string;
  /** 0 (a free port) by default. */
  port?: number;
  logLevel?: 'debug' | 'info' | 'warn';
  env?: Record<string, string>;
  /** The worker's state dir (the built-in OAuth server's file); Deno may write only there. */
  stateDir?: string;
}

/** Writes `config` and starts the worker under Deno; resolves once it listens. */
export async function startWorkerProcess(procs: ProcessSet, config: unknown, options: WorkerProcessOptions = {}): Promise<WorkerProcess> {
  let dir = options.dir;
  if (dir === undefined) {
    const scratch = mkdtempSync(join(tmpdir(), 'switchyard-worker-'));
    procs.afterStop(() => rmSync(scratch, { recursive: true, force: true }));
    dir = scratch;
  }
  const configFile = writeWorkerConfig(dir, config);
  return startWorkerProcessFromFile(procs, configFile, options);
}

/** The same, with a config file already written (a restart on the same port reads it again). */
export async function startWorkerProcessFromFile(procs: ProcessSet, configFile: string, options: WorkerProcessOptions = {}): Promise<WorkerProcess> {
  const deno = await startDenoWorker({
    configFile,
    port: options.port ?? 0,
    stderr: 'pipe',
    ...(options.stateDir !== undefined ? { stateDir: options.stateDir } : {}),
    env: { SWITCHYARD_LOG_LEVEL: options.logLevel ?? 'info', ...options.env },
  });
  const listeningAt = Date.now();
  const watched = watch(procs.adopt(deno.child));
  return { ...watched, url: deno.url, port: Number(new URL(deno.url).port), configFile, listeningAt };
}
