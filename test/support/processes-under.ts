/**
 * The processes a walkthrough left behind: those whose command line or working directory is
 * inside a folder it made. For tests that run commands as a user would (the README's), where no
 * handle to each process exists.
 *
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Live (non-zombie) processes whose command line or working directory is inside `dir`. */
export function processesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (/^\d+ \(.*\) Z /.test(stat)) continue;
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // a process that exited meanwhile
      }
      if (cmd.includes(dir) || cwd.startsWith(dir)) found.push(`${pid}: ${cmd.slice(0, 160)}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}
