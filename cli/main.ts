#!/usr/bin/env node
/**
 * The `switchyard` command. Each subcommand lives in its own file; this one only dispatches and
 * prints help. The workstation's commands come from `workstation-commands.ts`, shared with
 * `dist/sidecar.js`. Errors print one line (`switchyard: …`) and exit 1; stack traces only with
 * SWITCHYARD_DEBUG=1.
 *
 * @module
 */
import { describeError, runAsProcess } from './describe-error.ts';
import { HELP, printHelp as help } from './help.ts';
import { runWorkstationCommand } from './workstation-commands.ts';
import { FULL_CLI } from './program.ts';
import { VERSION } from './version.ts';

export { describeError, runAsProcess };

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const wantsHelp = rest.includes('--help') || rest.includes('-h');
  switch (command) {
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(HELP.main + '\n');
      return command === undefined ? 1 : 0;
    case '--version':
    case 'version':
      process.stdout.write(`switchyard ${VERSION}\n`);
      return 0;
    case 'start': {
      if (wantsHelp) return help('start');
      const { runStart } = await import('./start.ts');
      return runStart(rest);
    }
    case 'worker': {
      if (wantsHelp) return help('worker');
      const { runWorkerCommand } = await import('./worker-command.ts');
      return runWorkerCommand(rest);
    }
    case 'check': {
      if (wantsHelp) return help('check');
      const { runCheck } = await import('./check.ts');
      return runCheck(rest);
    }
    case 'agent': {
      if (wantsHelp) return help('agent');
      const { runAgentCommand } = await import('./agent-command.ts');
      return runAgentCommand(rest);
    }
    case 'admin-token': {
      if (wantsHelp) return help('admin-token');
      const { runAdminTokenCommand } = await import('./admin-token-command.ts');
      return runAdminTokenCommand(rest);
    }
    case 'host': {
      if (wantsHelp || rest[0] !== 'add') return help('host');
      const { runHostAddCommand } = await import('./host-add.ts');
      return runHostAddCommand(rest.slice(1));
    }
    default: {
      const code = await runWorkstationCommand(command, rest, { deno: true, program: FULL_CLI });
      if (code !== undefined) return code;
      process.stderr.write(`switchyard: unknown command "${command}"\n\n${HELP.main}\n`);
      return 1;
    }
  }
}

if (process.argv[1] !== undefined && /(?:cli[/\\]main\.ts|switchyard\.js)$/.test(process.argv[1])) runAsProcess(main);
