/**
 * A snapshot of the sidecar config dir: the text of every file the host reads to launch a server
 * (`sidecar.json`, each `mcp-servers/mcp.json` layer, `trust-profiles/*.json`), taken when the
 * dir was last accepted. Once `switchyard check` refuses what is on disk, a live sidecar reads
 * through it instead of the disk, so a refused edit is never used: the old files stay in force
 * until a valid set replaces them (`cli/sidecar-reload.ts`).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { followedEntries } from './followed-entries.ts';

/** Reads one config file's text; rejects with an `ENOENT`-coded error for a file not there. */
export type ReadConfigText = (path: string) => Promise<string>;

/** The files of `dir` the host reads, whether they exist or not; symlinked folders and files included. */
export function configDirFiles(dir: string): string[] {
  const files = [join(dir, 'sidecar.json'), join(dir, 'mcp-servers', 'mcp.json')];
  for (const group of ['users', 'machines']) for (const name of followedEntries(join(dir, group)).dirs) files.push(join(dir, group, name, 'mcp-servers', 'mcp.json'));
  for (const name of followedEntries(join(dir, 'trust-profiles')).files) if (name.endsWith('.json')) files.push(join(dir, 'trust-profiles', name));
  return files;
}

export class ConfigSnapshot {
  private constructor(readonly texts: ReadonlyMap<string, string>) {}

  /** Reads every config file of `dir` now. */
  static take(dir: string): ConfigSnapshot {
    const texts = new Map<string, string>();
    for (const file of configDirFiles(dir)) {
      try {
        texts.set(file, readFileSync(file, 'utf8'));
      } catch {
        // absent: the snapshot has no such file either
      }
    }
    return new ConfigSnapshot(texts);
  }

  /** Whether `other` holds exactly the same files with the same texts. */
  equals(other: ConfigSnapshot): boolean {
    if (other.texts.size !== this.texts.size) return false;
    for (const [file, text] of this.texts) if (other.texts.get(file) !== text) return false;
    return true;
  }

  readonly read: ReadConfigText = async (path) => {
    const text = this.texts.get(path);
    if (text === undefined) throw Object.assign(new Error(`No such config file in the accepted snapshot: ${path}`), { code: 'ENOENT' });
    return text;
  };
}
