/**
 * The workstation's entry, built into `dist/sidecar.js` (the one file a workstation installs):
 * `sidecar`, `sidecar init`, `sidecar profiles`, `doctor` (without the Deno check: a workstation runs no worker)
 * and help. It imports nothing of `worker/`, so the file carries no worker code; the build test
 * checks that with esbuild's metafile. The full `switchyard` bin (`main.ts`) has every command.
 *
 * @module
 */
import { runAsProcess } from './describe-error.ts';
import { HELP, printHelp } from './help.ts';

export { describeError } from './describe-error.ts';

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  switch (command) {
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(HELP.workstation + '\n');
      return command === undefined ? 1 : 0;
    case 'sidecar': {
      if (rest[0] === 'init') {
        if (wantsHelp) return printHelp('init');
        const { runInitCommand } = await import('./sidecar-init.ts');
        return runInitCommand(rest.slice(1));
      }
      if (rest[0] === 'profiles') {
        if (wantsHelp) return printHelp('profiles');
        const { runProfilesCommand } = await import('./sidecar-command.ts');
        return runProfilesCommand(rest.slice(1));
      }
      if (wantsHelp) return printHelp('sidecar');
      const { runSidecarCommand } = await import('./sidecar-command.ts');
      return runSidecarCommand(rest);
    }
    case 'doctor': {
      if (wantsHelp) return printHelp('doctor');
      const { runDoctorCommand } = await import('./doctor-command.ts');
      return runDoctorCommand(rest, { deno: false });
    }
    default:
      process.stderr.write(
        `switchyard: "${command}" is not part of the workstation's sidecar.js, which runs sidecar, sidecar init, sidecar profiles and doctor: run it with the full package (npx switchyard ${command})\n\n${HELP.workstation}\n`,
      );
      return 1;
  }
}

if (process.argv[1] !== undefined && /(?:cli[/\\]sidecar-main\.ts|sidecar\.js)$/.test(process.argv[1])) runAsProcess(main);
