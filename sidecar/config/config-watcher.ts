/**
 * Watches config files under Node and says when to reload: on a change of a `.json` file in the
 * watched folder (and, for a sidecar config dir, in its folders: `mcp-servers/`,
 * `trust-profiles/`) or on SIGHUP, the operator's explicit "reload now" that works where file
 * events do not (network file systems). Events of one save come in a burst, so `onChange` runs once
 * the burst has settled. What a reload does is the caller's (`cli/sidecar-reload.ts`,
 * `cli/worker-config-watch.ts`).
 *
 * Each folder is watched on its own, never with `recursive: true`: Node 20 builds a recursive watch
 * on Linux from one watch per file, and a save that replaces a file (vim, `sed -i`, most editors'
 * atomic save) leaves the new file unwatched, so every later edit of it went unseen. A folder's
 * own watch reports whatever lands in it under any inode. Folders that appear later are watched as
 * they come.
 *
 * @module
 */
import { readdirSync, watch, type FSWatcher } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../log.ts';

const SETTLE_MS = 50;
/** How deep below `dir` folders are watched: a sidecar config dir nests one level. */
const MAX_DEPTH = 2;

export interface ConfigWatchOptions {
  /** The folder to watch. */
  dir: string;
  /** Its folders too, to {@link MAX_DEPTH}. */
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
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  const arm = (dir: string, depth: number) => {
    if (closed || watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => {
        const changed = name === null ? null : basename(name.toString());
        if (changed === null || (options.file !== undefined ? changed === options.file : changed.endsWith('.json'))) soon('file');
        // A folder made (or put back) since: watch it too.
        if (options.recursive && depth < MAX_DEPTH) armFolders(dir, depth);
      });
    } catch (error) {
      if (dir === options.dir) options.log.warn('Config not watched: reload it with SIGHUP', { dir, error });
      return;
    }
    watcher.on('error', (error) => {
      watcher.close();
      watchers.delete(dir);
      if (dir === options.dir) options.log.warn('Config no longer watched: reload it with SIGHUP', { dir, error });
      else soon('file'); // the folder went: what it held is gone from the config
    });
    watchers.set(dir, watcher);
    // A folder that came after the start may hold files already, written before its watch.
    if (started) soon('file');
    if (options.recursive && depth < MAX_DEPTH) armFolders(dir, depth);
  };
  const armFolders = (dir: string, depth: number) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) if (entry.isDirectory()) arm(join(dir, entry.name), depth + 1);
  };
  let started = false;
  arm(options.dir, 0);
  started = true;

  return {
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      process.off('SIGHUP', onHup);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
