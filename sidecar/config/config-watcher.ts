/**
 * Watches config files under Node and says when to reload: on a change of a `.json` file in the
 * watched folder (recursively for a sidecar config dir) or on SIGHUP, the operator's explicit
 * "reload now" that works where file events do not (network file systems, some editors). Events
 * of one save come in a burst, so `onChange` runs once the burst has settled. What a reload does
 * is the caller's (`cli/sidecar-reload.ts`, `cli/worker-config-watch.ts`).
 *
 * @module
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename } from 'node:path';
import type { Logger } from '../log.ts';

const SETTLE_MS = 50;

export interface ConfigWatchOptions {
  /** The folder to watch. */
  dir: string;
  recursive: boolean;
  /** Only changes of this file name count (a worker config's folder holds other files); any `.json` otherwise. */
  file?: string;
  onChange(trigger: 'file' | 'SIGHUP'): void;
  log: Logger;
}

export interface ConfigWatch {
  close(): void;
}

export function watchConfig(options: ConfigWatchOptions): ConfigWatch {
  let timer: NodeJS.Timeout | undefined;
  const soon = (trigger: 'file' | 'SIGHUP') => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      options.onChange(trigger);
    }, SETTLE_MS);
  };
  const onHup = () => soon('SIGHUP');
  process.on('SIGHUP', onHup);
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(options.dir, { recursive: options.recursive, persistent: false }, (_event, name) => {
      const changed = name === null ? null : basename(name.toString());
      if (changed === null || (options.file !== undefined ? changed === options.file : changed.endsWith('.json'))) soon('file');
    });
    watcher.on('error', (error) => options.log.warn('Config no longer watched: reload it with SIGHUP', { dir: options.dir, error }));
  } catch (error) {
    options.log.warn('Config not watched: reload it with SIGHUP', { dir: options.dir, error });
  }
  return {
    close() {
      if (timer !== undefined) clearTimeout(timer);
      process.off('SIGHUP', onHup);
      watcher?.close();
    },
  };
}
