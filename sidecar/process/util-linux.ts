/**
 * Where the sidecar finds util-linux's small tools (`prlimit`, `setpriv`): on `PATH`, on Linux
 * only, where no server can have put them (`host-tool.ts`: each runs outside any sandbox, around
 * every launch). `switchyard doctor` asks the same, so the two never disagree.
 *
 * @module
 */
import { findHostTool } from './host-tool.ts';

/** Where util-linux's `name` is in a trusted absolute `PATH` entry, or null (not Linux, util-linux absent, or only where a server could have put it). */
export function findUtilLinuxTool(name: string, env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): string | null {
  if (platform !== 'linux') return null;
  return findHostTool(name, env.PATH ?? '/usr/bin:/bin').path;
}
