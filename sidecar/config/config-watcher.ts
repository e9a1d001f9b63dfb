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
import { statSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from '../log.ts';
import { followedEntries } from './followed-entries.ts';

const SETTLE_MS = 50;
/** How deep below `dir` folders are watched: a sidecar config dir's deepest is `users/<user>/mcp-servers/`. */
const MAX_DEPTH = 3;

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
  /** Each watched folder's watch and the inode it was made on (a folder put back is another inode). */
  const watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  let closed = false;
  const unwatch = (dir: string) => {
    watchers.get(dir)?.watcher.close();
    watchers.delete(dir);
  };

  const arm = (dir: string, depth: number) => {
    if (closed || watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => {
        const changed = name === null ? null : basename(name.toString());
        if (changed === null || (options.file !== undefined ? changed === options.file : changed.endsWith('.json'))) soon('file');
        // A folder made, removed or put back since: watch what is there now (Node reports no
        // error on a watched folder's removal, so its watch would stay, deaf, otherwise).
        if (options.recursive && depth < MAX_DEPTH) recheck(dir, depth);
      });
    } catch (error) {
      if (dir === options.dir) options.log.warn('Config not watched: reload it with SIGHUP', { dir, error });
      return;
    }
    watcher.on('error', (error) => {
      unwatch(dir);
      if (dir === options.dir) options.log.warn('Config no longer watched: reload it with SIGHUP', { dir, error });
      else soon('file'); // the folder went: what it held is gone from the config
    });
    let ino = -1;
    try {
      ino = statSync(dir).ino;
    } catch {
      // Gone already: the next look at its parent drops it.
    }
    watchers.set(dir, { watcher, ino });
    // A folder that came after the start may hold files already, written before its watch.
    if (started) soon('file');
    if (options.recursive && depth < MAX_DEPTH) armFolders(dir, depth);
  };
  // A symlinked folder is watched through its link: the watch is on the folder it points to.
  const armFolders = (dir: string, depth: number) => {
    for (const name of followedEntries(dir).dirs) arm(join(dir, name), depth + 1);
  };
  /** The folders under `dir` as they are now: gone ones dropped (a reload), replaced ones watched anew. */
  const recheck = (dir: string, depth: number) => {
    for (const [watched, { ino }] of [...watchers]) {
      if (watched === dir || dirname(watched) !== dir) continue;
      let now: number | undefined;
      try {
        now = statSync(watched).ino;
      } catch {
        now = undefined;
      }
      if (now === ino) continue;
      for (const below of [...watchers.keys()]) if (below === watched || below.startsWith(`${watched}/`)) unwatch(below);
      soon('file');
    }
    armFolders(dir, depth);
  };
  let started = false;
  arm(options.dir, 0);
  started = true;

  return {
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      process.off('SIGHUP', onHup);
      for (const { watcher } of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
