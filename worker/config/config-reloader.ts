/**
 * One reload of the worker config, the same on every runtime: read the file, validate it as
 * `switchyard check` does, and either put it in force (`ComposedWorker.reload`) or refuse it and
 * keep the config in force. Each outcome is logged: `Worker config reloaded` (with the sessions
 * it ended) or, at error level, `Worker config refused` with every problem as `path: message`.
 * A file whose text did not change is left alone (editors and watchers report spurious events).
 *
 * The runtimes decide when to call it: the Deno entry on a file event or SIGHUP
 * (`adapters/deno/deno-config-watch.ts`), the Node CLI likewise (`cli/worker-config-watch.ts`).
 *
 * @module
 */
import { formatIssue, ValidationError } from '../../shared/validation.ts';
import type { WorkerLogger } from '../log.ts';
import { parseWorkerConfigText, type WorkerConfig, type WorkerRuntime } from './worker-config.ts';

export type ReloadOutcome =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'reloaded'; readonly endedSessions: number }
  | { readonly kind: 'refused'; readonly problems: readonly string[] };

export interface ConfigReloaderOptions {
  /** The config file, for logs. */
  file: string;
  readText: () => Promise<string>;
  runtime: WorkerRuntime;
  /** The text the running config was parsed from. */
  initialText?: string;
  target: { reload(next: WorkerConfig): Promise<{ endedSessions: number }> };
  log: WorkerLogger;
}

/** Returns a function that performs one reload; calls never overlap (a call during one waits for it). */
export function createConfigReloader(options: ConfigReloaderOptions): (trigger: string) => Promise<ReloadOutcome> {
  let lastText = options.initialText;
  let queue: Promise<unknown> = Promise.resolve();
  const once = async (trigger: string): Promise<ReloadOutcome> => {
    const { file, log } = options;
    let text: string;
    try {
      text = await options.readText();
    } catch (error) {
      const problems = [`(root): cannot read "${file}": ${(error as { code?: string }).code ?? (error as Error).name}`];
      log.error('Worker config refused: the config in force stays', { file, trigger, problems });
      return { kind: 'refused', problems };
    }
    if (text === lastText) {
      // A file event with no change is an editor's touch; a SIGHUP is an operator asking, who is owed an answer.
      if (trigger === 'SIGHUP') log.info('Worker config unchanged: nothing to reload', { file, trigger });
      return { kind: 'unchanged' };
    }
    let next: WorkerConfig;
    try {
      next = parseWorkerConfigText(text, { runtime: options.runtime });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      const problems = error.issues.map(formatIssue);
      log.error('Worker config refused: the config in force stays', { file, trigger, problems });
      return { kind: 'refused', problems };
    }
    lastText = text;
    const { endedSessions } = await options.target.reload(next);
    log.info('Worker config reloaded', { file, trigger, endedSessions });
    return { kind: 'reloaded', endedSessions };
  };
  return (trigger) => {
    const run = queue.then(() => once(trigger));
    queue = run.catch(() => {});
    return run;
  };
}
