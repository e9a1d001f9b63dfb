/**
 * Live config of the worker under Node (`switchyard worker --runtime node`): the config file is
 * watched (its folder, for editors that replace the file) and re-read on SIGHUP, each change
 * validated and put in force or refused by the same reloader the Deno entry uses
 * (`worker/config/config-reloader.ts`). Under Deno the worker watches its file itself
 * (`worker/adapters/deno/deno-config-watch.ts`) and `switchyard worker` passes SIGHUP on to it.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import type { ComposedWorker } from '../worker/compose.ts';
import { createConfigReloader } from '../worker/config/config-reloader.ts';
import { auditFileProblem } from '../shared/audit/audit-file-problem.ts';
import { nodePathKind } from './check-audit-file.ts';
import { watchConfig, type ConfigWatch } from '../sidecar/config/config-watcher.ts';
import type { Logger } from '../sidecar/log.ts';

export function watchWorkerConfigFile(file: string, initialText: string, worker: ComposedWorker, log: Logger): ConfigWatch {
  const reload = createConfigReloader({
    file, readText: () => readFile(file, 'utf8'), runtime: 'node', initialText, target: worker, log,
    auditFileProblem: (auditFile) => auditFileProblem(resolve(dirname(file), auditFile), nodePathKind),
  });
  return watchConfig({
    dir: dirname(file),
    recursive: false,
    file: basename(file),
    onChange: (trigger) => void reload(trigger).catch((error: unknown) => log.error('Worker config reload failed', { file, error })),
    log,
  });
}
