/**
 * The workstation's entry, built into `dist/sidecar.js` (the one file a workstation installs):
 * `sidecar`, `sidecar init`, `sidecar profiles`, `doctor` (without the Deno check: a workstation
 * runs no worker) and help. It imports nothing of `worker/`, so the file carries no worker code;
 * the build test checks that with esbuild's metafile. The full `switchyard` bin (`main.ts`) has
 * every command.
 *
 * @module
 */
import { runAsProcess } from './describe-error.ts';
import { HELP } from './help.ts';
import { VERSION } from './version.ts';
import { runWorkstationCommand } from './workstation-commands.ts';
import { workstationProgram } from './program.ts';

export { describeError } from './describe-error.ts';

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(HELP.workstation + '\n');
    return command === undefined ? 1 : 0;
  }
  if (command === '--version' || command === 'version') {
    process.stdout.write(`switchyard sidecar.js ${VERSION}\n`);
    return 0;
  }
  const code = await runWorkstationCommand(command, rest, { deno: false, program: workstationProgram() });
  if (code !== undefined) return code;
  process.stderr.write(
    `switchyard: "${command}" is not part of the workstation's sidecar.js, which runs sidecar, sidecar init, sidecar host-entry, sidecar profiles and doctor: run it with the full package (npx switchyard-mcp ${command})\n\n${HELP.workstation}\n`,
  );
  return 1;
}

if (process.argv[1] !== undefined && /(?:cli[/\\]sidecar-main\.ts|sidecar\.js)$/.test(process.argv[1])) runAsProcess(main);
