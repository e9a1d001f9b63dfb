/**
 * The folders and files of a config folder, symlinks followed: a config dir kept by GNU stow or
 * Nix home-manager is symlinks, to folders (`users/alice`) or files (`trust-profiles/*.json`), and
 * the host reads through them as through any path. A link that leads nowhere (dangling, a loop,
 * a folder it may not enter) is neither, as an entry that is neither a file nor a folder is.
 *
 * @module
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface FollowedEntries {
  dirs: string[];
  files: string[];
}

/** `dir`'s entries by what they are, or point to; names sorted; none when `dir` cannot be read. */
export function followedEntries(dir: string): FollowedEntries {
  const found: FollowedEntries = { dirs: [], files: [] };
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return found;
  }
  for (const entry of entries) {
    const target = entry.isSymbolicLink() ? followed(join(dir, entry.name)) : entry;
    if (target?.isDirectory()) found.dirs.push(entry.name);
    else if (target?.isFile()) found.files.push(entry.name);
  }
  found.dirs.sort();
  found.files.sort();
  return found;
}

/** What a link points to, or undefined when it cannot be followed. */
function followed(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
