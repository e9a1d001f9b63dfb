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
import { LocalError } from '../../shared/errors.ts';
import { fileReadProblem } from '../../shared/file-read-problem.ts';
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
  /** The worker: the config in force, and how a new one is put in force (`ComposedWorker`). */
  target: { readonly config: WorkerConfig; reload(next: WorkerConfig): Promise<{ endedSessions: number }> };
  log: WorkerLogger;
  /**
   * Why the next start could not open this `audit.file` (`shared/audit/audit-file-problem.ts`, resolved as the
   * start resolves it), asked when a reload changes it: the file is opened only at a start, so a
   * reload that took it would leave a worker that no longer starts.
   */
  auditFileProblem?: (file: string) => string | undefined;
}

/** Returns a function that performs one reload; calls never overlap (a call during one waits for it). */
export function createConfigReloader(options: ConfigReloaderOptions): (trigger: string) => Promise<ReloadOutcome> {
  let lastText = options.initialText;
  /** Whether the last outcome was a refusal, so the config in force and the file differ. */
  let refusedSince = false;
  let queue: Promise<unknown> = Promise.resolve();
  /** The text last refused and why: one save may come as several file events, and is refused once. */
  let refusedText: { text: string; problems: readonly string[] } | undefined;
  const once = async (trigger: string): Promise<ReloadOutcome> => {
    const { file, log } = options;
    let text: string;
    try {
      text = await options.readText();
    } catch (error) {
      return refuse(trigger, [`(root): cannot read "${file}": ${fileReadProblem(error)}`]);
    }
    if (text === lastText) {
      // After a refusal, the file put back as it was is news: the last line said the file was refused.
      if (refusedSince) log.info('Worker config file matches the config in force again', { file, trigger });
      // A file event with no change is an editor's touch; a SIGHUP is an operator asking, who is owed an answer.
      else if (trigger === 'SIGHUP') log.info('Worker config unchanged: nothing to reload', { file, trigger });
      refusedSince = false;
      refusedText = undefined;
      return { kind: 'unchanged' };
    }
    if (text === refusedText?.text && trigger !== 'SIGHUP') return { kind: 'refused', problems: refusedText.problems };
    let next: WorkerConfig;
    try {
      next = parseWorkerConfigText(text, { runtime: options.runtime });
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      return refuse(trigger, error.issues.map(formatIssue), text);
    }
    const auditFile = next.audit?.file;
    if (auditFile !== undefined && options.auditFileProblem !== undefined && auditFile !== options.target.config.audit?.file) {
      const problem = options.auditFileProblem(auditFile);
      if (problem !== undefined) return refuse(trigger, [`audit.file: ${problem}`], text);
    }
    let endedSessions: number;
    try {
      ({ endedSessions } = await options.target.reload(next));
    } catch (error) {
      // A valid config this worker cannot run (`oauth.built-in` added to one started without a
      // state dir): refused whole, like an invalid one, and the next edit is read again. Its
      // message names the key it is about, as a problem line does.
      if (!(error instanceof LocalError && error.code === 'invalid-config')) throw error;
      return refuse(trigger, [error.message], text);
    }
    lastText = text;
    refusedText = undefined;
    refusedSince = false;
    log.info('Worker config reloaded', { file, trigger, endedSessions });
    return { kind: 'reloaded', endedSessions };
  };
  const refuse = (trigger: string, problems: string[], text?: string): ReloadOutcome => {
    refusedSince = true;
    refusedText = text === undefined ? undefined : { text, problems };
    options.log.error('Worker config refused: the config in force stays', { file: options.file, trigger, problems });
    return { kind: 'refused', problems };
  };
  return (trigger) => {
    const run = queue.then(() => once(trigger));
    queue = run.catch(() => {});
    return run;
  };
}
