/**
 * The commands a workstation runs (`sidecar`, `sidecar init`, `sidecar host-entry`, `sidecar
 * profiles`, `doctor`), in one place for both entries: the full `switchyard` bin (`main.ts`) and
 * the workstation's `dist/sidecar.js` (`sidecar-main.ts`), so the two cannot drift apart.
 *
 * @module
 */
import { printHelp } from './help.ts';
import type { Program } from './program.ts';

export interface WorkstationOptions {
  /** Whether `doctor` checks for Deno: a workstation runs no worker, so `sidecar.js` says no. */
  deno: boolean;
  /** The program running: its hints name only commands it has, started as it was. */
  program: Program;
}

/** Runs a workstation command; `undefined` when `command` is not one. */
export async function runWorkstationCommand(command: string, rest: string[], options: WorkstationOptions): Promise<number | undefined> {
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  if (command === 'doctor') {
    if (wantsHelp) return printHelp('doctor');
    const { runDoctorCommand } = await import('./doctor-command.ts');
    return runDoctorCommand(rest, options);
  }
  if (command !== 'sidecar') return undefined;
  if (rest[0] === 'init') {
    if (wantsHelp) return printHelp('init');
    const { runInitCommand } = await import('./sidecar-init.ts');
    return runInitCommand(rest.slice(1), options.program);
  }
  if (rest[0] === 'host-entry') {
    if (wantsHelp) return printHelp('host-entry');
    const { runHostEntryCommand } = await import('./host-entry-command.ts');
    return runHostEntryCommand(rest.slice(1), options.program);
  }
  if (rest[0] === 'profiles') {
    if (wantsHelp) return printHelp('profiles');
    const { runProfilesCommand } = await import('./sidecar-command.ts');
    return runProfilesCommand(rest.slice(1), options.program);
  }
  if (wantsHelp) return printHelp('sidecar');
  const { runSidecarCommand } = await import('./sidecar-command.ts');
  return runSidecarCommand(rest, options.program);
}
