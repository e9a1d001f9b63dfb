/**
 * Where the sidecar finds util-linux's small tools (`prlimit`, `setpriv`): on `PATH`, on Linux only.
 * `switchyard doctor` asks the same, so the two never disagree.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** Where util-linux's `name` is in an absolute `PATH` entry, or null (not Linux, or util-linux absent). */
export function findUtilLinuxTool(name: string, env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  if (platform !== 'linux') return null;
  for (const dir of (env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    // A relative entry would be resolved against each server's working directory at its spawn,
    // not the sidecar's: the tool run could be any file of that name the server's folder holds.
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

