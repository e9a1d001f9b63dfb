/**
 * A worker config as the editing commands (`host add`, `agent add`, `agent remove`) see it: the
 * file's own JSON, edited in place and written back only once the whole result validates with
 * the worker's own parser (`parseWorkerConfig`), atomically (`json-file.ts`). A file that does not
 * exist yet starts empty (`{"agents": [], "hosts": [], "servers": {}}`), so the first command
 * creates it.
 *
 * Validation takes the runtime the file already passes for: edge when it can, else node (the
 * single-machine mode), so an edit never refuses a config for a binding it did not touch.
 *
 * @module
 */
import { LocalError } from '../shared/errors.ts';
import { ValidationError } from '../shared/validation.ts';
import { parseWorkerConfig, type WorkerConfig, type WorkerRuntime } from '../worker/config/worker-config.ts';
import { formatJson, indentOf, readJson, writeFileAtomic } from './json-file.ts';

/**
 * Said after an edit is written: when the worker has it. Deno and Node watch the file; a worker
 * on Cloudflare Workers reads a secret, which only a new `secret put` changes. A config of the
 * single-machine mode (`node`: it binds servers to this machine) is one Workers refuses, so it is
 * not told to send it there.
 */
export function whenTheWorkerHasIt(runtime: WorkerRuntime): string {
  const here = 'A running worker on this file reads it at once (else start the worker with it)';
  return runtime === 'node' ? here : `${here}; on Cloudflare Workers, send it again: wrangler secret put SWITCHYARD_WORKER_CONFIG, minified (README: "The worker on Cloudflare Workers")`;
}

/** The raw shape the commands edit: what the file says, nothing filled in. */
export interface RawWorkerConfig {
  agents: Record<string, unknown>[];
  hosts?: Record<string, unknown>[];
  servers: Record<string, unknown>;
  [key: string]: unknown;
}

export interface WorkerConfigFile {
  readonly path: string;
  readonly created: boolean;
  readonly raw: RawWorkerConfig;
  /** The file as the worker parses it, before any edit. */
  readonly parsed: WorkerConfig;
  readonly runtime: WorkerRuntime;
  readonly indent: string;
}

function runtimeFor(raw: unknown): WorkerRuntime | ValidationError {
  try {
    parseWorkerConfig(raw, { runtime: 'edge' });
    return 'edge';
  } catch (edge) {
    try {
      parseWorkerConfig(raw, { runtime: 'node' });
      return 'node';
    } catch (node) {
      // Valid for neither: the problems of the runtime it is nearer to, so that a single-machine
      // config missing a key is not also told its local servers need that mode.
      if (!(edge instanceof ValidationError) || !(node instanceof ValidationError)) throw edge;
      return node.issues.length < edge.issues.length ? node : edge;
    }
  }
}

/** Reads and validates `path` (or starts an empty config); an invalid file is refused with its problems. */
export function openWorkerConfig(path: string): WorkerConfigFile {
  const read = readJson(path);
  const raw = (read.exists ? read.value : { agents: [], hosts: [], servers: {} }) as RawWorkerConfig;
  const runtime = runtimeFor(raw);
  if (runtime instanceof ValidationError) {
    throw new LocalError('invalid-config', `${path} is not a valid worker config, so it was left as it is: fix it first (switchyard check ${path}):\n${runtime.issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`);
  }
  return { path, created: !read.exists, raw, parsed: parseWorkerConfig(raw, { runtime }), runtime, indent: read.exists ? indentOf(read.text) : '  ' };
}

/** Validates the edited config as the worker will, then writes it; nothing is written when it is invalid. */
export function saveWorkerConfig(file: WorkerConfigFile, raw: RawWorkerConfig): WorkerConfig {
  let parsed: WorkerConfig;
  try {
    parsed = parseWorkerConfig(raw, { runtime: file.runtime });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new LocalError('invalid-config', `The edit would make ${file.path} invalid, so nothing was written:\n${error.issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`);
  }
  writeFileAtomic(file.path, formatJson(raw, file.indent), 0o600);
  return parsed;
}
