/**
 * The program a hint is printed by, so that a hint names only what the user can run with it: the
 * full `switchyard` bin, or the workstation's single file `sidecar.js` (`sidecar-main.ts`), run
 * with node, which carries the workstation's commands only and so has no `check`.
 *
 * @module
 */

export interface Program {
  /** How a command line starts: `switchyard`, or `node /path/to/sidecar.js`. */
  readonly run: string;
  /** Whether it has `switchyard check` (sidecar.js does not). */
  readonly check: boolean;
}

/** The full bin, every command. */
export const FULL_CLI: Program = { run: 'switchyard', check: true };

/** A path as one shell word. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./~-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The workstation's sidecar.js, named by the path it was started from (`sidecar.js` when that is not known). */
export function workstationProgram(script: string | undefined = process.argv[1]): Program {
  return { run: `node ${shellWord(script !== undefined && /sidecar\.js$/.test(script) ? script : 'sidecar.js')}`, check: false };
}
