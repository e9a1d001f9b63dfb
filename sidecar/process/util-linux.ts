/**
 * Where the sidecar finds util-linux's small tools (`prlimit`, `setpriv`): on `PATH`, on Linux only.
 * `switchyard doctor` asks the same, so the two never disagree.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where util-linux's `name` is on `PATH`, or null (not Linux, or util-linux absent). */
export function findUtilLinuxTool(name: string, env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  if (platform !== 'linux') return null;
  for (const dir of (env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

