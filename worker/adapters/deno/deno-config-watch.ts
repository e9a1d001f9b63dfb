/**
 * Live config under Deno: the worker config file is watched (`Deno.watchFs`) and re-read on
 * SIGHUP, and each change goes through `createConfigReloader` (validated, then put in force or
 * refused with the old config kept). The file itself is watched, not its folder, so the worker
 * needs read access to nothing more than it had; an editor that replaces the file (write to a
 * temporary, rename over) ends that watch, so it is armed again after every event.
 *
 * @module
 */
import type { ComposedWorker } from '../../compose.ts';
import { createConfigReloader } from '../../config/config-reloader.ts';
import type { WorkerLogger } from '../../log.ts';

interface DenoWatch {
  watchFs(path: string): AsyncIterable<{ kind: string }> & { close(): void };
  addSignalListener(signal: 'SIGHUP', handler: () => void): void;
  readTextFile(path: string): Promise<string>;
  errors: { NotFound: new (...args: never[]) => Error };
}

const deno = (globalThis as unknown as { Deno: DenoWatch }).Deno;
/** Events of one save come in a burst; the reload waits for it to settle. */
const SETTLE_MS = 50;
/** How often a missing file is looked for again (every SETTLE_MS) before the watch slows down. */
const REARM_TRIES = 40;
/** How often a file missing for longer is looked for: a deploy may take its time writing it again. */
const MISSING_POLL_MS = 1_000;

/** `auditFileProblem`: as `createConfigReloader` takes it, from the entry, which knows how a start resolves and opens the file. */
export function watchDenoWorkerConfig(worker: ComposedWorker, file: string, initialText: string, log: WorkerLogger, auditFileProblem?: (file: string) => string | undefined): void {
  const reload = createConfigReloader({ file, readText: () => deno.readTextFile(file), runtime: 'edge', initialText, target: worker, log, ...(auditFileProblem !== undefined ? { auditFileProblem } : {}) });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const soon = (trigger: string) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void reload(trigger).catch((error: unknown) => log.error('Worker config reload failed', { file, error }));
    }, SETTLE_MS);
  };
  deno.addSignalListener('SIGHUP', () => soon('SIGHUP'));
  const watch = async (): Promise<void> => {
    for (let attempt = 0, replaced = false; ; ) {
      let watcher: ReturnType<DenoWatch['watchFs']>;
      try {
        watcher = deno.watchFs(file);
      } catch (error) {
        // Past a missing file (no permission, the system's watch limit) another try does no good.
        if (!(error instanceof deno.errors.NotFound)) {
          log.warn('Worker config not watched: reload it with SIGHUP', { file, error });
          return;
        }
        // Between an editor's delete and its write the file may be missing for a moment; a
        // deploy that removes it and writes it again later, for longer.
        if (++attempt === REARM_TRIES) log.warn('Worker config file missing: looking for it every second, the config in force stays', { file });
        await new Promise((resolve) => setTimeout(resolve, attempt < REARM_TRIES ? SETTLE_MS : MISSING_POLL_MS));
        continue;
      }
      // The new file was written before this watch saw it: read it now (the same text is no change).
      if (replaced) soon('file');
      attempt = 0;
      for await (const event of watcher) {
        soon('file');
        if (event.kind === 'remove' || event.kind === 'rename') break;
      }
      watcher.close();
      replaced = true;
      // The file was replaced: watch the new one once it is there.
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
  };
  void watch();
}
