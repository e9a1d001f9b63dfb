import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes, in `dir`, a `setpriv` that answers as util-linux before 2.33 (RHEL 8's 2.32) or
 * BusyBox's does: it has no `--pdeathsig`. Such a host cannot be had here; its answer can.
 */
export function oldSetpriv(dir: string): string {
  const file = join(dir, 'setpriv');
  writeFileSync(file, `#!/bin/sh\necho "setpriv: unrecognized option '--pdeathsig'" >&2\nexit 1\n`);
  chmodSync(file, 0o755);
  return file;
}
